// Which running kernel this process is on: processes that report the same boot
// id read one CLOCK_MONOTONIC (the simulated hosts of network namespaces
// included), so their timestamps need no clock offset between them.
#pragma once

#include <string>

namespace pypto {

// /proc/sys/kernel/random/boot_id without its newline; empty when unreadable.
std::string kernel_boot_id();

}  // namespace pypto
