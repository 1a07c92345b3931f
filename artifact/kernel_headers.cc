#include "artifact/kernel_headers.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "common/module_path.h"
#include "pypto/error.h"

#ifndef PYPTO_SOURCE_INCLUDE_DIR
#define PYPTO_SOURCE_INCLUDE_DIR ""
#endif
#ifndef PYPTO_INSTALL_INCLUDE_SUBDIR
#define PYPTO_INSTALL_INCLUDE_SUBDIR "share/pypto/include"
#endif

namespace pypto {

namespace fs = std::filesystem;

namespace {
constexpr const char* kAbiHeader = "pypto/kernel_abi.h";

bool has_abi_header(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / kAbiHeader, ec);
}
}  // namespace

fs::path kernel_include_dir() {
  if (const char* env = std::getenv("PYPTO_INCLUDE_DIR"); env && *env) {
    std::error_code ec;
    fs::path dir = fs::absolute(env, ec).lexically_normal();
    if (!has_abi_header(dir))
      throw InfraError(std::string("PYPTO_INCLUDE_DIR=") + env + " does not contain " + kAbiHeader +
                       "; point it at the directory that holds " + kAbiHeader +
                       " (an installed share/pypto/include) or unset it");
    return dir;
  }

  std::vector<fs::path> looked;
  // An installed command (<prefix>/bin) or libpypto.so (<prefix>/lib) finds
  // the headers installed with it.
  if (const fs::path module = current_module(); !module.empty()) {
    fs::path installed = (install_prefix_of(module) / PYPTO_INSTALL_INCLUDE_SUBDIR).lexically_normal();
    if (has_abi_header(installed)) return installed;
    looked.push_back(installed);
  }
  fs::path source_tree = PYPTO_SOURCE_INCLUDE_DIR;
  if (has_abi_header(source_tree)) return source_tree;
  if (!source_tree.empty()) looked.push_back(source_tree);

  std::string where;
  for (const auto& dir : looked) where += (where.empty() ? "" : ", ") + dir.string();
  throw InfraError(std::string("cannot find the kernel ABI headers (") + kAbiHeader +
                   "); looked in " + (where.empty() ? "nowhere" : where) +
                   "; set PYPTO_INCLUDE_DIR to the directory that holds " + kAbiHeader);
}

}  // namespace pypto
