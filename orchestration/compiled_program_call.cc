// pypto::call of an L2 program: PyPTO's CompiledProgram.__call__, a free
// function of the execute layer so that the artifact layer never depends on it
// (docs/architecture.md: calling a program object forwards to a worker).
#include "pypto/chip_worker.h"

namespace pypto {

void call(const CompiledProgram& program, std::vector<Tensor>& args,
          const std::optional<RunConfig>& config) {
  if (!config) {
    ChipWorker worker(RunConfig::from_platform(program.platform()));
    worker.run(program, args);
    return;
  }
  ChipWorker worker(*config);
  worker.run(program.with_platform(config->platform()), args);
}

}  // namespace pypto
