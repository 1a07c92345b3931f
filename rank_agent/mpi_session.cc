#include "rank_agent/mpi_session.h"

#include <cstdlib>

#include "common/log.h"
#include "pypto/error.h"
#include "rank_agent/one_sided_env.h"

namespace pypto::rank {

std::string mpi_error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, len);
}

void check_mpi(int rc, const std::string& what) {
  if (rc != MPI_SUCCESS) throw InfraError(what + ": " + mpi_error_string(rc));
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown MPI thread level";
}

namespace {

std::string describe_thread_level(int required, int provided) {
  std::string note = std::string("asked for ") + thread_level_name(required) + ", MPI provided " +
                     thread_level_name(provided);
  if (provided >= MPI_THREAD_MULTIPLE)
    return note + ": core threads make RMA calls, wait polls and barriers concurrently";
  const std::string serialized =
      ": the RMA calls, RMA wait polls and barrier polls of this rank's core threads are "
      "serialized through one mutex, so one rank's remote operations never overlap inside MPI "
      "(shared-memory windows are unaffected: their loads, stores and atomics do not call MPI)";
  if (provided == MPI_THREAD_SERIALIZED) return note + serialized;
  // FUNNELED/SINGLE forbid any thread but the main one from calling MPI; the
  // mutex makes the calls serialized, which Open MPI and MPICH tolerate, but
  // the standard does not promise it.
  return note + serialized +
         "; the standard also requires the main thread to make every MPI call at this level, "
         "which core threads cannot honour: RMA windows may misbehave, prefer an MPI built "
         "with thread support";
}

}  // namespace

int MpiSession::thread_level_from_env() {
  const char* value = std::getenv("PYPTO_MPI_THREAD");
  const std::string level = value ? value : "";
  if (level.empty() || level == "multiple") return MPI_THREAD_MULTIPLE;
  if (level == "serialized") return MPI_THREAD_SERIALIZED;
  if (level == "funneled") return MPI_THREAD_FUNNELED;
  if (level == "single") return MPI_THREAD_SINGLE;
  throw UsageError("PYPTO_MPI_THREAD='" + level +
                   "' is not an MPI thread level; use one of multiple, serialized, funneled, "
                   "single");
}

MpiSession::MpiSession() : MpiSession(Options{}) {}

MpiSession::MpiSession(const Options& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&provided_);
  } else {
    // MPI_Init_thread reports failure through MPI_ERRORS_ARE_FATAL (no
    // communicator exists yet to carry another handler); a return is a bug.
    const OneSidedChoice one_sided = choose_one_sided_component();
    spans_nodes_ = one_sided.spans_nodes;
    one_sided_note_ = one_sided.note;
    log::debug("MPI one-sided: {}", one_sided.note);
    // An agent's MPI waits (window creation, collectives inside MPI) share the
    // CPUs with its core and control threads and with the host's other agents:
    // Open MPI spins in them unless it counts the node as oversubscribed, which a
    // hostfile with enough slots hides; spinning there is the likely cause of a
    // 10 s silence of the control plane seen on simulated hosts while ranks
    // created their windows. A user's setting wins.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    int argc = 0;
    char** argv = nullptr;
    check_mpi(MPI_Init_thread(&argc, &argv, options.required_thread_level, &provided_),
              "MPI_Init_thread");
    owns_init_ = true;
  }
  thread_note_ = describe_thread_level(options.required_thread_level, provided_);
  if (spans_nodes_ && provided_ >= MPI_THREAD_MULTIPLE)
    thread_note_ +=
        "; the job spans nodes, so this rank's MPI calls are serialized through one mutex "
        "all the same (Open MPI's osc/ucx deadlocks when two threads issue RMA at once)";
  if (provided_ < options.required_thread_level)
    log::warn("MPI thread level: {}", thread_note_);
  else
    log::debug("MPI thread level: {}", thread_note_);

  // Errors on these communicators come back as codes, turned into pypto
  // errors with MPI's own text, instead of killing the job from inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &world_comm_), "MPI_Comm_dup(MPI_COMM_WORLD)");
  MPI_Comm_set_errhandler(world_comm_, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(world_comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(world_comm_, &world_), "MPI_Comm_size");
  check_mpi(
      MPI_Comm_split_type(world_comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_),
      "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  MPI_Comm_set_errhandler(node_comm_, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(node_comm_, &node_rank_), "MPI_Comm_rank(node)");
  check_mpi(MPI_Comm_size(node_comm_, &node_size_), "MPI_Comm_size(node)");

  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  check_mpi(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
  host_.assign(name, len);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  if (world_comm_ != MPI_COMM_NULL) MPI_Comm_free(&world_comm_);
  if (owns_init_) MPI_Finalize();
}

}  // namespace pypto::rank
