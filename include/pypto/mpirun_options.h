// How DistributedWorker::prepare starts the agents' mpirun (docs/launch.md):
// where mpirun and pypto-rank are, the hostfile, extra mpirun arguments and
// environment for the ranks. launch/mpirun_command.h builds the command line.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pypto::launch {

struct MpirunOptions {
  int world = 1;                                  // ranks to start (-n)
  std::string coord_endpoint;                     // the coordinator's ROUTER, passed as --coord
  std::vector<std::string> agent_args;            // extra pypto-rank arguments, after --coord
  std::optional<std::filesystem::path> hostfile;  // --hostfile passthrough
  std::vector<std::string> mpirun_args;           // the user's --mpirun-args, already split
  // mpirun itself; else $PYPTO_MPIRUN, else the one found when the project was
  // configured, else `mpirun` in PATH (find_mpirun).
  std::optional<std::filesystem::path> mpirun;
  // pypto-rank; else $PYPTO_RANK, else next to this executable, ... (find_rank_binary).
  std::optional<std::filesystem::path> rank_binary;
  // NAME=VALUE for the ranks: set in mpirun's environment and exported with
  // `-x NAME`, so ranks on other hosts get them too (local ranks inherit
  // mpirun's whole environment anyway). Values stay out of the argv.
  std::vector<std::string> env;
};

}  // namespace pypto::launch
