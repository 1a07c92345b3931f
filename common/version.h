// What every command prints for --version: the release and the source revision
// it was built from (git describe of the checkout, "-dirty" with local edits).
#pragma once

#include <string>
#include <string_view>

namespace pypto {

// The project's release, e.g. "0.1.0" (CMakeLists.txt's project VERSION).
const char* release_version();
// git describe --always --dirty of the source tree at build time.
const char* source_revision();
// "<command> 0.1.0 (source revision 81bd889a1b2c)".
std::string version_text(std::string_view command);

}  // namespace pypto
