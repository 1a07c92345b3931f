// Window specialization of an L3 host plan. A generated kernel finds each of
// its window parameters at run time by name (compiler/codegen/kernel_lowering.h), so
// the window a dispatch binds to it must carry the parameter's name. When it
// does not — a library collective called twice gets windows `ar_data` and
// `ar_data_1` — the kernel is generated as a copy whose parameter takes the
// window's name, and every chip function on the way from the dispatch to it
// as a copy calling that kernel. Copies are shared by every dispatch with the
// same binding; a plan that needs none is left as it is.
#pragma once

#include <deque>

#include "compiler/codegen/codegen_host_plan.h"
#include "compiler/codegen/codegen_util.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"

namespace pypto::compiler {

// Rewrites plan.dispatches[*].chip, plan.orch.dispatches[*].program and
// plan.chips to the specialized chip functions. The copies are stored in
// `storage` and added to `table`. Throws ProgramError (file:line:col) when a
// kernel cannot take a window's name (a local of that name, or one window
// bound to two of its parameters).
void specialize_windows(HostPlan& plan, FunctionTable& table, std::deque<Function>& storage,
                        const SourceManager* sources);

}  // namespace pypto::compiler
