// The rank agent's MPI environment (docs/windows.md): MPI init/finalize
// as one RAII object, the thread level MPI actually granted and what it
// limits, rank/world/host, the node-local communicator, and MPI errors turned
// into pypto errors instead of aborting the job.
#pragma once

#include <mpi.h>

#include <mutex>
#include <string>

namespace pypto::rank {

// Throws InfraError "<what>: <MPI_Error_string>" unless rc is MPI_SUCCESS.
void check_mpi(int rc, const std::string& what);
// The text MPI gives for an error code.
std::string mpi_error_string(int rc);
// "MPI_THREAD_MULTIPLE", ... for a thread level.
const char* thread_level_name(int level);

class MpiSession {
 public:
  struct Options {
    // Asked of MPI_Init_thread: MPI_THREAD_MULTIPLE unless PYPTO_MPI_THREAD
    // says otherwise (for MPIs whose RMA refuses MULTIPLE, and for tests of
    // the serialized path).
    int required_thread_level = thread_level_from_env();
  };

  // PYPTO_MPI_THREAD: multiple (default when unset), serialized, funneled,
  // single. Throws UsageError for anything else.
  static int thread_level_from_env();

  // Calls MPI_Init_thread unless MPI is already initialized (then this
  // session neither initializes nor finalizes it). Collective over the world.
  MpiSession();
  explicit MpiSession(const Options& options);
  // Frees the communicators and finalizes MPI when this session initialized
  // it. Every WindowSet must be gone by then (MPI_Win_free needs MPI).
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  const std::string& host() const { return host_; }
  // A dup of MPI_COMM_WORLD for the data plane, errors returned, not fatal.
  MPI_Comm world_comm() const { return world_comm_; }
  // The ranks sharing this rank's node (MPI_COMM_TYPE_SHARED).
  MPI_Comm node_comm() const { return node_comm_; }
  int node_rank() const { return node_rank_; }
  int node_size() const { return node_size_; }

  int provided_thread_level() const { return provided_; }
  // True when several threads may call MPI at once (MPI_THREAD_MULTIPLE).
  bool thread_multiple() const { return provided_ >= MPI_THREAD_MULTIPLE; }
  // One sentence: the level asked, the level granted and what that limits.
  const std::string& thread_level_note() const { return thread_note_; }
  // Whether the job has ranks on several nodes (as Open MPI's launcher said
  // before MPI_Init), and which one-sided components that chose
  // (rank_agent/one_sided_env.h).
  bool spans_nodes() const { return spans_nodes_; }
  const std::string& one_sided_note() const { return one_sided_note_; }

  // Held around every MPI call a core thread makes. With MPI_THREAD_MULTIPLE
  // on one node it is a no-op (empty lock); below that, and in a job that
  // spans nodes, it serializes the calls of this rank's threads through one
  // mutex: Open MPI 4.1's osc/ucx deadlocks in UCX's worker lock when two
  // threads of a rank issue RMA at once (docs/windows.md "Thread level").
  bool serializes_calls() const { return !thread_multiple() || spans_nodes_; }
  std::unique_lock<std::mutex> lock() const {
    return serializes_calls() ? std::unique_lock<std::mutex>(mu_) : std::unique_lock<std::mutex>();
  }

 private:
  bool owns_init_ = false;
  int provided_ = MPI_THREAD_SINGLE;
  int rank_ = 0;
  int world_ = 1;
  int node_rank_ = 0;
  int node_size_ = 1;
  std::string host_;
  std::string thread_note_;
  bool spans_nodes_ = false;
  std::string one_sided_note_;
  MPI_Comm world_comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  mutable std::mutex mu_;
};

}  // namespace pypto::rank
