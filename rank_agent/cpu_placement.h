// Where an agent's threads run on its host. Each agent runs its kernels on
// its own threads; left alone, the scheduler often puts two ranks' kernel
// threads on one CPU for a whole collective while another CPU idles, which
// doubled the library collectives' kernel time at world 2
// (docs/performance.md, "Library collectives"). So an agent that nobody has
// bound (mpirun --bind-to, taskset: its CPU mask is every online CPU) takes
// a share of the host's CPUs by its local rank, as mpirun's per-node binding
// would, but only in whole CPUs per rank and with the shares balanced.
// PYPTO_CPU_PLACEMENT=none leaves the agents unbound (docs/commands.md).
#pragma once

#include <string>
#include <vector>

namespace pypto::rank {

// The CPUs of `allowed` (ascending) that local rank `local_rank` of
// `local_size` takes: with at least as many CPUs as local ranks a contiguous
// share of them (sizes differing by at most one), with fewer CPUs one of
// them, round robin.
std::vector<int> cpu_share(int local_rank, int local_size, const std::vector<int>& allowed);

// Binds this process (and the threads it starts from now on) to its share,
// from Open MPI's OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE. Returns what it
// did, for the agent's debug log: the CPUs taken, or why it left the
// placement alone (PYPTO_CPU_PLACEMENT=none, not started by mpirun, already
// bound). Throws UsageError on a PYPTO_CPU_PLACEMENT other than auto / none.
std::string place_on_cpus();

}  // namespace pypto::rank
