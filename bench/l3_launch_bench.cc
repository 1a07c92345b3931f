// Whole-command cost of an L3 run: `pypto-coord run` of the 8-rank allreduce
// fixture with warm stores, against a bare `mpirun -n 8` of the trivial MPI
// program (bench/mpi_trivial.cc: MPI_Init, MPI_Barrier, MPI_Finalize) with the
// flags pypto-coord passes (--allow-run-as-root --oversubscribe --bind-to
// none), in the same run (docs/performance.md, "L3 runtime"). Target:
// pypto-coord <= 1.5x the bare mpirun.
//
// The build directory is copied into a scratch directory (the run writes
// outputs/, dfx_outputs/ and report/ into it); the agents use a blob store of
// their own there ($PYPTO_BLOB_STORE, binaries in the sibling bin/). One run
// with --validate warms both stores (and the page cache) and checks the
// result; then --reps times: the bare mpirun, then pypto-coord run (no
// --validate), each timed from spawn to exit (wall clock). Their output goes
// to <scratch>/log.
//
// Output:
//   l3_launch impl=mpirun_trivial rep=R wall_ms=..
//   l3_launch impl=pypto_coord rep=R wall_ms=..
//   l3_launch summary world=8 mpirun_ms=.. coord_ms=.. ratio=..
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/l3_bench_util.h"
#include "launch/command_words.h"
#include "pypto/error.h"

namespace pypto::bench {
namespace {

double timed_ms(const std::vector<std::string>& argv, const fs::path& log, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  const int code = run_process(argv, log);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (code != 0)
    throw InfraError(std::string(what) + " exited with " + std::to_string(code) + "; see " +
                     log.string());
  return ms;
}

}  // namespace
}  // namespace pypto::bench

int main(int argc, char** argv) {
  using namespace pypto::bench;
  CLI::App app{"l3_launch_bench: pypto-coord run of an L3 build vs a bare mpirun"};
  std::string build, coord = PYPTO_COORD_BIN, mpirun = PYPTO_MPIEXEC, trivial;
  int reps = 7;
  app.add_option("build", build, "L3 build directory (default fixture: tests/fixtures/l3/allreduce_w8)")
      ->required();
  app.add_option("--reps", reps, "timed runs of each");
  app.add_option("--coord", coord, "pypto-coord");
  app.add_option("--mpirun", mpirun, "mpirun");
  app.add_option("--trivial", trivial, "mpi_trivial (default: next to this program)");
  std::string hostfile, mpirun_args;
  app.add_option("--hostfile", hostfile, "spread the ranks of both over this hostfile's hosts");
  app.add_option("--mpirun-args", mpirun_args,
                 "with --hostfile: more mpirun arguments for both (e.g. an rsh agent)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (trivial.empty())
      trivial = (fs::canonical("/proc/self/exe").parent_path() / "mpi_trivial").string();
    const ScratchDir scratch_dir("l3_launch_bench");
    const fs::path& scratch = scratch_dir.path();
    l3_bench_env(scratch);
    const fs::path dir = scratch / fs::path(build).filename();
    fs::copy(build, dir, fs::copy_options::recursive);
    for (const char* product : {"cache", "outputs", "dfx_outputs", "report"}) fs::remove_all(dir / product);
    const fs::path log = scratch / "log";
    // World size from distributed_meta.json ("world_size": N).
    int world = 8;
    {
      FILE* meta = std::fopen((dir / "distributed_meta.json").c_str(), "r");
      if (meta) {
        std::string text;
        char buffer[4096];
        while (size_t got = std::fread(buffer, 1, sizeof buffer, meta)) text.append(buffer, got);
        std::fclose(meta);
        const size_t at = text.find("\"world_size\":");
        if (at != std::string::npos) world = std::atoi(text.c_str() + at + 13);
      }
    }
    std::vector<std::string> bare = {mpirun, "--allow-run-as-root", "--oversubscribe",
                                     "--bind-to", "none"};
    std::vector<std::string> run = {coord, "run", dir.string()};
    if (!hostfile.empty()) {
      // The same hosts and launcher for both; pypto-coord adds nothing else.
      bare.insert(bare.end(), {"--hostfile", hostfile});
      for (const std::string& word : pypto::launch::split_command_words(mpirun_args)) bare.push_back(word);
      run.insert(run.end(), {"--hostfile", hostfile, "--mpirun-args", mpirun_args});
    }
    bare.insert(bare.end(), {"-n", std::to_string(world), trivial});
    std::vector<std::string> warm = run;
    warm.push_back("--validate");
    std::printf("# l3_launch_bench: %s (world %d), reps=%d, PYPTO_BLOB_STORE=%s, log %s\n",
                build.c_str(), world, reps, std::getenv("PYPTO_BLOB_STORE"), log.c_str());
    const double cold = timed_ms(warm, log, "pypto-coord run --validate (warm-up)");
    timed_ms(bare, log, "mpirun (warm-up)");
    std::printf("# warm-up: pypto-coord run --validate (cold stores) %.0f ms: passed\n", cold);
    std::vector<double> bare_ms, coord_ms;
    for (int rep = 0; rep < reps; ++rep) {
      bare_ms.push_back(timed_ms(bare, log, "mpirun"));
      std::printf("l3_launch impl=mpirun_trivial world=%d rep=%d wall_ms=%.1f\n", world, rep,
                  bare_ms.back());
      coord_ms.push_back(timed_ms(run, log, "pypto-coord run"));
      std::printf("l3_launch impl=pypto_coord world=%d rep=%d wall_ms=%.1f ratio=%.2f\n", world,
                  rep, coord_ms.back(), coord_ms.back() / bare_ms.back());
      std::fflush(stdout);
    }
    const double b = median(bare_ms), c = median(coord_ms);
    std::printf("l3_launch summary world=%d reps=%d mpirun_ms=%.1f coord_ms=%.1f ratio=%.2f "
                "mpirun_all_ms=%s coord_all_ms=%s\n",
                world, reps, b, c, c / b, join(bare_ms, "%.0f").c_str(),
                join(coord_ms, "%.0f").c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "l3_launch_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
