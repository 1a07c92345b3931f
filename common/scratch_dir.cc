#include "common/scratch_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "pypto/error.h"

namespace pypto {

ScratchDir::ScratchDir(const std::string& prefix) {
  const char* tmpdir = ::getenv("TMPDIR");
  const fs::path parent = tmpdir && *tmpdir ? tmpdir : "/tmp";
  const std::string pattern = (parent / (prefix + "_XXXXXX")).string();
  std::string made = pattern;  // mkdtemp fills in the X's, also when it fails
  if (::mkdtemp(made.data()) == nullptr)
    throw InfraError("cannot create a scratch directory " + pattern + ": " + std::strerror(errno) +
                     "; set TMPDIR to a writable directory");
  path_ = made;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_symlink(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

}  // namespace pypto
