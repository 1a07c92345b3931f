#include "pypto/build_kind.h"

#include <string>
#include <system_error>

#include "artifact/build_paths.h"
#include "pypto/error.h"

namespace pypto {

namespace {

std::string join(const std::vector<std::string_view>& names) {
  std::string s;
  for (auto n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

// Marker files of `kind` present in `dir`.
std::vector<std::string_view> found_markers(const fs::path& dir, BuildKind kind) {
  std::vector<std::string_view> found;
  for (auto marker : build_kind_markers(kind)) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(dir / fs::path(marker), ec))) found.push_back(marker);
  }
  return found;
}

std::string shown(const fs::path& dir) {
  return dir.empty() ? std::string(".") : dir.generic_string();
}

}  // namespace

const char* build_kind_name(BuildKind kind) { return kind == BuildKind::kL2 ? "L2" : "L3"; }

const std::vector<std::string_view>& build_kind_markers(BuildKind kind) {
  static const std::vector<std::string_view> l2{kCompiledMetaFile, kKernelConfigFile};
  static const std::vector<std::string_view> l3{kDistributedMetaFile, kHostOrchFile};
  return kind == BuildKind::kL2 ? l2 : l3;
}

BuildKind detect_build_kind(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw InfraError(shown(dir) + " does not exist; pass the directory pypto-compile wrote " +
                     "(pypto-compile <program>.ptl -o <dir>)");
  if (!fs::is_directory(dir, ec))
    throw InfraError(shown(dir) + " is not a directory; pass the build directory pypto-compile " +
                     "wrote (pypto-compile <program>.ptl -o <dir>)");
  auto l2 = found_markers(dir, BuildKind::kL2);
  auto l3 = found_markers(dir, BuildKind::kL3);
  if (!l2.empty() && !l3.empty())
    throw InfraError(
        shown(dir) + " holds markers of both kinds of build: " + join(l2) + " (L2) and " +
        join(l3) + " (L3), so it is unclear which build it is. Recompile into a fresh directory " +
        "(pypto-compile <program>.ptl -o <new dir>) — a fresh compile removes the other kind's " +
        "markers; a stale kernel_config.json from an earlier L2 compile must not make an L3 " +
        "build replay as L2. For a hand-written fixture, restore it from version control");
  if (l2.empty() && l3.empty())
    throw InfraError(shown(dir) + " is not a build directory: it has none of " +
                     join(build_kind_markers(BuildKind::kL2)) + " (L2) or " +
                     join(build_kind_markers(BuildKind::kL3)) +
                     " (L3). Pass the directory pypto-compile wrote, or recompile into it " +
                     "(pypto-compile <program>.ptl -o " + shown(dir) + ")");
  return l2.empty() ? BuildKind::kL3 : BuildKind::kL2;
}

void remove_markers_of_other_kind(const fs::path& dir, BuildKind fresh_kind) {
  BuildKind other = fresh_kind == BuildKind::kL2 ? BuildKind::kL3 : BuildKind::kL2;
  for (auto marker : build_kind_markers(other)) {
    std::error_code ec;
    fs::remove(dir / fs::path(marker), ec);
    if (ec)
      throw InfraError("cannot remove the stale " + std::string(build_kind_name(other)) +
                       " marker " + sidecar_display(dir, marker) + " before writing an " +
                       build_kind_name(fresh_kind) + " build: " + ec.message() +
                       "; remove it by hand or compile into a fresh directory");
  }
}

}  // namespace pypto
