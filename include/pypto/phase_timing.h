// How long one phase of a rank's dispatch took, as the rank reports it in
// DISPATCH_DONE (docs/protocol.md) and DistributedRunResult lists it.
#pragma once

#include <cstdint>
#include <string>

namespace pypto {

struct PhaseTiming {
  std::string phase;  // "assemble", "run", "collect", ...
  int64_t ns = 0;
  bool operator==(const PhaseTiming&) const = default;
};

}  // namespace pypto
