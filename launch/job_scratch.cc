#include "launch/job_scratch.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "pypto/error.h"

namespace pypto::launch {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOwnerFile = ".pypto-job-owner";

// "<pid> <start time>" of a process (/proc/<pid>/stat field 22), empty when it is gone.
std::string process_identity(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return "";
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return pid + " " + field;
}

// Removes the job directories under `parent` whose coordinator is gone (killed with
// SIGKILL, so it could not clean up): their owner file names a process that no
// longer exists.
void sweep_orphans(const fs::path& parent) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("pypto-", 0) != 0 || name.size() != 12) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        info.st_uid != ::geteuid())
      continue;
    std::ifstream owner(it->path() / kOwnerFile);
    std::string identity;
    if (!owner || !std::getline(owner, identity)) continue;
    const std::string pid = identity.substr(0, identity.find(' '));
    if (pid.empty() || process_identity(pid) == identity) continue;
    std::error_code ignored;
    fs::remove_all(it->path(), ignored);
    log::debug("removed {}, left by a coordinator that is gone ({})", it->path().string(),
               identity);
  }
}

// mkdtemp under `parent`, with an owner file naming this process; nullopt (and a
// debug line) when it cannot.
std::optional<fs::path> make_private_dir(const fs::path& parent) {
  sweep_orphans(parent);
  std::string pattern = (parent / "pypto-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    log::debug("cannot create a job directory in {}: {}", parent.string(), std::strerror(errno));
    return std::nullopt;
  }
  std::ofstream(fs::path(pattern) / kOwnerFile) << process_identity(std::to_string(::getpid()))
                                                << "\n";
  return fs::path(pattern);
}

bool user_sets(const std::vector<std::string>& mpirun_args, const std::string& param) {
  if (std::getenv(("OMPI_MCA_" + param).c_str())) return true;
  return std::find(mpirun_args.begin(), mpirun_args.end(), param) != mpirun_args.end();
}

}  // namespace

JobScratch JobScratch::create(const std::vector<std::string>& mpirun_args) {
  JobScratch scratch;
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (!ec && !user_sets(mpirun_args, "orte_tmpdir_base")) {
    scratch.tmp_ = make_private_dir(tmp);
    if (scratch.tmp_) scratch.env_.push_back("OMPI_MCA_orte_tmpdir_base=" + scratch.tmp_->string());
  }
  if (fs::is_directory("/dev/shm", ec)) {
    scratch.shm_ = make_private_dir("/dev/shm");
    if (scratch.shm_) {
      // btl_sm is Open MPI 5's name of vader.
      for (const char* param : {"btl_vader_backing_directory", "btl_sm_backing_directory",
                                "osc_sm_backing_directory", "osc_rdma_backing_directory"})
        if (!user_sets(mpirun_args, param))
          scratch.env_.push_back(std::string("OMPI_MCA_") + param + "=" + scratch.shm_->string());
    }
  }
  log::debug("the job's session directory goes under {}, its shared memory under {}",
             scratch.tmp_ ? scratch.tmp_->string() : "(Open MPI's default)",
             scratch.shm_ ? scratch.shm_->string() : "(Open MPI's default)");
  return scratch;
}

JobScratch::JobScratch(JobScratch&& other) noexcept
    : tmp_(std::move(other.tmp_)),
      shm_(std::move(other.shm_)),
      extra_(std::move(other.extra_)),
      env_(std::move(other.env_)) {
  other.tmp_.reset();
  other.shm_.reset();
  other.extra_.clear();
}

JobScratch& JobScratch::operator=(JobScratch&& other) noexcept {
  if (this != &other) {
    remove();
    tmp_ = std::move(other.tmp_);
    shm_ = std::move(other.shm_);
    extra_ = std::move(other.extra_);
    env_ = std::move(other.env_);
    other.tmp_.reset();
    other.shm_.reset();
    other.extra_.clear();
  }
  return *this;
}

JobScratch::~JobScratch() { remove(); }

void JobScratch::also_remove(fs::path dir) { extra_.push_back(std::move(dir)); }

void JobScratch::remove() noexcept {
  auto remove_dir = [](const fs::path& dir) {
    std::error_code ec;
    const auto removed = fs::remove_all(dir, ec);
    if (ec) {
      try {
        log::warn("cannot remove {} (left by the agents' job): {}", dir.string(), ec.message());
      } catch (...) {
      }
    } else if (removed > 1) {
      try {
        log::debug("removed {} ({} entries left by the agents' job)", dir.string(), removed - 1);
      } catch (...) {
      }
    }
  };
  if (tmp_) remove_dir(*tmp_);
  if (shm_) remove_dir(*shm_);
  for (const fs::path& dir : extra_) remove_dir(dir);
  tmp_.reset();
  shm_.reset();
  extra_.clear();
}

}  // namespace pypto::launch
