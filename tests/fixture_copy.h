// Copying a fixture build directory for a test. A fixture in the source tree
// may hold the products of an earlier run by hand (the README's main job runs
// tests/fixtures/l2/vector_add in place): cache/, outputs/, dfx_outputs/ and
// report/ are left behind so every copy starts from the sources alone.
#pragma once

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

}  // namespace pypto::testing_support
