// The MPI peer of bench/collectives_bench (docs/performance.md, "Library
// collectives"): one of MPI_Allreduce (in place, MPI_SUM), MPI_Allgather or
// MPI_Reduce_scatter_block (MPI_SUM) of MPI_FLOAT, nccl-tests style, where
// --bytes (default 16 MiB) is what each rank holds: the allreduce's buffer,
// the allgather's output (each rank sends bytes / W), the reduce-scatter's
// input (each rank receives bytes / W). Buffers are allocated and touched
// once; one checked call (small integers, every sum exact), --warmup untimed
// calls, --iters timed calls each after an MPI_Barrier; a call's time is the
// max over ranks (MPI_Wtime, reduced with MPI_MAX). Rank 0 prints
//   mpi_collective op=OP world=W bytes=B iters=N check=ok median_ms=.. min_ms=.. times_ms=a,b,..
// Run: mpirun --allow-run-as-root --oversubscribe --bind-to none -n W mpi_collectives_bench --op OP
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

float value(size_t i, int rank) { return float((i + size_t(rank)) % 17); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  long bytes = 16L << 20;
  int warmup = 3, iters = 20;
  std::string op = "allreduce";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--bytes") bytes = std::atol(argv[i + 1]);
    else if (flag == "--warmup") warmup = std::atoi(argv[i + 1]);
    else if (flag == "--iters") iters = std::atoi(argv[i + 1]);
    else if (flag == "--op") op = argv[i + 1];
  }
  if (op != "allreduce" && op != "allgather" && op != "reduce_scatter") {
    if (rank == 0)
      std::fprintf(stderr, "mpi_collectives_bench: --op %s: expected allreduce, allgather or "
                           "reduce_scatter\n", op.c_str());
    MPI_Finalize();
    return 2;
  }
  const size_t n = size_t(bytes) / sizeof(float);  // elements each rank holds
  const size_t block = n / size_t(world);          // allgather / reduce-scatter block
  std::vector<float> a(n), b(op == "allreduce" ? 0 : n);
  auto call = [&] {
    if (op == "allreduce")
      MPI_Allreduce(MPI_IN_PLACE, a.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (op == "allgather")  // a: the block this rank sends, b: every rank's blocks
      MPI_Allgather(a.data(), int(block), MPI_FLOAT, b.data(), int(block), MPI_FLOAT,
                    MPI_COMM_WORLD);
    else  // a: every block, b: this rank's reduced block
      MPI_Reduce_scatter_block(a.data(), b.data(), int(block), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  for (size_t i = 0; i < n; ++i) a[i] = value(i, rank);
  std::fill(b.begin(), b.end(), 1.0f);
  call();
  long bad = 0;
  if (op == "allreduce") {
    for (size_t i = 0; i < n; ++i) {
      float expected = 0;
      for (int r = 0; r < world; ++r) expected += value(i, r);
      if (a[i] != expected) ++bad;
    }
  } else if (op == "allgather") {
    for (size_t i = 0; i < block * size_t(world); ++i)
      if (b[i] != value(i % block, int(i / block))) ++bad;
  } else {
    for (size_t i = 0; i < block; ++i) {
      float expected = 0;
      for (int r = 0; r < world; ++r) expected += value(size_t(rank) * block + i, r);
      if (b[i] != expected) ++bad;
    }
  }
  long bad_total = 0;
  MPI_Reduce(&bad, &bad_total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  // Zeros from here on: repeated in-place sums stay finite (same work).
  std::memset(a.data(), 0, n * sizeof(float));
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    call();
    const double local = MPI_Wtime() - start;
    double slowest = 0;
    MPI_Reduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    times.push_back(slowest * 1e3);
  }
  if (rank == 0) {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const double med = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                         : 0.5 * (sorted[sorted.size() / 2 - 1] +
                                                  sorted[sorted.size() / 2]);
    std::string list;
    char text[32];
    for (double t : times) {
      std::snprintf(text, sizeof text, "%.3f", t);
      list += (list.empty() ? "" : ",") + std::string(text);
    }
    std::printf("mpi_collective op=%s world=%d bytes=%ld iters=%d check=%s median_ms=%.3f "
                "min_ms=%.3f times_ms=%s\n",
                op.c_str(), world, bytes, iters, bad_total ? "WRONG" : "ok", med, sorted.front(),
                list.c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
  return bad_total ? 1 : 0;
}
