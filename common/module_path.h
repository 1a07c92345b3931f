// Where the runtime's own code was loaded from, so that it finds the files
// installed beside it (pypto-rank, the kernel headers) whether it runs inside
// an installed command (<prefix>/bin/pypto-coord), a build-tree command, or a
// host program linked against the installed libpypto.so (<prefix>/lib/).
#pragma once

#include <filesystem>

namespace pypto {

// The executable or shared library holding this function: libpypto.so's path
// in a host program linked against it, else /proc/self/exe. Empty when
// neither can be read.
std::filesystem::path current_module();

// The install prefix a module at `module` belongs to: the directory above its
// bin/ or above the library directory it was installed into (lib/, or the
// configured CMAKE_INSTALL_LIBDIR such as lib/x86_64-linux-gnu).
std::filesystem::path install_prefix_of(const std::filesystem::path& module);

}  // namespace pypto
