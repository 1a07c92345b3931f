// One run of an L2 build directory, the part run, replay and exec share:
// arguments in, dispatch on a ChipWorker, outputs out, optional validation.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/dispatch_flags.h"
#include "coordinator/program_inputs.h"
#include "coordinator/run_outputs.h"
#include "coordinator/validate.h"
#include "pypto/chip_worker.h"
#include "pypto/compiled_program.h"

namespace pypto::coord {

namespace fs = std::filesystem;

// Loads `dir` for `command` ("run", "replay", "exec"): an L2 build through
// CompiledProgram::from_dir with the --platform override, which must execute
// here. An L3 build is an InfraError (exit 3): callers send those to
// load_l3_program (l3_run.h). Invalid sidecars are ArtifactErrors (exit 3).
CompiledProgram load_l2_program(const fs::path& dir, const std::optional<std::string>& platform,
                                const std::string& command);

struct L2RunOutcome {
  ChipRunResult result;
  fs::path output_dir;
  std::vector<fs::path> outputs_written;
  std::optional<ValidationReport> validation;
};

// Runs `program` once and prints a short summary to `out` (tasks, time,
// outputs, DFX directory, validation). Every Out/InOut parameter is written to
// <output dir>/<name>.npy after a completed dispatch, also when validation
// then fails; the files of an earlier run are removed first, so a failed
// dispatch leaves none behind. Throws ValidationError (exit 1) after writing
// the outputs when --validate finds a mismatch; UsageError when --validate is
// asked of a build without golden/; whatever the inputs and the dispatch throw.
L2RunOutcome run_l2_program(const CompiledProgram& program, const RunRequest& request,
                            const DispatchSettings& settings, std::ostream& out);

}  // namespace pypto::coord
