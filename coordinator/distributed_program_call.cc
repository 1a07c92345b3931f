// DistributedCompiledProgram::operator(): the artifact layer's convenience
// call, defined in the execute layer so that artifact/ never depends on it
// (docs/architecture.md: calling a program object forwards to a worker).
#include "artifact/distributed_compiled_program.h"
#include "artifact/compiled_program.h"
#include "coordinator/distributed_worker.h"

namespace pypto {

void DistributedCompiledProgram::operator()(std::vector<Tensor>& args,
                                            const std::optional<RunConfig>& config) const {
  DistributedRunOptions options;
  if (config) {
    check_platform_override(config->platform(), arch());
    options.config = *config;
  }
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(*this);
  worker->run(*this, args, options);
  worker->close();
}

}  // namespace pypto
