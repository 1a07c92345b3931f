// The checker: name resolution, constant folding (const, WORLD), types and
// static shapes, tile sizes against the on-chip buffers, directions and
// windows, calls and their arguments, the host dispatch plan. It annotates
// the tree in place (Expr::type, Expr::const_value, Param::type) and reports
// every problem it finds; lowering runs only on a program without errors.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"
#include "pypto/run_config.h"

namespace pypto::compiler {

struct CheckOptions {
  // --world N; required by programs with a host function (L3).
  std::optional<int64_t> world;
  Arch arch = Arch::kA2A3;
};

struct CheckResult {
  bool ok = false;
  bool distributed = false;         // a host function exists: an L3 program
  const Function* entry = nullptr;  // host `main` (L3) or the chip entry (L2)
  int64_t world = 1;
};

CheckResult check(Program& program, const CheckOptions& options, DiagnosticEngine& diags);

}  // namespace pypto::compiler
