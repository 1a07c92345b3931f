#include "coordinator/l3_run.h"

#include <exception>
#include <regex>
#include <system_error>

#include "artifact/build_paths.h"
#include "artifact/chip_build.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "common/fs_util.h"
#include "common/json_reader.h"
#include "common/log.h"
#include "common/rank_list.h"
#include "common/wire/protocol.h"
#include "coordinator/run_outputs.h"
#include "coordinator/run_report.h"
#include "coordinator/stall_diagnosis.h"
#include "coordinator/timeline.h"
#include "pypto/build_kind.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

// dfx_outputs/rank<r>/d<k>/ of an earlier run: only these go, anything else a user
// put in dfx_outputs/ stays.
void remove_stale_dispatch_dirs(const fs::path& dfx_root) {
  static const std::regex rank_dir("rank[0-9]+");
  static const std::regex dispatch_dir("d[0-9]+");
  std::error_code ec;
  if (!fs::is_directory(dfx_root, ec)) return;
  for (const auto& rank : fs::directory_iterator(dfx_root, ec)) {
    if (!rank.is_directory() || !std::regex_match(rank.path().filename().string(), rank_dir))
      continue;
    for (const auto& dispatch : fs::directory_iterator(rank.path(), ec))
      if (std::regex_match(dispatch.path().filename().string(), dispatch_dir))
        fs::remove_all(dispatch.path(), ec);
  }
}

Json timings_json(const std::vector<wire::PhaseTiming>& timings) {
  Json result = Json::object();
  for (const wire::PhaseTiming& t : timings) result[t.phase + "_ms"] = static_cast<double>(t.ns) / 1e6;
  return result;
}

// What dispatch_program.json and report/run.json say of one dispatch. The times are
// CLOCK_REALTIME of the agent's host, so dispatches of several hosts line up as far
// as their clocks agree (docs/dfx.md).
Json dispatch_json(const DispatchOutcome& d) {
  Json entry;
  entry["dispatch"] = d.index;
  entry["program"] = d.program;
  entry["start_unix_ns"] = d.start_unix_ns;
  entry["end_unix_ns"] = d.end_unix_ns;
  entry["ms"] = static_cast<double>(d.end_unix_ns - d.start_unix_ns) / 1e6;
  entry["timings"] = timings_json(d.timings);
  return entry;
}

// dfx_outputs/rank<r>/d<k>/: dispatch_program.json and the dispatch's DFX files.
void write_dispatch_dirs(const fs::path& dfx_root, const DistributedRunResult& result,
                         const PrepareReport& prepare) {
  for (const DispatchOutcome& d : result.dispatches) {
    const fs::path dir =
        dfx_root / ("rank" + std::to_string(d.rank)) / ("d" + std::to_string(d.index));
    fs::create_directories(dir);
    for (const auto& [path, bytes] : d.dfx_files) {
      fs::create_directories((dir / path).parent_path());
      write_file_atomic(dir / path, bytes);
    }
    Json meta = dispatch_json(d);
    meta["schema"] = 1;
    meta["next_level"] = d.next_level;
    meta["rank"] = d.rank;
    meta["host"] = d.host;
    if (static_cast<size_t>(d.rank) < prepare.ranks.size()) {
      // host CLOCK_MONOTONIC - coordinator CLOCK_MONOTONIC (docs/dfx.md "Several hosts")
      meta["clock_offset_ns"] = prepare.ranks[static_cast<size_t>(d.rank)].clock_offset_ns;
      meta["clock_rtt_ns"] = prepare.ranks[static_cast<size_t>(d.rank)].clock_rtt_ns;
    }
    Json files = Json::array();
    for (const auto& file : d.dfx_files) files.push_back(file.first);
    meta["dfx_files"] = files;
    write_json_atomic(dir / "dispatch_program.json", meta);
  }
}

void write_report(const DistributedCompiledProgram& program, const L3RunOutcome& outcome,
                  const std::string& result, const std::string& error,
                  const Json* diagnosis = nullptr) {
  Json report;
  report["schema"] = 1;
  report["program"] = program.name();
  report["dir"] = fs::absolute(program.dir()).lexically_normal().string();
  report["world"] = program.world_size();
  report["platform"] = program.platform();
  report["result"] = result;
  if (!error.empty()) report["error"] = error;
  if (diagnosis) report["diagnosis"] = *diagnosis;
  report["launch_ms"] = outcome.prepare.launch_ms;
  report["prepare_ms"] = outcome.prepare.prepare_ms;
  report["run_ms"] = outcome.result.wall_ms;
  report["bytes_shipped"] = outcome.prepare.bytes_shipped();
  Json ranks = Json::array();
  for (const RankPrepareStats& stats : outcome.prepare.ranks) {
    Json rank;
    rank["rank"] = stats.rank;
    rank["host"] = stats.host;
    rank["files"] = stats.files;
    rank["bytes_shipped"] = stats.bytes_shipped;
    rank["blobs_shipped"] = stats.blobs_shipped;
    rank["cache_hits"] = stats.cache_hits;
    rank["compiles"] = stats.compiles;
    rank["clock_offset_ns"] = stats.clock_offset_ns;
    Json dispatches = Json::array();
    for (const DispatchOutcome& d : outcome.result.dispatches) {
      if (d.rank == stats.rank) dispatches.push_back(dispatch_json(d));
    }
    rank["dispatches"] = dispatches;
    ranks.push_back(rank);
  }
  report["ranks"] = ranks;
  Json hosts = Json::array();
  for (const HostPrepareStats& stats : outcome.prepare.hosts()) {
    Json host;
    host["host"] = stats.host;
    host["ranks"] = stats.ranks;
    host["bytes_shipped"] = stats.bytes_shipped;
    host["blobs_shipped"] = stats.blobs_shipped;
    host["cache_hits"] = stats.cache_hits;
    host["compiles"] = stats.compiles;
    host["clock_offset_ns"] = stats.clock_offset_ns;
    host["clock_rtt_ns"] = stats.clock_rtt_ns;
    hosts.push_back(host);
  }
  report["hosts"] = hosts;
  if (outcome.validation) {
    Json validation;
    validation["ok"] = outcome.validation->ok();
    validation["failures"] = outcome.validation->failures();
    report["validation"] = validation;
  }
  try {
    write_json_atomic(program.dir() / kReportDir / "run.json", report);
  } catch (const std::exception& e) {
    log::warn("could not write the run report: {}", e.what());
  }
  write_run_html(program.dir(), report, true);
}

// "; rank 3 wrote that element (program 'chip_orch')" for an L3 output: the
// last dispatch (in plan order) that binds the element to an Out or InOut
// parameter, whose value is the one gathered.
MismatchLocator locate_in(const DistributedCompiledProgram& program) {
  return [&program](const OutputComparison& o) -> std::string {
    if (o.first_index.empty()) return "";
    const Dispatch* writer = nullptr;
    for (const Dispatch& d : program.host_orch().dispatches) {
      const OrchestrationInfo* orch =
          program.chip(d.rank).config.find_orchestration(d.program);
      for (size_t a = 0; a < d.args.size(); ++a) {
        const HostArg& arg = d.args[a];
        if (arg.kind != HostArgKind::kHost || arg.param != o.name) continue;
        if (arg.offsets.size() != o.first_index.size()) continue;
        if (orch && a < orch->signature.size() && orch->signature[a] != ArgKind::kOut &&
            orch->signature[a] != ArgKind::kInOut)
          continue;
        bool inside = true;
        for (size_t i = 0; inside && i < arg.offsets.size(); ++i)
          inside = o.first_index[i] >= arg.offsets[i] &&
                   o.first_index[i] < arg.offsets[i] + arg.shape[i];
        if (inside) writer = &d;
      }
    }
    if (!writer) return "";
    return "; rank " + std::to_string(writer->rank) + " wrote that element (program '" +
           writer->program + "')";
  };
}

}  // namespace

DistributedCompiledProgram load_l3_program(const fs::path& dir,
                                           const std::optional<std::string>& platform) {
  DistributedOverrides overrides;
  overrides.platform = platform;
  DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(dir, overrides);
  require_executable_here(parse_platform(program.platform()));
  return program;
}

void lay_out_dispatch_dfx(const fs::path& dfx_root, const DistributedRunResult& result,
                          const PrepareReport& prepare) {
  remove_stale_dispatch_dirs(dfx_root);
  remove_timeline(dfx_root);
  write_dispatch_dirs(dfx_root, result, prepare);
}

std::string device_list(const std::vector<int64_t>& device_ids) {
  std::string text;
  for (size_t i = 0; i < device_ids.size(); ++i)
    text += (i ? "," : "") + std::to_string(device_ids[i]);
  return text;
}

void write_dfx_outputs(const DistributedCompiledProgram& program,
                       const DistributedRunResult& result, const PrepareReport& prepare) {
  lay_out_dispatch_dfx(program.dir() / kDfxOutputsDir, result, prepare);
}

L3RunOutcome run_l3_program(const DistributedCompiledProgram& program, const RunRequest& request,
                            const DispatchSettings& settings, std::ostream& out) {
  RunStart start = start_run(program, request);
  ProgramArguments& args = start.args;

  L3RunOutcome outcome;
  outcome.output_dir = start.output_dir;
  const fs::path dfx_root = program.dir() / kDfxOutputsDir;
  remove_stale_dispatch_dirs(dfx_root);
  remove_timeline(dfx_root);

  DistributedRunOptions run_options;
  run_options.config = settings.config_for(program.platform());
  run_options.dispatch_timeout = settings.timeout;
  run_options.wait_timeout = settings.wait_timeout;
  run_options.scalars = request.scalars;
  out << scalars_line(program, start.scalars);

  std::unique_ptr<DistributedWorker> worker;
  try {
    worker = DistributedWorker::prepare(program, settings.agents);
    outcome.prepare = worker->prepare_report();
    outcome.result = worker->run(program, args.tensors, run_options);
    worker->close();
  } catch (const std::exception& e) {
    if (worker) outcome.prepare = worker->prepare_report();
    const bool infra = exit_code_of(e) != ExitCode::kFail;
    const auto* stall = dynamic_cast<const StalledDispatchError*>(&e);
    write_report(program, outcome, infra ? "INFRA" : "FAIL", e.what(),
                 stall ? &stall->diagnosis() : nullptr);
    throw;
  }
  write_dispatch_dirs(dfx_root, outcome.result, outcome.prepare);

  uint64_t hits = 0;
  uint64_t compiles = 0;
  for (const RankPrepareStats& rank : outcome.prepare.ranks) {
    hits += rank.cache_hits;
    compiles += rank.compiles;
  }
  out << program.name() << " (L3, " << program.world_size() << " ranks, " << program.platform()
      << "): " << outcome.result.dispatches.size() << " dispatch(es) in "
      << ms_text(outcome.result.wall_ms) << "; agents up in " << ms_text(outcome.prepare.launch_ms)
      << ", prepared in " << ms_text(outcome.prepare.prepare_ms) << " (" << outcome.prepare.bytes_shipped()
      << " bytes shipped, " << compiles << " compile(s), " << hits << " cache hit(s))\n";
  if (const std::vector<HostPrepareStats> hosts = outcome.prepare.hosts(); hosts.size() > 1)
    for (const HostPrepareStats& host : hosts)
      out << "  host " << host.host << " (rank" << (host.ranks.size() > 1 ? "s " : " ")
          << rank_list(host.ranks) << "): " << host.bytes_shipped << " bytes in "
          << host.blobs_shipped << " blob(s) shipped, " << host.compiles << " compile(s), "
          << host.cache_hits << " cache hit(s)\n";
  outcome.outputs_written =
      write_output_files(outcome.output_dir, program.params(), args.tensors, out);
  out << "dfx: " << dfx_root.string() << "/rank<r>/d<k>/\n";
  if (run_options.config.enable_chip_swimlane > 0) write_run_timeline(dfx_root, out);

  try {
    if (request.validate)
      outcome.validation =
          validate_and_report(program, args.tensors, outcome.output_dir, out, locate_in(program),
                              request.expected);
  } catch (const std::exception& e) {
    write_report(program, outcome, "FAIL", e.what());
    throw;
  }
  write_report(program, outcome, request.validate ? "PASS" : "OK", "");
  return outcome;
}

}  // namespace pypto::coord
