// The mpirun command line that starts the rank agents (docs/launch.md):
//   mpirun [--allow-run-as-root] [--oversubscribe] [--bind-to none] [--hostfile F]
//          [-x NAME]... [user --mpirun-args]... -n <world> <pypto-rank> --coord <endpoint>
//          [agent args]...
// The flags the launcher adds are Open MPI's (the MPI the project installs);
// each is left out when the user's own mpirun arguments already decide it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pypto/mpirun_options.h"

namespace pypto::launch {

// What to hand to Job::start: the argv and the environment entries to add.
struct MpirunCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // NAME=VALUE added to (or replacing in) the inherited env
};

// Builds the command. The flags it adds, each only when the user's
// mpirun_args do not already say otherwise:
//   --allow-run-as-root  when running as root (containers, CI): Open MPI
//                        refuses root otherwise. OMPI_ALLOW_RUN_AS_ROOT=1 and
//                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 go into env as well,
//                        which also covers mpirun builds without the flag.
//   --oversubscribe      on a single host (no hostfile, --host or -H): always,
//                        since it only permits more ranks than cores and
//                        changes nothing when there are enough; agents block in
//                        zmq_poll, so 8 ranks share 2 cores well. With
//                        `hostfile`: when world exceeds the slots it declares
//                        (a host without slots= makes the total unknown: not
//                        added, pass --mpirun-args=--oversubscribe).
//   --bind-to none       Open MPI binds each rank to a core by default; with
//                        more ranks than cores that pins several to one core
//                        while others idle. Suppressed by any binding option
//                        (--bind-to, --cpu-set, --cpu-list, --rankfile, or
//                        --mca hwloc_base_binding_policy).
// Throws UsageError when mpirun_args set the number of processes (-n, -np,
// -c: the world size comes from the build directory) or repeat --hostfile, or
// when an env entry is not NAME=VALUE; ToolError / InfraError from
// find_mpirun / find_rank_binary; InfraError when the hostfile is unreadable.
MpirunCommand mpirun_command(const MpirunOptions& options);

// mpirun_command(options).argv.
std::vector<std::string> mpirun_argv(const MpirunOptions& options);

// The mpirun to run, as an absolute path: explicit_path (a bare name is looked
// up in PATH), else $PYPTO_MPIRUN (same), else the mpiexec CMake found when the
// project was configured, else `mpirun` in PATH. An explicit path or
// $PYPTO_MPIRUN that is not executable is a ToolError; so is finding none
// (the message says to install openmpi-bin).
std::filesystem::path find_mpirun(const std::optional<std::filesystem::path>& explicit_path);

// Whether the user's mpirun arguments place ranks on named hosts (--host, -H, a
// hostfile or rankfile), which may be other hosts than this one.
bool mpirun_args_name_hosts(const std::vector<std::string>& mpirun_args);

// The mpiexec CMake found at configure time (empty when it found none).
std::filesystem::path build_time_mpirun();

}  // namespace pypto::launch
