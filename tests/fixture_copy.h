// Copying a fixture build directory for a test. A fixture in the source tree
// may hold the products of an earlier run by hand (the README's main job runs
// tests/fixtures/l2/vector_add in place): cache/, outputs/, dfx_outputs/ and
// report/ are left behind so every copy starts from the sources alone.
// Copies go under the test process's own scratch root, which ScratchCleanup
// removes when the process's tests end.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace pypto::testing_support {

namespace fs = std::filesystem;

inline bool is_run_product(const fs::path& name) {
  static const std::set<std::string> kProducts = {"cache", "outputs", "dfx_outputs", "report"};
  return kProducts.count(name.string()) > 0;
}

// Copies `src` to `dst` (created), skipping run products at any depth
// (next_levels/<r>/cache included). Symbolic links are copied as links.
inline void copy_fixture_sources(const fs::path& src, const fs::path& dst) {
  fs::create_directories(dst);
  for (auto it = fs::recursive_directory_iterator(src); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->is_directory() && is_run_product(it->path().filename())) {
      it.disable_recursion_pending();
      continue;
    }
    const fs::path target = dst / fs::relative(it->path(), src);
    if (it->is_symlink())
      fs::copy_symlink(it->path(), target);
    else if (it->is_directory())
      fs::create_directories(target);
    else
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing);
  }
}

// This test process's own directory under the test temp dir, for everything a
// test writes (the e2e tests also keep their agents' store and captured stderr
// there). ScratchCleanup removes it.
inline fs::path process_scratch_root() {
  return fs::path(::testing::TempDir()) / ("pypto_test_" + std::to_string(::getpid()));
}

// A fresh scratch directory under the process's root.
inline fs::path scratch_dir(const std::string& name) {
  const fs::path dir = process_scratch_root() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A fresh copy of the sources of tests/fixtures/<rel> in the process's scratch, as <name>.
inline fs::path scratch_fixture_copy(const std::string& rel, const std::string& name) {
  const fs::path dst = scratch_dir(name);
  copy_fixture_sources(fs::path(PYPTO_SOURCE_DIR) / "tests" / "fixtures" / rel, dst);
  return dst;
}

// Removes process_scratch_root() when the test program ends (nothing of a
// test run outlives it). Each test binary that makes scratch registers one:
//   ::testing::AddGlobalTestEnvironment(new ScratchCleanup)
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(process_scratch_root(), ec);
  }
};

}  // namespace pypto::testing_support
