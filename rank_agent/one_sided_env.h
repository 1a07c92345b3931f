// Which MPI one-sided component an agent's windows get across nodes
// (docs/windows.md "Across nodes").
//
// Open MPI 4.1 (Debian 12's) picks osc/rdma or osc/pt2pt for a window whose
// members span nodes over TCP: osc/rdma cannot make such a window, and
// osc/pt2pt refuses MPI_THREAD_MULTIPLE. osc/ucx over UCX's TCP transport
// can, with MPI_THREAD_MULTIPLE; it is only chosen when UCX may use any
// transport. So before MPI_Init a rank of a job that spans nodes asks for
// osc/sm (windows within a node) and osc/ucx (the others) through Open MPI's
// environment, unless the user already chose. The choice is the same on
// every rank: it depends only on the job's shape.
#pragma once

#include <string>

namespace pypto::rank {

struct OneSidedChoice {
  bool spans_nodes = false;  // the job has ranks on more than one node
  bool configured = false;   // this function set OMPI_MCA_* variables
  std::string note;          // one sentence for the log: what and why
};

// Reads OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_SIZE (set by Open MPI's
// launcher for every rank); without them (another MPI, a singleton) it does
// nothing. For a job spanning nodes it sets, when unset, OMPI_MCA_osc=sm,ucx
// and OMPI_MCA_opal_common_ucx_tls=any. A user's OMPI_MCA_osc wins.
// Call it before MPI_Init.
OneSidedChoice choose_one_sided_component();

}  // namespace pypto::rank
