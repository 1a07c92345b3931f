// pypto::call of an L3 program: PyPTO's distributed program call, a free
// function of the execute layer so that the artifact layer never depends on it
// (docs/architecture.md: calling a program object forwards to a worker).
#include "pypto/compiled_program.h"
#include "pypto/distributed_worker.h"

namespace pypto {

void call(const DistributedCompiledProgram& program, std::vector<Tensor>& args,
          const std::optional<RunConfig>& config) {
  DistributedRunOptions options;
  if (config) {
    check_platform_override(config->platform(), program.arch());
    options.config = *config;
  }
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program);
  worker->run(program, args, options);
  worker->close();
}

}  // namespace pypto
