// Small filesystem helpers every component needs: whole-file reads and
// atomic writes (temp file in the same directory + rename).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace pypto {

namespace fs = std::filesystem;

// Reads a whole file. Throws InfraError naming the path when it cannot be read.
std::string read_file(const fs::path& path);

// Writes `data` to `path` atomically: readers see the old file or the new one,
// never a prefix. Creates parent directories. `mode` sets permission bits, less
// those the process's umask clears, as open(2) would.
void write_file_atomic(const fs::path& path, std::string_view data, fs::perms mode =
                           fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                           fs::perms::others_read);

// A unique temporary sibling of `path` (same directory, so rename is atomic).
fs::path temp_sibling(const fs::path& path);

// `path` as messages print it: "./out//b/" -> "out/b" (lexically normal, no
// trailing separator, "." for the current directory); symlinks are not resolved.
// Commands apply it to the paths they are given, so everything derived prints clean.
std::string normal_path(std::string path);

// `path` relative to `base` when it lies inside it, else `path` unchanged; for messages.
std::string display_path(const fs::path& path, const fs::path& base);

}  // namespace pypto
