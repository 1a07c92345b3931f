// Writes a build directory (docs/build-directory.md) for a checked program:
// L2 for a program without a host function, L3 (one identical sub-build per
// rank under next_levels/<r>/) for one with. Everything is generated in memory
// first, so a program the generator refuses leaves the directory untouched;
// then the other kind's markers are removed, sources are written, the
// sidecars last (each file atomically, through the artifact writers).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_lowering.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"
#include "pypto/build_kind.h"
#include "pypto/param_info.h"
#include "pypto/scalar_param.h"
#include "pypto/tensor.h"

namespace pypto::compiler {

namespace fs = std::filesystem;

// Golden data of the entry's parameters, in parameter order.
struct GoldenData {
  uint64_t seed = 0;
  std::vector<Tensor> before;  // inputs (Out parameters: anything, not written)
  std::vector<Tensor> after;   // the reference results (In parameters: not written)
};

// Lowers one kernel (compiler/codegen/kernel_lowering.h in the real compiler).
using KernelLowerer = std::function<LoweredKernel(const Function& kernel)>;

struct BuildRequest {
  const Program* program = nullptr;
  const Function* entry = nullptr;  // CheckResult::entry
  bool distributed = false;         // CheckResult::distributed
  int64_t world = 1;
  std::vector<int64_t> device_ids;  // L3: one per rank; empty: 0 .. world - 1
  std::string platform = "a2a3sim";
  std::string origin;  // the program file as the header comments name it
  const SourceManager* sources = nullptr;
  // One per scalar parameter of the entry, in order: the defaults the
  // sidecars record (the values the golden data was computed with).
  std::vector<ScalarValue> scalars;
};

struct BuildSummary {
  BuildKind kind = BuildKind::kL2;
  size_t kernels = 0;
  size_t dispatches = 0;  // L3
  bool golden = false;
};

// The entry's tensor parameters as compiled_meta.json / distributed_meta.json
// record them in "params" (its scalar parameters go to "scalars").
std::vector<ParamInfo> entry_params(const Function& entry, const SourceManager* sources = nullptr);

// golden.json's tolerances for outputs of these dtypes: the loosest of
// f32 1e-5/1e-5, f16 5e-3/5e-3, bf16 3e-2/3e-2, integers and bool exact.
std::pair<double, double> golden_tolerance(const std::vector<DType>& output_dtypes);

// Writes the build directory. `golden` absent: golden/ is removed (a stale one
// would validate against another compile). Throws ProgramError for programs
// the generator does not support, InfraError for files it cannot write.
BuildSummary write_build(const fs::path& dir, const BuildRequest& request,
                         const KernelLowerer& lower, const std::optional<GoldenData>& golden);

// The debug/run script of every generated build (as in tests/fixtures/).
extern const char* const kDebugRunScript;

}  // namespace pypto::compiler
