#include "common/module_path.h"

#include <dlfcn.h>
#include <link.h>

#include <system_error>
#include <vector>

#ifndef PYPTO_INSTALL_LIBDIR
#define PYPTO_INSTALL_LIBDIR "lib"
#endif

namespace pypto {

namespace fs = std::filesystem;

fs::path current_module() {
  Dl_info info{};
  link_map* map = nullptr;
  // The main program's link map has an empty name: then it is the executable.
  if (dladdr1(reinterpret_cast<void*>(&current_module), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map && map->l_name && *map->l_name) {
    std::error_code ec;
    fs::path library = fs::weakly_canonical(map->l_name, ec);
    if (!ec) return library;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

fs::path install_prefix_of(const fs::path& module) {
  fs::path dir = module.parent_path();
  const fs::path libdir = fs::path(PYPTO_INSTALL_LIBDIR).lexically_normal();
  // Strip libdir's components from the end when dir ends with them.
  fs::path up = dir;
  std::vector<fs::path> parts(libdir.begin(), libdir.end());
  bool matches = !parts.empty();
  for (auto it = parts.rbegin(); matches && it != parts.rend(); ++it) {
    if (up.filename() != *it) matches = false;
    else up = up.parent_path();
  }
  return matches ? up : dir.parent_path();
}

}  // namespace pypto
