#include "launch/agents.h"

#include "common/log.h"
#include "common/subprocess.h"

namespace pypto::launch {

Job start_agents(const MpirunOptions& options) {
  const MpirunCommand command = mpirun_command(options);
  // The command as the user could run it by hand; the environment entries
  // are shown too, since mpirun depends on them (OMPI_ALLOW_RUN_AS_ROOT).
  std::string env;
  for (const auto& entry : command.env) {
    // A secret (the run key) is named, not shown.
    const bool secret = entry.find("KEY=") != std::string::npos;
    env += (secret ? entry.substr(0, entry.find('=') + 1) + "<secret>" : entry) + " ";
  }
  log::info("launching {} rank agent{}: {}{}", options.world, options.world == 1 ? "" : "s", env,
            format_command(command.argv));
  JobOptions job_options;
  job_options.extra_env = command.env;
  return Job::start(command.argv, job_options);
}

}  // namespace pypto::launch
