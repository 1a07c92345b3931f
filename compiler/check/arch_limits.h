// On-chip buffer sizes per architecture, the limits the checker holds tiles
// to. They are the project's documented choice (docs/language.md), modelled
// on the Ascend parts: a tile that would not fit on the real chip is
// rejected even though the simulator could run it, so programs stay portable.
#pragma once

#include <cstdint>

#include "pypto/run_config.h"

namespace pypto::compiler {

struct BufferLimits {
  const char* arch;  // "a2a3", "a5"
  int64_t ub;        // Unified Buffer of a vector core (aiv): every aiv tile lives here
  int64_t l1;        // L1 of a cube core (aic): tiles loaded by an aic kernel
  int64_t l0a;       // left matmul operand
  int64_t l0b;       // right matmul operand
  int64_t l0c;       // matmul result / accumulator
};

const BufferLimits& buffer_limits(Arch arch);

}  // namespace pypto::compiler
