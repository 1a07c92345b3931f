#include "rank_agent/one_sided_env.h"

#include <cstdlib>

namespace pypto::rank {

namespace {

long env_long(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  return (end != nullptr && *end == '\0' && n > 0) ? n : -1;
}

}  // namespace

OneSidedChoice choose_one_sided_component() {
  OneSidedChoice choice;
  const long world = env_long("OMPI_COMM_WORLD_SIZE");
  const long local = env_long("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (world < 0 || local < 0) {
    choice.note = "not launched by Open MPI's mpirun: the MPI's own one-sided component is used";
    return choice;
  }
  choice.spans_nodes = local < world;
  if (!choice.spans_nodes) {
    choice.note = "every rank shares one node: windows use shared memory (osc/sm)";
    return choice;
  }
  if (const char* osc = std::getenv("OMPI_MCA_osc"); osc != nullptr && *osc != '\0') {
    choice.note = std::string("the job spans nodes; OMPI_MCA_osc=") + osc +
                  " was set by the user and is kept";
    return choice;
  }
  setenv("OMPI_MCA_osc", "sm,ucx", 0);
  // osc/ucx only takes a window when UCX may use the transports this machine
  // has (TCP without an RDMA network); Open MPI's default list names RDMA ones.
  if (std::getenv("OMPI_MCA_opal_common_ucx_tls") == nullptr &&
      std::getenv("OMPI_MCA_osc_ucx_tls") == nullptr)
    setenv("OMPI_MCA_opal_common_ucx_tls", "any", 0);
  choice.configured = true;
  choice.note =
      "the job spans nodes: windows within a node use shared memory (osc/sm), windows across "
      "nodes MPI RMA over UCX (OMPI_MCA_osc=sm,ucx)";
  return choice;
}

}  // namespace pypto::rank
