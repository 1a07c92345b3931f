// Directories private to one embedded mpirun job on this host, so that its
// teardown can remove whatever the job left, however it ended
// (docs/launch.md, "What a run leaves behind"):
//   <TMPDIR>/pypto-XXXXXX/     Open MPI's session directory (orte_tmpdir_base)
//   /dev/shm/pypto-XXXXXX/     the shared-memory segments of the vader BTL and of
//                              the osc sm/rdma windows (*_backing_directory)
// Only for ranks on this host: another host has neither directory. A parameter
// the user set (OMPI_MCA_<name> in the environment or --mca in the mpirun
// arguments) is left alone, and so is what Open MPI then writes.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pypto::launch {

class JobScratch {
 public:
  // Creates the directories (mode 0700). Throws InfraError when neither can be made.
  // `mpirun_args`: the user's, to see which parameters they set themselves.
  static JobScratch create(const std::vector<std::string>& mpirun_args);
  JobScratch() = default;
  JobScratch(JobScratch&& other) noexcept;
  JobScratch& operator=(JobScratch&& other) noexcept;
  JobScratch(const JobScratch&) = delete;
  JobScratch& operator=(const JobScratch&) = delete;
  ~JobScratch();  // remove()

  // NAME=VALUE for mpirun's environment (its local ranks inherit it).
  const std::vector<std::string>& env() const { return env_; }
  // Another directory of the job's to remove with the rest (the agents' workspaces).
  void also_remove(std::filesystem::path dir);
  // Removes every directory, after the job has ended. Never throws; idempotent.
  void remove() noexcept;
  const std::optional<std::filesystem::path>& session_base() const { return tmp_; }
  const std::optional<std::filesystem::path>& shm_base() const { return shm_; }

 private:
  std::optional<std::filesystem::path> tmp_;
  std::optional<std::filesystem::path> shm_;
  std::vector<std::filesystem::path> extra_;
  std::vector<std::string> env_;
};

}  // namespace pypto::launch
