// The host plan of an L3 program (orchestration/host_orch.json): the host
// function is evaluated at compile time — its loops have constant bounds, its
// conditions and dispatch targets fold — and every `f(...) on r` becomes one
// dispatch of chip function f to rank r, with its arguments bound to boxes of
// the host parameters, window buffers and integer scalars.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "artifact/host_orch.h"
#include "compiler/codegen/codegen_util.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"

namespace pypto::compiler {

struct PlannedDispatch {
  const Function* chip = nullptr;  // the dispatched chip function
  Span span;                       // the dispatch statement
  // For each window parameter of `chip`: the host window bound to it.
  std::map<std::string, std::string> windows;
};

struct HostPlan {
  HostOrch orch;                            // windows (every rank a member) and dispatches
  std::vector<PlannedDispatch> dispatches;  // parallel to orch.dispatches
  // The distinct chip functions dispatched, in order of first dispatch.
  std::vector<const Function*> chips;
};

// Unrolls `host` (the checked entry of an L3 program) for WORLD = `world`.
// A window is named after the let that binds its window_buffer (a second
// window of the same name gets a suffix _1, _2, ...). Throws ProgramError
// naming file:line:col for what the host plan cannot express (an intermediate
// float scalar argument). A tensor(...) of the host function becomes a host
// intermediate of host_orch.json, named after its let.
HostPlan plan_host(const Function& host, const FunctionTable& table, int64_t world,
                   const SourceManager* sources = nullptr);

}  // namespace pypto::compiler
