// One run of an L3 build directory, the part run, replay and exec share:
// host arguments in, agents launched (or awaited), every rank's dispatches
// run, outputs gathered and written, per-dispatch DFX laid out as
// dfx_outputs/rank<r>/d<k>/, report/run.json, optional validation.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/dispatch_flags.h"
#include "coordinator/l2_run.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/distributed_worker.h"

namespace pypto::coord {

namespace fs = std::filesystem;

// Loads the L3 build in `dir` with the --platform override; its platform must
// execute here. ArtifactError / InfraError (exit 3) for a broken directory.
DistributedCompiledProgram load_l3_program(const fs::path& dir,
                                           const std::optional<std::string>& platform);

struct L3RunOutcome {
  PrepareReport prepare;
  DistributedRunResult result;
  fs::path output_dir;
  std::vector<fs::path> outputs_written;
  std::optional<ValidationReport> validation;
};

// Runs `program` once and prints a short summary to `out`. Outputs are written
// as for L2 (stale ones removed first); dfx_outputs/rank*/d* of an earlier run
// are removed before the run and each dispatch's directory is written after it;
// report/run.json is written whatever the outcome. Throws like run_l2_program,
// plus the distributed failures (a rank's kernel error: exit 1; a lost agent;
// Ctrl-C: exit 130).
L3RunOutcome run_l3_program(const DistributedCompiledProgram& program, const RunRequest& request,
                            const DispatchSettings& settings, std::ostream& out);

// Lays out a run's per-dispatch DFX as run_l3_program does: removes the
// dfx_outputs/rank*/d* (and timeline.json) of an earlier run, writes rank<r>/d<k>/
// of `result` with each dispatch's DFX files and dispatch_program.json.
void lay_out_dispatch_dfx(const fs::path& dfx_root, const DistributedRunResult& result,
                          const PrepareReport& prepare);
// The same in `program`'s own dfx_outputs/, for embedders that run a
// DistributedWorker themselves (the Python package).
void write_dfx_outputs(const DistributedCompiledProgram& program,
                       const DistributedRunResult& result, const PrepareReport& prepare);

// "0,1,2,3": the device ids exec prints for an L3 build.
std::string device_list(const std::vector<int64_t>& device_ids);

}  // namespace pypto::coord
