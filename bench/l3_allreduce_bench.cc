// 16 MiB fp32 allreduce through the L3 runtime against MPI_Allreduce, in the
// same run (docs/performance.md, "L3 runtime"). Target: runtime busbw >= 2x
// MPI's.
//
// Runtime: per world W, a DistributedWorker prepared once with the
// allreduce16m_w<W> bench build (tests/fixtures/make_l3.py --bench-out); one
// run with the golden inputs is checked bit for bit against golden/expected
// (windows reset before it); then --warmup untimed and --rounds timed runs on
// the same worker with reset_windows = false (the kernel copies x into the
// window first, so nothing needs zeroing; the RESET round trip would not be in
// the timed part anyway) and swimlane level 1, whose task records carry
// CLOCK_MONOTONIC start/end of the kernel on each rank (one host: one clock).
//
//   kernel time of a round = max over ranks of the task's end
//                          - max over ranks of the task's start,
//
// i.e. from the moment the last rank entered the kernel (what MPI's barrier
// before each call gives MPI) until the last rank returned. The kernel copies
// x (the dispatch's input tensor) into the window first and the result out to
// y last; MPI_IN_PLACE does neither, so the runtime pays 2 extra 16 MiB copies.
// Also reported: the agents' "run" phase (ChipWorker::run, max over ranks),
// which in addition counts each rank's wait for the later ranks to arrive
// (the coordinator ships each rank its 16 MiB input one after the other), and
// the wall time of a whole run() (shipping W x 16 MiB in and out over the
// control plane, tensor set-up, DFX files).
//
// MPI: `mpirun --allow-run-as-root --oversubscribe --bind-to none -n W
// mpi_allreduce_bench` (bench/mpi_allreduce_bench.cc) started by this
// program, alternating with the runtime's rounds, --reps times per world.
//
// busbw (nccl-tests): algbw = 16 MiB / time, busbw = algbw * 2 (W - 1) / W,
// in GB/s (1e9 bytes/s), of the median time.
//
// Output:
//   l3_allreduce impl=mpi world=W rep=R median_ms=.. busbw_gbs=..
//   l3_allreduce impl=runtime world=W rep=R kernel_ms=.. busbw_gbs=.. run_max_ms=.. wall_ms=..
//   l3_allreduce summary world=W mpi_busbw_gbs=.. runtime_busbw_gbs=.. ratio=..
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/l3_bench_util.h"
#include "common/log.h"
#include "coordinator/program_inputs.h"
#include "launch/command_words.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/distributed_worker.h"
#include "pypto/error.h"
#include "pypto/golden_spec.h"
#include "pypto/npy.h"

namespace pypto::bench {
namespace {

constexpr double kBytes = 16.0 * 1024 * 1024;

double busbw_gbs(double ms, int world) {
  return kBytes / (ms * 1e-3) * 2.0 * (world - 1) / world / 1e9;
}

int64_t timing_ns(const DispatchOutcome& d, const std::string& phase) {
  for (const auto& t : d.timings)
    if (t.phase == phase) return t.ns;
  return 0;
}

// The MPI side: one mpirun, its median over `iters` timed calls.
// `hosts`: "" on one host, else " --hostfile F <mpirun args>" (both sides alike).
double run_mpi(const std::string& mpirun, const std::string& mpi_bench, int world, int iters,
               int rep, const std::string& hosts) {
  const std::string command = mpirun + " --allow-run-as-root --oversubscribe --bind-to none" +
                              hosts + " -n " + std::to_string(world) + " " + mpi_bench +
                              " --iters " +
                              std::to_string(iters) + " --warmup 3 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw InfraError("cannot run " + command);
  std::string out;
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, got);
  const int status = ::pclose(pipe);
  const size_t at = out.find("median_ms=");
  if (status != 0 || at == std::string::npos || out.find("check=ok") == std::string::npos)
    throw InfraError("MPI benchmark failed (" + command + "):\n" + out);
  const double ms = std::atof(out.c_str() + at + 10);
  std::printf("l3_allreduce impl=mpi world=%d rep=%d iters=%d median_ms=%.3f busbw_gbs=%.3f\n",
              world, rep, iters, ms, busbw_gbs(ms, world));
  std::fflush(stdout);
  return ms;
}

// Swimlane task start/end (CLOCK_MONOTONIC ns) of a dispatch's single task.
std::pair<int64_t, int64_t> task_span(const DispatchOutcome& d) {
  for (const auto& [path, content] : d.dfx_files) {
    if (fs::path(path).filename() != "chip_swimlane_records.json") continue;
    const nlohmann::json records = nlohmann::json::parse(content);
    const auto& tasks = records.at("tasks");
    int64_t start = INT64_MAX, end = 0;
    for (const auto& task : tasks) {
      start = std::min(start, task.at("start_ns").get<int64_t>());
      end = std::max(end, task.at("end_ns").get<int64_t>());
    }
    return {start, end};
  }
  throw InfraError("rank " + std::to_string(d.rank) + " returned no chip_swimlane_records.json");
}

struct Summary {
  int world;
  double mpi_ms, kernel_ms, run_ms, wall_ms;
};

struct HostsOption {
  std::string hostfile;     // empty: every rank on this host
  std::string mpirun_args;  // e.g. the rsh agent of simulated hosts
  std::string mpi_flags() const {
    return hostfile.empty() ? "" : " --hostfile " + hostfile + " " + mpirun_args;
  }
};

Summary bench_world(const fs::path& build_dir, int rounds, int warmup, int reps, int mpi_iters,
                    const std::string& mpirun, const std::string& mpi_bench,
                    const HostsOption& hosts) {
  const DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(build_dir);
  const int world = static_cast<int>(program.world_size());
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = fs::path(std::getenv("PYPTO_RANK"));
  if (!hosts.hostfile.empty()) {
    options.mpirun.hostfile = hosts.hostfile;
    options.mpirun.mpirun_args = launch::split_command_words(hosts.mpirun_args);
  }
  // The agents sit idle while MPI runs: do not count that as a lost coordinator.
  options.heartbeat_timeout = std::chrono::minutes(30);
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);
  std::printf("# %s: world %d, launch %.0f ms, prepare %.0f ms\n", build_dir.c_str(), world,
              worker->prepare_report().launch_ms, worker->prepare_report().prepare_ms);

  std::vector<Tensor> args = coord::prepare_arguments(program, {}).tensors;
  size_t y = 0;
  while (!program.params()[y].is_output()) ++y;
  {
    DistributedRunOptions checked;  // reset_windows = true, DFX off
    worker->run(program, args, checked);
    const Tensor expected = read_npy(GoldenSpec::expected_path(program.dir(), program.params()[y].name));
    if (expected.nbytes() != args[y].nbytes() ||
        std::memcmp(expected.data(), args[y].data(), expected.nbytes()) != 0)
      throw ValidationError("WRONG RESULT: output y of " + build_dir.string() +
                            " differs from golden/expected");
    std::printf("# %s: output y matches golden/expected (bit for bit)\n", build_dir.c_str());
  }

  DistributedRunOptions timed;
  timed.reset_windows = false;
  timed.config.enable_chip_swimlane = 1;
  std::vector<double> mpi_reps, kernel_reps, run_reps, wall_reps;
  for (int rep = 0; rep < reps; ++rep) {
    mpi_reps.push_back(run_mpi(mpirun, mpi_bench, world, mpi_iters, rep, hosts.mpi_flags()));
    for (int i = 0; i < warmup; ++i) worker->run(program, args, timed);
    std::vector<double> kernel_ms, run_ms, wall_ms;
    for (int i = 0; i < rounds; ++i) {
      const DistributedRunResult result = worker->run(program, args, timed);
      int64_t last_start = 0, last_end = 0;
      double run = 0;
      for (const DispatchOutcome& d : result.dispatches) {
        const auto [start, end] = task_span(d);
        // Onto the coordinator's clock: ranks of other hosts have their own.
        const int64_t offset =
            worker->prepare_report().ranks[static_cast<size_t>(d.rank)].clock_offset_ns;
        last_start = std::max(last_start, start - offset);
        last_end = std::max(last_end, end - offset);
        run = std::max(run, double(timing_ns(d, "run")) / 1e6);
      }
      kernel_ms.push_back(double(last_end - last_start) / 1e6);
      run_ms.push_back(run);
      wall_ms.push_back(result.wall_ms);
    }
    kernel_reps.push_back(median(kernel_ms));
    run_reps.push_back(median(run_ms));
    wall_reps.push_back(median(wall_ms));
    std::printf("l3_allreduce impl=runtime world=%d rep=%d rounds=%d kernel_ms=%.3f "
                "busbw_gbs=%.3f min_kernel_ms=%.3f run_max_ms=%.3f run_busbw_gbs=%.3f "
                "wall_ms=%.1f kernel_all_ms=%s\n",
                world, rep, rounds, kernel_reps.back(), busbw_gbs(kernel_reps.back(), world),
                min_of(kernel_ms), run_reps.back(), busbw_gbs(run_reps.back(), world),
                wall_reps.back(), join(kernel_ms, "%.2f").c_str());
    std::fflush(stdout);
  }
  worker->close();
  return {world, median(mpi_reps), median(kernel_reps), median(run_reps), median(wall_reps)};
}

}  // namespace
}  // namespace pypto::bench

int main(int argc, char** argv) {
  using namespace pypto::bench;
  CLI::App app{"l3_allreduce_bench: 16 MiB fp32 allreduce, runtime vs MPI_Allreduce"};
  std::vector<std::string> builds;
  int rounds = 10, warmup = 2, reps = 3, mpi_iters = 20;
  std::string mpi_bench, mpirun = PYPTO_MPIEXEC;
  app.add_option("builds", builds, "allreduce16m_w<W> bench build directories")->required();
  app.add_option("--rounds", rounds, "timed runtime rounds per repetition");
  app.add_option("--warmup", warmup, "untimed runtime rounds per repetition");
  app.add_option("--reps", reps, "repetitions per world (each: one mpirun, then the rounds)");
  app.add_option("--mpi-iters", mpi_iters, "timed MPI_Allreduce calls per mpirun");
  app.add_option("--mpi-bench", mpi_bench, "mpi_allreduce_bench (default: next to this program)");
  app.add_option("--mpirun", mpirun, "mpirun to start the MPI side with");
  HostsOption hosts;
  app.add_option("--hostfile", hosts.hostfile,
                 "spread the ranks of both sides over the hosts of this hostfile");
  app.add_option("--mpirun-args", hosts.mpirun_args,
                 "with --hostfile: more mpirun arguments for both sides (e.g. an rsh agent)");
  CLI11_PARSE(app, argc, argv);
  try {
    pypto::log::init(std::string("warn"));
    if (mpi_bench.empty())
      mpi_bench = (fs::canonical("/proc/self/exe").parent_path() / "mpi_allreduce_bench").string();
    const ScratchDir scratch_dir("l3_allreduce_bench");
    const fs::path& scratch = scratch_dir.path();
    l3_bench_env(scratch);
    std::printf("# l3_allreduce_bench: 16 MiB fp32 per rank, rounds=%d warmup=%d reps=%d "
                "mpi_iters=%d; runtime timed by swimlane level 1 (max end - max start over "
                "ranks), windows not reset between timed rounds\n",
                rounds, warmup, reps, mpi_iters);
    std::vector<Summary> summaries;
    for (const std::string& build : builds)
      summaries.push_back(bench_world(build, rounds, warmup, reps, mpi_iters, mpirun, mpi_bench, hosts));
    for (const Summary& s : summaries) {
      const double mpi_bw = busbw_gbs(s.mpi_ms, s.world), rt_bw = busbw_gbs(s.kernel_ms, s.world);
      std::printf("l3_allreduce summary world=%d mpi_ms=%.3f mpi_busbw_gbs=%.3f runtime_kernel_ms=%.3f "
                  "runtime_busbw_gbs=%.3f ratio=%.2f runtime_run_max_ms=%.3f run_ratio=%.2f "
                  "runtime_wall_ms=%.1f\n",
                  s.world, s.mpi_ms, mpi_bw, s.kernel_ms, rt_bw, rt_bw / mpi_bw, s.run_ms,
                  busbw_gbs(s.run_ms, s.world) / mpi_bw, s.wall_ms);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "l3_allreduce_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
