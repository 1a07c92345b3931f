// CompiledProgram::operator(): the artifact layer's convenience call,
// defined here in the execute layer so that artifact/ never depends on it
// (docs/architecture.md: calling a program object forwards to a worker).
#include "artifact/compiled_program.h"
#include "orchestration/chip_worker.h"

namespace pypto {

void CompiledProgram::operator()(std::vector<Tensor>& args,
                                 const std::optional<RunConfig>& config) const {
  if (!config) {
    ChipWorker worker(RunConfig::from_platform(platform()));
    worker.run(*this, args);
    return;
  }
  ChipWorker worker(*config);
  worker.run(with_platform(config->platform()), args);
}

}  // namespace pypto
