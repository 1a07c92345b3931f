// The MPI peer of bench/l3_allreduce_bench (docs/performance.md, "L3
// runtime"): MPI_Allreduce(MPI_IN_PLACE, MPI_FLOAT, MPI_SUM) of --bytes
// (default 16 MiB) per rank, nccl-tests style. The buffer is allocated and
// touched once and reused; one checked call (every element must be the sum
// over ranks), --warmup untimed calls, then --iters timed calls, each after
// an MPI_Barrier; a call's time is the max over ranks (MPI_Wtime around the
// call, reduced with MPI_MAX). Rank 0 prints
//   mpi_allreduce world=W bytes=B iters=N median_ms=.. min_ms=.. busbw_gbs=.. times_ms=a,b,..
// busbw = bytes / time * 2 (W - 1) / W (GB/s = 1e9 bytes/s), of the median.
// Run: mpirun --allow-run-as-root --oversubscribe --bind-to none -n W mpi_allreduce_bench
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  long bytes = 16L << 20;
  int warmup = 3, iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--bytes") bytes = std::atol(argv[i + 1]);
    else if (flag == "--warmup") warmup = std::atoi(argv[i + 1]);
    else if (flag == "--iters") iters = std::atoi(argv[i + 1]);
  }
  const size_t n = size_t(bytes) / sizeof(float);
  std::vector<float> buffer(n);
  // Checked once: small integers, so every sum is exact.
  for (size_t i = 0; i < n; ++i) buffer[i] = float((i + size_t(rank)) % 17);
  MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  long bad = 0;
  for (size_t i = 0; i < n; ++i) {
    float expected = 0;
    for (int r = 0; r < world; ++r) expected += float((i + size_t(r)) % 17);
    if (buffer[i] != expected) ++bad;
  }
  long bad_total = 0;
  MPI_Reduce(&bad, &bad_total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  // Zeros from here on: repeated in-place sums stay finite (same work).
  std::memset(buffer.data(), 0, n * sizeof(float));
  for (int i = 0; i < warmup; ++i)
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double local = MPI_Wtime() - start;
    double slowest = 0;
    MPI_Reduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    times.push_back(slowest * 1e3);
  }
  if (rank == 0) {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const double med = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                         : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
    const double busbw = double(bytes) / (med * 1e-3) * 2.0 * (world - 1) / world / 1e9;
    std::string list;
    char text[32];
    for (double t : times) {
      std::snprintf(text, sizeof text, "%.3f", t);
      list += (list.empty() ? "" : ",") + std::string(text);
    }
    std::printf("mpi_allreduce world=%d bytes=%ld iters=%d check=%s median_ms=%.3f min_ms=%.3f "
                "busbw_gbs=%.3f times_ms=%s\n",
                world, bytes, iters, bad_total ? "WRONG" : "ok", med, sorted.front(), busbw,
                list.c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
  return bad_total ? 1 : 0;
}
