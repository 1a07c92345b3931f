#include "coordinator/bench_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <numeric>

#include "artifact/build_kind.h"
#include "common/error.h"
#include "common/json_reader.h"
#include "common/log.h"
#include "coordinator/l2_run.h"
#include "coordinator/l3_run.h"
#include "coordinator/program_inputs.h"
#include "coordinator/run_outputs.h"

namespace pypto::coord {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<InputOverride> parse_inputs(const std::vector<std::string>& texts) {
  std::vector<InputOverride> inputs;
  inputs.reserve(texts.size());
  for (const std::string& text : texts) inputs.push_back(parse_input_override(text));
  return inputs;
}

// What --resident did: which parameters were resident, and the one upload and download.
struct ResidentReport {
  std::vector<std::string> params;
  std::vector<std::string> host_params;  // "w (why)"
  double upload_ms = 0;
  double download_ms = 0;
};

// `graph` (L2): the task graph's own run time in the same rounds, so that what a
// round costs on top of it is visible.
void print(const std::string& what, const RoundStats& s, double prepare_ms, bool json,
           std::ostream& out, const ResidentReport* resident = nullptr,
           const RoundStats* graph = nullptr) {
  if (json) {
    Json j;
    j["program"] = what;
    j["rounds"] = s.rounds;
    j["prepare_ms"] = prepare_ms;
    if (graph) j["graph_median_ms"] = graph->median;
    if (resident) {
      j["resident"] = resident->params;
      j["host_params"] = resident->host_params;
      j["upload_ms"] = resident->upload_ms;
      j["download_ms"] = resident->download_ms;
    }
    j["min_ms"] = s.min;
    j["median_ms"] = s.median;
    j["mean_ms"] = s.mean;
    j["p90_ms"] = s.p90;
    j["max_ms"] = s.max;
    out << j.dump(2) << "\n";
    return;
  }
  out << what << ": prepared in " << ms_text(prepare_ms) << "; " << s.rounds << " round(s): "
      << "min " << ms_text(s.min) << ", median " << ms_text(s.median) << ", mean "
      << ms_text(s.mean) << ", p90 " << ms_text(s.p90) << ", max " << ms_text(s.max) << "\n";
  if (graph)
    out << "task graph alone (the chip runtime's run time): median " << ms_text(graph->median)
        << ", min " << ms_text(graph->min) << "\n";
  if (!resident) return;
  auto list = [](const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
    return text.empty() ? std::string("none") : text;
  };
  out << "resident: " << list(resident->params) << " (uploaded once in "
      << ms_text(resident->upload_ms) << ", downloaded once in " << ms_text(resident->download_ms)
      << ")";
  if (!resident->host_params.empty()) out << "; shipped every round: " << list(resident->host_params);
  out << "\n";
}

// Binds every parameter that can be to a resident tensor: stacked when each rank uses
// only its own row, replicated when the dispatches only read it.
std::vector<RunArgument> bind_resident(DistributedWorker& worker,
                                       const DistributedCompiledProgram& program,
                                       const std::vector<Tensor>& host_args,
                                       ResidentReport& report) {
  std::vector<RunArgument> args;
  const auto start = Clock::now();
  for (size_t p = 0; p < program.params().size(); ++p) {
    const ParamInfo& param = program.params()[p];
    const auto stacked = resident_binding_problem(program, param, ResidentLayout::kStacked);
    const auto replicated = resident_binding_problem(program, param, ResidentLayout::kReplicated);
    if (stacked && replicated) {
      report.host_params.push_back(param.name + " (" + *stacked + ")");
      args.emplace_back(host_args[p]);
      continue;
    }
    ResidentTensor tensor =
        !stacked ? worker.alloc_stacked_tensor(
                       param.dtype, Shape(host_args[p].shape().begin() + 1, host_args[p].shape().end()))
                 : worker.alloc_tensor(param.dtype, host_args[p].shape());
    if (param.is_input()) worker.copy_to(tensor, host_args[p]);
    report.params.push_back(param.name);
    args.emplace_back(std::move(tensor));
  }
  report.upload_ms = ms_since(start);
  return args;
}

void download_resident(DistributedWorker& worker, const DistributedCompiledProgram& program,
                       std::vector<RunArgument>& args, std::vector<Tensor>& host_args,
                       ResidentReport& report) {
  const auto start = Clock::now();
  for (size_t p = 0; p < args.size(); ++p)
    if (auto* tensor = std::get_if<ResidentTensor>(&args[p]))
      if (program.params()[p].is_output()) worker.copy_from(*tensor, host_args[p]);
  report.download_ms = ms_since(start);
}

}  // namespace

void add_bench_args(CLI::App& cmd, BenchArgs& args) {
  cmd.add_option("dir", args.dir, "build directory")->required();
  cmd.add_option("--rounds", args.rounds, "timed dispatches (default 100)")
      ->check(CLI::Range(1, 10'000'000));
  cmd.add_option("--warmup", args.warmup, "untimed dispatches first (default 3)")
      ->check(CLI::Range(0, 1'000'000));
  cmd.add_option("--input", args.inputs,
                 "NAME=FILE.npy: data of In/InOut parameter NAME instead of golden/inputs");
  cmd.add_flag("--json", args.json, "print the statistics as JSON");
  cmd.add_flag("--resident", args.resident,
               "L3: keep the parameters in the agents (resident tensors): upload once, run the "
               "rounds on resident data, download once");
  cmd.add_flag("--keep-windows", args.keep_windows,
               "L3: do not zero the windows between rounds (they persist, as the kernels left "
               "them)");
  add_dispatch_flags(cmd, args.dispatch);
}

RoundStats round_stats(std::vector<double> ms) {
  if (ms.empty()) throw UsageError("no rounds to summarize");
  std::sort(ms.begin(), ms.end());
  RoundStats s;
  s.rounds = static_cast<int>(ms.size());
  s.min = ms.front();
  s.max = ms.back();
  const size_t n = ms.size();
  s.median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(n);
  // Nearest rank: the smallest value with at least 90% of the rounds at or below it.
  s.p90 = ms[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  return s;
}

// The default info level logs a line per dispatch; in a timed loop that line is
// part of what is timed. Rounds run at warn unless the user asked for debug or
// timing output.
class QuietRounds {
 public:
  QuietRounds() : saved_(log::level()) {
    if (saved_ == log::Level::kInfo) log::set_level(log::Level::kWarn);
  }
  ~QuietRounds() { log::set_level(saved_); }

 private:
  log::Level saved_;
};

int run_bench(const BenchArgs& args, std::ostream& out) {
  const DispatchSettings settings = resolve_dispatch_flags(args.dispatch);
  const std::vector<InputOverride> inputs = parse_inputs(args.inputs);
  std::vector<double> rounds;
  rounds.reserve(static_cast<size_t>(args.rounds));

  if (detect_build_kind(args.dir) == BuildKind::kL3) {
    const DistributedCompiledProgram program = load_l3_program(args.dir, args.dispatch.platform);
    std::vector<Tensor> host_args = prepare_arguments(program, inputs).tensors;
    DistributedRunOptions options;
    options.config = settings.config_for(program.platform());
    options.dispatch_timeout = settings.timeout;
    options.wait_timeout = settings.wait_timeout;
    options.reset_windows = !args.keep_windows;
    const auto start = Clock::now();
    std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, settings.agents);
    const double prepare_ms = ms_since(start);
    ResidentReport report;
    std::vector<RunArgument> run_args =
        args.resident ? bind_resident(*worker, program, host_args, report)
                      : std::vector<RunArgument>(host_args.begin(), host_args.end());
    std::optional<QuietRounds> quiet(std::in_place);
    for (int i = 0; i < args.warmup; ++i) worker->run(program, run_args, options);
    for (int i = 0; i < args.rounds; ++i) {
      const auto round = Clock::now();
      worker->run(program, run_args, options);
      rounds.push_back(ms_since(round));
    }
    quiet.reset();
    if (args.resident) download_resident(*worker, program, run_args, host_args, report);
    worker->close();
    print(program.name() + " (L3, " + std::to_string(program.world_size()) + " ranks)",
          round_stats(rounds), prepare_ms, args.json, out, args.resident ? &report : nullptr);
    return 0;
  }

  if (args.resident)
    throw UsageError("--resident is for L3 builds: " + args.dir +
                     " is a single-chip (L2) build, whose tensors are in this process already");
  const CompiledProgram program = load_l2_program(args.dir, args.dispatch.platform, "bench");
  std::vector<Tensor> tensors = prepare_arguments(program, inputs).tensors;
  ChipWorker worker(settings.config_for(program.platform()), settings.cores);
  const auto start = Clock::now();
  worker.prepare(program, settings.context());  // assembles and loads once
  const double prepare_ms = ms_since(start);
  std::optional<QuietRounds> quiet(std::in_place);
  for (int i = 0; i < args.warmup; ++i) worker.run(program, tensors, settings.context());
  std::vector<double> graph;  // the chip runtime's own time for the task graph
  graph.reserve(static_cast<size_t>(args.rounds));
  for (int i = 0; i < args.rounds; ++i) {
    const auto round = Clock::now();
    const ChipRunResult result = worker.run(program, tensors, settings.context());
    rounds.push_back(ms_since(round));
    graph.push_back(result.run_ms);
  }
  quiet.reset();
  const RoundStats graph_stats = round_stats(graph);
  print(program.name() + " (L2)", round_stats(rounds), prepare_ms, args.json, out, nullptr,
        &graph_stats);
  return 0;
}

}  // namespace pypto::coord
