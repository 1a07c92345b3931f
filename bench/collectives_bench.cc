// The library collectives called from .ptl (compiler/lib/collectives.ptl)
// against their MPI peers, 16 MiB fp32 per rank, in the same run, interleaved
// (docs/performance.md, "L3 runtime").
//
// Per world W (--worlds, default 2,4,8) it writes three one-line programs
//   allreduce       host main(x: inout f32[WORLD, 1024, 4096]) { allreduce_sum(x) }
//   allgather       host main(x: in f32[WORLD, 1024 / W, 4096], y: out f32[WORLD, 1024, 4096])
//                       { allgather(x, y) }
//   reduce_scatter  host main(x: in f32[WORLD, 1024, 4096], y: out f32[WORLD, 1024 / W, 4096])
//                       { reduce_scatter(x, y) }
// (--ops: some of them), compiles them with pypto-compile (--no-golden; -L DIR
// puts DIR's collectives.ptl before the standard library's, to time a changed
// library against the standard one) into a scratch directory,
// prepares one DistributedWorker for them, runs each once and checks the
// result element by element against a direct computation (WRONG RESULT, exit
// 1, otherwise), then per repetition (--reps) and op: one mpirun of
// mpi_collectives_bench (--warmup untimed, --mpi-iters timed calls), a memcpy of 16 MiB
// (--memcpy-iters, median), --warmup untimed and --rounds timed runs of the
// runtime on the same worker, on resident tensors (uploaded once: no round
// ships a tensor), with reset_windows = false (the library's windows need no
// reset) and no DFX:
//
//   kernel time of a round = max over ranks of the rank's "run" phase
//
// (the chip runtime's run of the dispatch: its orchestration, the kernel, and
// the kernel's wait for peers that entered later), an upper bound of the
// collective itself. The data is in the window before the kernel starts (in
// place), as MPI_IN_PLACE / MPI's own buffers are for MPI. Then
// --traced-rounds more rounds at swimlane level 1 give
//
//   span = max over ranks of the task's end - max over ranks of the task's start
//
// (CLOCK_MONOTONIC, one host): from the moment the last rank entered the
// kernel until the last rank returned. The traced rounds pay for the DFX that
// measures them (each rank writes and ships its records while peers may
// still be in the kernel: up to ~2x at world 8 on 2 CPUs), so the span is
// printed beside the kernel time, not used for the ratios. Also printed: the
// wall time of a run() (the user's round on resident data, untraced), and the
// load average (/proc/loadavg) beside every figure. At the end each op runs
// once more on freshly uploaded inputs and kept windows and is checked again.
//
// Bus bandwidth (nccl-tests), S = 16 MiB: allreduce busbw = S / t * 2(W-1)/W;
// allgather and reduce_scatter busbw = S / t * (W-1)/W. The memory-bandwidth
// bound: each rank must move busbw * t bytes; at the memcpy bandwidth of the
// same repetition (16 MiB / memcpy time) that takes bound_ms; fraction =
// bound_ms / kernel_ms = busbw / memcpy bandwidth (target >= 0.5).
//
// Output (key=value after the first words):
//   collectives impl=mpi op=OP world=W rep=R median_ms=.. busbw_gbs=.. load=..
//   collectives impl=memcpy world=W rep=R median_ms=.. gbs=.. load=..
//   collectives impl=runtime op=OP world=W rep=R kernel_ms=.. busbw_gbs=.. bound_ms=..
//       fraction=.. traced_span_ms=.. wall_ms=.. load=.. kernel_all_ms=..
//   collectives summary op=OP world=W mpi_busbw_gbs=.. runtime_busbw_gbs=.. ratio=..
//       fraction=.. load_max=..
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/l3_bench_util.h"
#include "common/log.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/distributed_worker.h"
#include "pypto/error.h"

namespace pypto::bench {
namespace {

constexpr int64_t kRows = 1024, kCols = 4096;  // 16 MiB of f32 per rank
constexpr double kBytes = double(kRows * kCols * 4);
const std::vector<std::string> kAllOps = {"allreduce", "allgather", "reduce_scatter"};

double bus_factor(const std::string& op, int world) {
  return (op == "allreduce" ? 2.0 : 1.0) * (world - 1) / world;
}
double busbw_gbs(const std::string& op, double ms, int world) {
  return kBytes / (ms * 1e-3) * bus_factor(op, world) / 1e9;
}

std::string program_text(const std::string& op, int world) {
  const std::string full = "f32[WORLD, " + std::to_string(kRows) + ", " + std::to_string(kCols) + "]";
  const std::string part =
      "f32[WORLD, " + std::to_string(kRows / world) + ", " + std::to_string(kCols) + "]";
  std::string text = "import \"collectives.ptl\"\n";
  if (op == "allreduce") return text + "host main(x: inout " + full + ") { allreduce_sum(x) }\n";
  if (op == "allgather")
    return text + "host main(x: in " + part + ", y: out " + full + ") { allgather(x, y) }\n";
  return text + "host main(x: in " + full + ", y: out " + part + ") { reduce_scatter(x, y) }\n";
}

// Small integers (exact sums), different per rank and element.
float input_value(int64_t rank, int64_t element) { return float((element + 3 * rank) % 17); }

std::vector<Tensor> inputs_of(const DistributedCompiledProgram& program) {
  std::vector<Tensor> args;
  for (const ParamInfo& p : program.params()) {
    Tensor t = Tensor::empty(p.dtype, p.shape);
    if (p.is_input()) {
      float* v = t.data_as<float>();
      const int64_t per_rank = t.numel() / p.shape[0];
      for (int64_t e = 0; e < t.numel(); ++e) v[e] = input_value(e / per_rank, e % per_rank);
    }
    args.push_back(std::move(t));
  }
  return args;
}

// inputs_of's tensors as stacked resident tensors of `worker` (rank r holds [r]).
std::vector<RunArgument> resident_inputs(DistributedWorker& worker,
                                         const DistributedCompiledProgram& program) {
  std::vector<RunArgument> out;
  for (const Tensor& t : inputs_of(program)) {
    ResidentTensor r =
        worker.alloc_stacked_tensor(t.dtype(), Shape(t.shape().begin() + 1, t.shape().end()));
    worker.copy_to(r, t);
    out.push_back(r);
  }
  return out;
}

// The op's result against a direct computation from inputs_of's values.
void check(const std::string& op, int world, const std::vector<Tensor>& args) {
  const Tensor& out = op == "allreduce" ? args[0] : args[1];
  const float* y = out.data_as<float>();
  const int64_t per_rank = out.numel() / world;
  int64_t bad = 0;
  for (int64_t r = 0; r < world; ++r)
    for (int64_t e = 0; e < per_rank; ++e) {
      float expected = 0;
      if (op == "allreduce") {
        for (int64_t s = 0; s < world; ++s) expected += input_value(s, e);
      } else if (op == "allgather") {
        const int64_t block = per_rank / world;  // elements of one rank's x
        expected = input_value(e / block, e % block);
      } else {
        for (int64_t s = 0; s < world; ++s) expected += input_value(s, r * per_rank + e);
      }
      if (y[r * per_rank + e] != expected) ++bad;
    }
  if (bad)
    throw ValidationError("WRONG RESULT: " + op + " at world " + std::to_string(world) + ": " +
                          std::to_string(bad) + " elements differ from the direct computation");
}

double run_mpi(const std::string& mpirun, const std::string& mpi_bench, const std::string& op,
               int world, int iters, int warmup) {
  const std::string command = mpirun + " --allow-run-as-root --oversubscribe --bind-to none -n " +
                              std::to_string(world) + " " + mpi_bench + " --op " + op +
                              " --iters " + std::to_string(iters) + " --warmup " +
                              std::to_string(warmup) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw InfraError("cannot run " + command);
  std::string out;
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, got);
  const int status = ::pclose(pipe);
  const size_t at = out.find("median_ms=");
  if (status != 0 || at == std::string::npos || out.find("check=ok") == std::string::npos)
    throw InfraError("MPI benchmark failed (" + command + "):\n" + out);
  return std::atof(out.c_str() + at + 10);
}

// Median time of a 16 MiB memcpy between two touched buffers.
double memcpy_ms(int iters) {
  std::vector<char> a(size_t(kBytes), 1), b(size_t(kBytes), 2);
  std::vector<double> times;
  for (int i = 0; i < iters + 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= 2) times.push_back(ms);  // the first two warm the caches and pages
    std::swap(a, b);
  }
  return median(times);
}

int64_t timing_ns(const DispatchOutcome& d, const std::string& phase) {
  for (const auto& t : d.timings)
    if (t.phase == phase) return t.ns;
  return 0;
}

std::pair<int64_t, int64_t> task_span(const DispatchOutcome& d) {
  for (const auto& [path, content] : d.dfx_files) {
    if (fs::path(path).filename() != "chip_swimlane_records.json") continue;
    const nlohmann::json records = nlohmann::json::parse(content);
    int64_t start = INT64_MAX, end = 0;
    for (const auto& task : records.at("tasks")) {
      start = std::min(start, task.at("start_ns").get<int64_t>());
      end = std::max(end, task.at("end_ns").get<int64_t>());
    }
    return {start, end};
  }
  throw InfraError("rank " + std::to_string(d.rank) + " returned no chip_swimlane_records.json");
}

struct Options {
  int rounds = 10, warmup = 2, reps = 3, mpi_iters = 20, memcpy_iters = 10, traced_rounds = 3;
  std::string mpirun = PYPTO_MPIEXEC, mpi_bench, compiler = PYPTO_COMPILE_BIN;
  std::vector<std::string> ops = kAllOps;
  std::vector<std::string> lib_dirs;  // searched before the standard library: -L of pypto-compile
};

struct Figures {
  std::vector<double> mpi, kernel, fraction;
  double load_max = 0;
};

void bench_world(int world, const Options& o, const fs::path& scratch,
                 std::map<std::string, Figures>& figures) {
  const std::vector<std::string>& ops = o.ops;
  std::vector<DistributedCompiledProgram> programs;
  for (const std::string& op : ops) {
    const fs::path source = scratch / (op + "_w" + std::to_string(world) + ".ptl");
    const fs::path dir = scratch / (op + "_w" + std::to_string(world));
    std::ofstream(source) << program_text(op, world);
    std::vector<std::string> command{o.compiler, source.string(), "-o",         dir.string(),
                                     "--world",  std::to_string(world), "--no-golden"};
    for (const std::string& lib : o.lib_dirs) command.insert(command.end(), {"-L", lib});
    const int rc = run_process(command, scratch / "compile.log");
    if (rc != 0)
      throw InfraError("pypto-compile failed on " + source.string() + " (see " +
                       (scratch / "compile.log").string() + ")");
    programs.push_back(DistributedCompiledProgram::from_dir(dir));
  }
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = fs::path(std::getenv("PYPTO_RANK"));
  options.heartbeat_timeout = std::chrono::minutes(30);  // idle while MPI runs
  std::vector<const DistributedCompiledProgram*> extra;
  for (size_t i = 1; i < programs.size(); ++i) extra.push_back(&programs[i]);
  std::unique_ptr<DistributedWorker> worker =
      DistributedWorker::prepare(programs[0], options, extra);
  std::printf("# world %d: launch %.0f ms, prepare %.0f ms\n", world,
              worker->prepare_report().launch_ms, worker->prepare_report().prepare_ms);

  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<Tensor> checked = inputs_of(programs[i]);
    worker->run(programs[i], checked);  // windows reset first
    check(ops[i], world, checked);
    std::printf("# world %d: %s matches the direct computation\n", world, ops[i].c_str());
  }
  // The timed rounds run on resident tensors (docs/resident-tensors.md): nothing
  // is shipped, so no rank's control thread copies 16 MiB over the control plane
  // while a peer is still in the kernel.
  std::vector<std::vector<RunArgument>> resident(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) resident[i] = resident_inputs(*worker, programs[i]);
  DistributedRunOptions timed;
  timed.reset_windows = false;
  DistributedRunOptions traced = timed;
  traced.config.enable_chip_swimlane = 1;
  for (int rep = 0; rep < o.reps; ++rep) {
    double load = load_average();
    const double copy_ms = memcpy_ms(o.memcpy_iters);
    const double copy_gbs = kBytes / (copy_ms * 1e-3) / 1e9;
    std::printf("collectives impl=memcpy world=%d rep=%d median_ms=%.3f gbs=%.3f load=%.2f\n", world,
                rep, copy_ms, copy_gbs, load);
    for (size_t i = 0; i < ops.size(); ++i) {
      const std::string& op = ops[i];
      Figures& f = figures[op + "/" + std::to_string(world)];
      load = load_average();
      const double mpi = run_mpi(o.mpirun, o.mpi_bench, op, world, o.mpi_iters, o.warmup);
      std::printf("collectives impl=mpi op=%s world=%d rep=%d median_ms=%.3f busbw_gbs=%.3f "
                  "load=%.2f\n",
                  op.c_str(), world, rep, mpi, busbw_gbs(op, mpi, world), load);
      f.mpi.push_back(mpi);
      f.load_max = std::max(f.load_max, load);
      for (int w = 0; w < o.warmup; ++w) worker->run(programs[i], resident[i], timed);
      std::vector<double> kernel_ms, span_ms, wall_ms;
      load = load_average();
      for (int round = 0; round < o.rounds; ++round) {
        const DistributedRunResult result = worker->run(programs[i], resident[i], timed);
        double run = 0;
        for (const DispatchOutcome& d : result.dispatches)
          run = std::max(run, double(timing_ns(d, "run")) / 1e6);
        kernel_ms.push_back(run);
        wall_ms.push_back(result.wall_ms);
      }
      for (int round = 0; round < o.traced_rounds; ++round) {
        const DistributedRunResult result = worker->run(programs[i], resident[i], traced);
        int64_t last_start = 0, last_end = 0;
        for (const DispatchOutcome& d : result.dispatches) {
          const auto [start, end] = task_span(d);
          last_start = std::max(last_start, start);
          last_end = std::max(last_end, end);
        }
        span_ms.push_back(double(last_end - last_start) / 1e6);
      }
      load = std::max(load, load_average());
      const double kernel = median(kernel_ms);
      const double busbw = busbw_gbs(op, kernel, world);
      const double bound_ms = kBytes * bus_factor(op, world) / (copy_gbs * 1e9) * 1e3;
      char span[32] = "-";
      if (!span_ms.empty()) std::snprintf(span, sizeof span, "%.3f", median(span_ms));
      std::printf("collectives impl=runtime op=%s world=%d rep=%d kernel_ms=%.3f busbw_gbs=%.3f "
                  "bound_ms=%.3f fraction=%.2f traced_span_ms=%s wall_ms=%.2f load=%.2f "
                  "kernel_all_ms=%s\n",
                  op.c_str(), world, rep, kernel, busbw, bound_ms, bound_ms / kernel,
                  span, median(wall_ms), load, join(kernel_ms).c_str());
      std::fflush(stdout);
      f.kernel.push_back(kernel);
      f.fraction.push_back(bound_ms / kernel);
      f.load_max = std::max(f.load_max, load);
    }
  }
  // The timed rounds ran on kept windows: a round on them must still be right.
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<RunArgument> fresh = resident_inputs(*worker, programs[i]);
    worker->run(programs[i], fresh, timed);
    std::vector<Tensor> checked = inputs_of(programs[i]);
    for (size_t j = 0; j < fresh.size(); ++j)
      worker->copy_from(std::get<ResidentTensor>(fresh[j]), checked[j]);
    check(ops[i], world, checked);
  }
  worker->close();
}

}  // namespace
}  // namespace pypto::bench

int main(int argc, char** argv) {
  using namespace pypto::bench;
  CLI::App app{"collectives_bench: the .ptl library's allreduce / allgather / reduce_scatter, "
               "16 MiB fp32 per rank, against MPI"};
  Options o;
  std::vector<int> worlds{2, 4, 8};
  app.add_option("--worlds", worlds, "world sizes (1024 rows must split evenly)")->delimiter(',');
  app.add_option("--rounds", o.rounds, "timed runtime rounds per repetition and op");
  app.add_option("--warmup", o.warmup,
                 "untimed runtime rounds per repetition and op, and untimed MPI calls per mpirun");
  app.add_option("--reps", o.reps, "repetitions per world (each: MPI, memcpy, runtime per op)");
  app.add_option("--mpi-iters", o.mpi_iters, "timed MPI calls per mpirun");
  app.add_option("--memcpy-iters", o.memcpy_iters, "timed 16 MiB memcpys per repetition");
  app.add_option("--traced-rounds", o.traced_rounds,
                 "rounds at swimlane level 1 after the timed ones (their task span is printed "
                 "beside the kernel time; 0: none)");
  app.add_option("--mpi-bench", o.mpi_bench, "mpi_collectives_bench (default: next to this program)");
  app.add_option("--mpirun", o.mpirun, "mpirun to start the MPI side with");
  app.add_option("--pypto-compile", o.compiler, "pypto-compile to build the programs with");
  app.add_option("--ops", o.ops, "collectives to time, in this order (default: all three)")
      ->delimiter(',')
      ->check(CLI::IsMember(kAllOps));
  app.add_option("-L,--lib-dir", o.lib_dirs,
                 "directory pypto-compile searches for collectives.ptl before its own library "
                 "(to time a changed library against the standard one)");
  CLI11_PARSE(app, argc, argv);
  try {
    pypto::log::init(std::string("warn"));
    for (int w : worlds)
      if (w < 1 || kRows % w != 0)
        throw pypto::UsageError("--worlds: " + std::to_string(w) + " does not divide " +
                                std::to_string(kRows) + " rows");
    if (o.mpi_bench.empty())
      o.mpi_bench =
          (fs::canonical("/proc/self/exe").parent_path() / "mpi_collectives_bench").string();
    const ScratchDir scratch_dir("collectives_bench");
    const fs::path& scratch = scratch_dir.path();
    l3_bench_env(scratch);
    std::printf("# collectives_bench: 16 MiB fp32 per rank, rounds=%d warmup=%d reps=%d "
                "mpi_iters=%d traced_rounds=%d; kernel = the slowest rank's run phase, no DFX; "
                "windows kept between rounds\n",
                o.rounds, o.warmup, o.reps, o.mpi_iters, o.traced_rounds);
    std::map<std::string, Figures> figures;
    for (int world : worlds) bench_world(world, o, scratch, figures);
    for (int world : worlds)
      for (const std::string& op : o.ops) {
        const Figures& f = figures[op + "/" + std::to_string(world)];
        const double mpi_bw = busbw_gbs(op, median(f.mpi), world);
        const double rt_bw = busbw_gbs(op, median(f.kernel), world);
        std::printf("collectives summary op=%s world=%d mpi_busbw_gbs=%.3f runtime_busbw_gbs=%.3f "
                    "ratio=%.2f fraction=%.2f load_max=%.2f\n",
                    op.c_str(), world, mpi_bw, rt_bw, rt_bw / mpi_bw, median(f.fraction),
                    f.load_max);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collectives_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
