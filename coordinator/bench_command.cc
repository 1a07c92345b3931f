#include "coordinator/bench_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <numeric>
#include <sstream>

#include "artifact/build_paths.h"
#include "common/fs_util.h"
#include "common/json_reader.h"
#include "common/log.h"
#include "coordinator/l2_run.h"
#include "coordinator/l3_run.h"
#include "coordinator/program_inputs.h"
#include "coordinator/progress_line.h"
#include "coordinator/run_outputs.h"
#include "coordinator/timeline.h"
#include "pypto/build_kind.h"
#include "pypto/error.h"

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

// What the extra traced round left: its time, where its records went.
struct TracedRound {
  double ms = 0;
  std::string dfx_dir;
  std::string timeline;  // empty without --swimlane, or when it could not be written
};

Json stats_json(const RoundStats& s) {
  return {{"rounds", s.rounds}, {"min_ms", s.min},   {"median_ms", s.median}, {"mean_ms", s.mean},
          {"stdev_ms", s.stdev}, {"p90_ms", s.p90}, {"max_ms", s.max}};
}

std::string stats_text(const RoundStats& s) {
  return "min " + ms_text(s.min) + ", median " + ms_text(s.median) + ", mean " + ms_text(s.mean) +
         ", stdev " + ms_text(s.stdev) + ", p90 " + ms_text(s.p90) + ", max " + ms_text(s.max);
}

std::string percent(double share) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(0) << share * 100 << "%";
  return text.str();
}

// `graph` (L2): the task graph's own run time in the same rounds, so that what a
// round costs on top of it is visible. `breakdown` (L3): per rank and dispatch.
void print(const std::string& what, const RoundStats& s, double prepare_ms, bool json,
           std::ostream& out, const ResidentReport* resident = nullptr,
           const RoundStats* graph = nullptr, const BenchBreakdown* breakdown = nullptr,
           const TracedRound* traced = nullptr, bool dfx_in_rounds = false) {
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
    j["stdev_ms"] = s.stdev;
    j["p90_ms"] = s.p90;
    j["max_ms"] = s.max;
    j["dfx_in_rounds"] = dfx_in_rounds;
    if (breakdown) {
      Json ranks = Json::array();
      for (const RankBreakdown& r : breakdown->ranks) {
        Json rank = stats_json(r.ms);
        rank["rank"] = r.rank;
        rank["slowest_rounds"] = r.slowest_rounds;
        rank["slowest_share"] = s.rounds ? static_cast<double>(r.slowest_rounds) / s.rounds : 0.0;
        ranks.push_back(rank);
      }
      j["per_rank"] = ranks;
      Json dispatches = Json::array();
      for (const DispatchBreakdown& d : breakdown->dispatches) {
        Json dispatch = stats_json(d.ms);
        dispatch["rank"] = d.rank;
        dispatch["dispatch"] = d.index;
        dispatch["program"] = d.program;
        dispatches.push_back(dispatch);
      }
      j["per_dispatch"] = dispatches;
      j["slowest_rank_share_median"] = breakdown->slowest_share_median;
    }
    if (traced) {
      j["traced_round"] = {{"ms", traced->ms}, {"dfx_dir", traced->dfx_dir}};
      if (!traced->timeline.empty()) j["traced_round"]["timeline"] = traced->timeline;
    }
    out << j.dump(2) << "\n";
    return;
  }
  out << what << ": prepared in " << ms_text(prepare_ms) << "; " << s.rounds << " round(s): "
      << stats_text(s) << (dfx_in_rounds ? " (DFX on in the rounds)" : "") << "\n";
  if (graph)
    out << "task graph alone (the chip runtime's run time): median " << ms_text(graph->median)
        << ", min " << ms_text(graph->min) << "\n";
  if (breakdown) {
    out << "per rank (its dispatches in each round):\n";
    for (const RankBreakdown& r : breakdown->ranks)
      out << "  rank " << r.rank << ": median " << ms_text(r.ms.median) << ", p90 "
          << ms_text(r.ms.p90) << ", max " << ms_text(r.ms.max) << "; slowest in "
          << r.slowest_rounds << " of " << s.rounds << " round(s)\n";
    if (breakdown->dispatches.size() != breakdown->ranks.size()) {
      out << "per dispatch:\n";
      for (const DispatchBreakdown& d : breakdown->dispatches)
        out << "  rank " << d.rank << " d" << d.index << " " << d.program << ": median "
            << ms_text(d.ms.median) << ", p90 " << ms_text(d.ms.p90) << ", max "
            << ms_text(d.ms.max) << "\n";
    }
    // The rank that bounded the rounds most often, and how much of a round it was.
    const RankBreakdown* top = nullptr;
    for (const RankBreakdown& r : breakdown->ranks)
      if (!top || r.slowest_rounds > top->slowest_rounds) top = &r;
    if (top)
      out << "slowest rank: rank " << top->rank << " in " << top->slowest_rounds << " of "
          << s.rounds << " round(s); the slowest rank's dispatches are a median "
          << percent(breakdown->slowest_share_median) << " of the round\n";
  }
  if (traced) {
    out << "traced round (DFX on, not in the statistics): " << ms_text(traced->ms) << "; dfx: "
        << traced->dfx_dir << "\n";
    if (!traced->timeline.empty()) out << "timeline: " << traced->timeline << "\n";
  }
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

// The timed rounds' configuration: every DFX switch off.
void clear_dfx(RunConfig& config) {
  config.enable_chip_swimlane = 0;
  config.enable_dump_args = 0;
  config.enable_pmu = 0;
  config.enable_dep_gen = false;
  config.enable_scope_stats = false;
}

RoundRecord round_record(double ms, const DistributedRunResult& result) {
  RoundRecord record;
  record.ms = ms;
  for (const DispatchOutcome& d : result.dispatches)
    record.dispatches.push_back(
        {d.rank, d.index, d.program, static_cast<double>(d.end_unix_ns - d.start_unix_ns) / 1e6});
  return record;
}

// The traced round's timeline.json, or "" (with a warning) when it cannot be written.
std::string timeline_or_warn(const fs::path& dfx_root) {
  try {
    return write_timeline(dfx_root).string();
  } catch (const std::exception& e) {
    log::warn("could not write the traced round's timeline: {}", e.what());
    return "";
  }
}

}  // namespace

void add_bench_args(CLI::App& cmd, BenchArgs& args) {
  cmd.add_option("dir", args.dir, "build directory")->required()->transform(normal_path);
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
  cmd.add_flag("--dfx-in-rounds", args.dfx_in_rounds,
               "keep the DFX switches on in the timed rounds (their cost is timed); by default "
               "the rounds run without them and one extra round records them");
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
  if (n > 1) {
    double squares = 0;
    for (double v : ms) squares += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  return s;
}

BenchBreakdown bench_breakdown(const std::vector<RoundRecord>& rounds) {
  if (rounds.empty()) throw UsageError("no rounds to summarize");
  std::map<int, std::vector<double>> rank_ms;
  std::map<int, int> slowest;
  std::map<std::pair<int, uint64_t>, std::pair<std::string, std::vector<double>>> dispatch_ms;
  std::vector<double> shares;
  for (const RoundRecord& round : rounds) {
    std::map<int, double> per_rank;
    for (const RoundDispatch& d : round.dispatches) {
      per_rank[d.rank] += d.ms;
      auto& entry = dispatch_ms[{d.rank, d.index}];
      entry.first = d.program;
      entry.second.push_back(d.ms);
    }
    if (per_rank.empty()) continue;
    auto top = per_rank.begin();
    for (auto it = per_rank.begin(); it != per_rank.end(); ++it) {
      rank_ms[it->first].push_back(it->second);
      if (it->second > top->second) top = it;
    }
    ++slowest[top->first];
    if (round.ms > 0) shares.push_back(top->second / round.ms);
  }
  BenchBreakdown b;
  for (const auto& [rank, ms] : rank_ms) b.ranks.push_back({rank, round_stats(ms), slowest[rank]});
  for (const auto& [key, entry] : dispatch_ms)
    b.dispatches.push_back({key.first, key.second, entry.first, round_stats(entry.second)});
  if (!shares.empty()) b.slowest_share_median = round_stats(shares).median;
  return b;
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
    // The timed rounds run without DFX unless asked: its records cost time per task.
    const bool dfx = options.config.any_dfx_enabled();
    DistributedRunOptions timed = options;
    if (!args.dfx_in_rounds) clear_dfx(timed.config);
    std::vector<RoundRecord> records;
    records.reserve(static_cast<size_t>(args.rounds));
    DistributedRunResult last;
    std::optional<QuietRounds> quiet(std::in_place);
    ProgressLine progress = ProgressLine::on_stderr("bench " + program.name());
    for (int i = 0; i < args.warmup; ++i) {
      worker->run(program, run_args, timed);
      progress.update("warmup", i + 1, args.warmup);
    }
    for (int i = 0; i < args.rounds; ++i) {
      const auto round = Clock::now();
      last = worker->run(program, run_args, timed);
      rounds.push_back(ms_since(round));
      records.push_back(round_record(rounds.back(), last));
      progress.update("round", i + 1, args.rounds, rounds.back());
    }
    progress.clear();
    std::optional<TracedRound> traced;
    if (dfx) {
      traced.emplace();
      if (!args.dfx_in_rounds) {
        const auto round = Clock::now();
        last = worker->run(program, run_args, options);
        traced->ms = ms_since(round);
      } else {
        traced->ms = rounds.back();
      }
    }
    quiet.reset();
    if (args.resident) download_resident(*worker, program, run_args, host_args, report);
    const PrepareReport prepare = worker->prepare_report();
    worker->close();
    if (traced) {
      const fs::path dfx_root = program.dir() / kDfxOutputsDir;
      lay_out_dispatch_dfx(dfx_root, last, prepare);
      traced->dfx_dir = dfx_root.string() + "/rank<r>/d<k>/";
      if (options.config.enable_chip_swimlane > 0) traced->timeline = timeline_or_warn(dfx_root);
    }
    const BenchBreakdown breakdown = bench_breakdown(records);
    print(program.name() + " (L3, " + std::to_string(program.world_size()) + " ranks)",
          round_stats(rounds), prepare_ms, args.json, out, args.resident ? &report : nullptr,
          nullptr, &breakdown, traced ? &*traced : nullptr, dfx && args.dfx_in_rounds);
    return 0;
  }

  if (args.resident)
    throw UsageError("--resident is for L3 builds: " + args.dir +
                     " is a single-chip (L2) build, whose tensors are in this process already");
  const CompiledProgram program = load_l2_program(args.dir, args.dispatch.platform, "bench");
  std::vector<Tensor> tensors = prepare_arguments(program, inputs).tensors;
  const RunConfig config = settings.config_for(program.platform());
  const bool dfx = config.any_dfx_enabled();
  RunConfig timed = config;
  if (!args.dfx_in_rounds) clear_dfx(timed);
  ChipWorker worker(timed, settings.cores);
  const auto start = Clock::now();
  worker.prepare(program, settings.context());  // assembles and loads once
  const double prepare_ms = ms_since(start);
  std::optional<QuietRounds> quiet(std::in_place);
  ProgressLine progress = ProgressLine::on_stderr("bench " + program.name());
  for (int i = 0; i < args.warmup; ++i) {
    worker.run(program, tensors, settings.context());
    progress.update("warmup", i + 1, args.warmup);
  }
  std::vector<double> graph;  // the chip runtime's own time for the task graph
  graph.reserve(static_cast<size_t>(args.rounds));
  ChipRunResult last;
  for (int i = 0; i < args.rounds; ++i) {
    const auto round = Clock::now();
    last = worker.run(program, tensors, settings.context());
    rounds.push_back(ms_since(round));
    graph.push_back(last.run_ms);
    progress.update("round", i + 1, args.rounds, rounds.back());
  }
  progress.clear();
  std::optional<TracedRound> traced;
  if (dfx) {
    traced.emplace();
    if (!args.dfx_in_rounds) {
      // A worker of its own: the DFX switches are part of a ChipWorker's configuration.
      ChipWorker traced_worker(config, settings.cores);
      traced_worker.prepare(program, settings.context());
      const auto round = Clock::now();
      last = traced_worker.run(program, tensors, settings.context());
      traced->ms = ms_since(round);
    } else {
      traced->ms = rounds.back();
    }
    if (last.dfx_dir) {
      traced->dfx_dir = last.dfx_dir->string();
      if (config.enable_chip_swimlane > 0) traced->timeline = timeline_or_warn(*last.dfx_dir);
    }
  }
  quiet.reset();
  const RoundStats graph_stats = round_stats(graph);
  print(program.name() + " (L2)", round_stats(rounds), prepare_ms, args.json, out, nullptr,
        &graph_stats, nullptr, traced ? &*traced : nullptr, dfx && args.dfx_in_rounds);
  return 0;
}

}  // namespace pypto::coord
