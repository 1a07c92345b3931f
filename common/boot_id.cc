#include "common/boot_id.h"

#include <fstream>

namespace pypto {

std::string kernel_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return in || in.eof() ? id : std::string();
}

}  // namespace pypto
