#include "compiler/check/arch_limits.h"

namespace pypto::compiler {

namespace {
constexpr int64_t kKiB = 1024;
// Ascend910B (a2a3): UB 192 KiB, L1 512 KiB, L0A/L0B 64 KiB, L0C 128 KiB.
constexpr BufferLimits kA2A3{"a2a3", 192 * kKiB, 512 * kKiB, 64 * kKiB, 64 * kKiB, 128 * kKiB};
// Ascend950 (a5): UB 256 KiB, L1 1 MiB, L0A/L0B 64 KiB, L0C 256 KiB.
constexpr BufferLimits kA5{"a5", 256 * kKiB, 1024 * kKiB, 64 * kKiB, 64 * kKiB, 256 * kKiB};
}  // namespace

const BufferLimits& buffer_limits(Arch arch) { return arch == Arch::kA5 ? kA5 : kA2A3; }

}  // namespace pypto::compiler
