#include "common/fs_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "pypto/error.h"

namespace pypto {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InfraError("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InfraError("error while reading " + path.string());
  return std::move(buffer).str();
}

fs::path temp_sibling(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  return path.parent_path() / ("." + path.filename().string() + ".tmp." +
                               std::to_string(::getpid()) + "." + std::to_string(counter++));
}

namespace {

// The process's file-mode creation mask, read without changing it (umask(2) can
// only be read by setting it, which races with other threads creating files).
fs::perms creation_mask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0)
      return static_cast<fs::perms>(std::stoul(line.substr(6), nullptr, 8));
  return fs::perms::group_write | fs::perms::others_write;  // the usual 022
}

}  // namespace

void write_file_atomic(const fs::path& path, std::string_view data, fs::perms mode) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path tmp = temp_sibling(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw InfraError("cannot create " + tmp.string() + ": " + std::strerror(errno));
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw InfraError("cannot write " + path.string() + ": " + std::strerror(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  std::error_code ec;
  // As open(2) does: the user's umask takes bits away (umask 077 keeps outputs private).
  fs::permissions(tmp, mode & ~creation_mask(), ec);
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw InfraError("cannot move " + tmp.string() + " to " + path.string() + ": " + ec.message());
  }
}

std::string normal_path(std::string path) {
  if (path.empty()) return path;  // "no path" stays absent, not "."
  fs::path normal = fs::path(path).lexically_normal();
  if (normal.has_relative_path() && normal.filename().empty()) normal = normal.parent_path();
  return normal.empty() ? "." : normal.string();
}

std::string display_path(const fs::path& path, const fs::path& base) {
  std::error_code ec;
  auto rel = fs::relative(path, base, ec);
  if (ec || rel.empty() || *rel.begin() == "..") return path.string();
  return rel.string();
}

}  // namespace pypto
