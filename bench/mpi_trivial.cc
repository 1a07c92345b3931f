// The smallest MPI program: MPI_Init, MPI_Barrier, MPI_Finalize. The baseline
// of bench/l3_launch_bench: what a bare `mpirun -n 8` costs on this host.
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
