#include "common/version.h"

#include "common/source_revision.h"  // generated into the build tree

namespace pypto {

const char* release_version() { return PYPTO_RELEASE_VERSION; }

const char* source_revision() { return PYPTO_SOURCE_REVISION; }

std::string version_text(std::string_view command) {
  return std::string(command) + " " + release_version() + " (source revision " +
         source_revision() + ")";
}

}  // namespace pypto
