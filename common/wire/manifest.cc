#include "common/wire/manifest.h"

#include <algorithm>
#include <set>

#include "common/fs_util.h"
#include "common/hash.h"
#include "pypto/error.h"

namespace pypto::wire {

namespace {

// A NUL would cut the message short on a terminal; show it as '?'.
std::string printable(std::string_view path) {
  std::string shown(path);
  std::replace(shown.begin(), shown.end(), '\0', '?');
  return shown;
}

}  // namespace

std::optional<std::string> relative_path_problem(std::string_view path) {
  if (path.empty()) return "it is empty";
  if (path.find('\0') != std::string_view::npos) return "it contains a NUL byte";
  if (path.find('\\') != std::string_view::npos) {
    return "it contains a backslash (paths are '/'-separated)";
  }
  if (path.front() == '/') return "it is absolute";
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string_view part = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty()) return "it has an empty component";
    if (part == "..") return "it has a '..' component";
    if (part == ".") return "it has a '.' component";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::nullopt;
}

void validate_relative_path(std::string_view path) {
  if (auto problem = relative_path_problem(path)) {
    throw InfraError("refusing path '" + printable(path) + "': " + *problem +
                     "; shipped paths are relative to the rank workspace and stay inside it");
  }
}

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

void validate_manifest(const Manifest& manifest) {
  std::set<std::string_view> files;
  for (size_t i = 0; i < manifest.files.size(); ++i) {
    const ManifestFile& file = manifest.files[i];
    const std::string where =
        "manifest of rank " + std::to_string(manifest.rank) + ", files[" + std::to_string(i) + "]";
    if (auto problem = relative_path_problem(file.path)) {
      throw InfraError(where + ": refusing path '" + printable(file.path) + "': " + *problem);
    }
    if (!is_sha256_hex(file.sha256)) {
      throw InfraError(where + " ('" + file.path + "'): sha256 '" + file.sha256 +
                       "' is not 64 lowercase hex digits");
    }
    if (file.mode > 0777) {
      throw InfraError(where + " ('" + file.path + "'): mode " + std::to_string(file.mode) +
                       " has bits beyond 0777");
    }
    if (!files.insert(file.path).second) {
      throw InfraError(where + ": '" + file.path + "' is listed twice");
    }
  }
  // A path that is a file cannot also be a directory holding another listed path.
  for (std::string_view path : files) {
    for (size_t slash = path.find('/'); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
      if (files.count(path.substr(0, slash))) {
        throw InfraError("manifest of rank " + std::to_string(manifest.rank) + ": '" +
                         std::string(path.substr(0, slash)) + "' is listed as a file and as the " +
                         "directory of '" + std::string(path) + "'");
      }
    }
  }
}

namespace {

bool excluded(const std::string& rel, const std::vector<std::string>& exclude) {
  for (const std::string& prefix : exclude) {
    if (rel == prefix ||
        (rel.size() > prefix.size() && rel.compare(0, prefix.size(), prefix) == 0 &&
         rel[prefix.size()] == '/')) {
      return true;
    }
  }
  return false;
}

}  // namespace

Manifest build_manifest(const fs::path& dir, const std::vector<std::string>& exclude,
                        int32_t rank) {
  for (const std::string& prefix : exclude) validate_relative_path(prefix);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InfraError("cannot ship " + dir.string() + ": it is not a directory");
  }
  Manifest manifest;
  manifest.rank = rank;
  // Never follows a link: a link is reported, not walked into.
  fs::recursive_directory_iterator it(dir, ec);
  if (ec) throw InfraError("cannot list " + dir.string() + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw InfraError("cannot list " + dir.string() + ": " + ec.message());
    const fs::path& path = it->path();
    const std::string rel = path.lexically_relative(dir).generic_string();
    if (excluded(rel, exclude)) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    const fs::file_status status = it->symlink_status(ec);
    if (ec) throw InfraError("cannot stat " + path.string() + ": " + ec.message());
    if (fs::is_symlink(status)) {
      std::error_code link_ec;
      const fs::path target = fs::read_symlink(path, link_ec);
      throw InfraError("refusing to ship " + path.string() + ": it is a symbolic link" +
                       (link_ec ? std::string() : " (to " + target.string() + ")") +
                       "; a build directory holds regular files only, replace the link with a " +
                       "copy of the file it points to");
    }
    if (fs::is_directory(status)) continue;
    if (!fs::is_regular_file(status)) {
      throw InfraError("refusing to ship " + path.string() +
                       ": it is not a regular file (a socket, FIFO or device); remove it");
    }
    if (auto problem = relative_path_problem(rel)) {
      throw InfraError("refusing to ship " + path.string() + ": its path '" + rel + "' " +
                       *problem + "; rename it");
    }
    const std::string content = read_file(path);
    ManifestFile file;
    file.path = rel;
    file.size = content.size();
    file.sha256 = sha256_hex(content);
    file.mode = static_cast<uint32_t>(status.permissions() & fs::perms::all);
    manifest.files.push_back(std::move(file));
  }
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  return manifest;
}

std::vector<std::string> manifest_hashes(const Manifest& manifest) {
  std::set<std::string> hashes;
  for (const ManifestFile& file : manifest.files) hashes.insert(file.sha256);
  return {hashes.begin(), hashes.end()};
}

}  // namespace pypto::wire
