// Starting the rank agents' MPI job: what `pypto-coord run` does by default
// (docs/launch.md).
#pragma once

#include "launch/job.h"
#include "launch/mpirun_command.h"

namespace pypto::launch {

// Builds mpirun_command(options), logs it at info level and starts it as a
// Job (its own session, stdin from /dev/null, stdout/stderr inherited,
// SIGTERM to mpirun should the starting thread die). Throws what
// mpirun_command and Job::start throw.
Job start_agents(const MpirunOptions& options);

}  // namespace pypto::launch
