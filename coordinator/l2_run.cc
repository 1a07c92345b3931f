#include "coordinator/l2_run.h"

#include "artifact/build_paths.h"
#include "common/log.h"
#include "coordinator/run_outputs.h"
#include "coordinator/run_report.h"
#include "coordinator/timeline.h"
#include "pypto/build_kind.h"
#include "pypto/error.h"

namespace pypto::coord {

CompiledProgram load_l2_program(const fs::path& dir, const std::optional<std::string>& platform,
                                const std::string& command) {
  if (detect_build_kind(dir) == BuildKind::kL3)
    throw InfraError(dir.string() + " is an L3 (distributed) build; `pypto-coord " + command +
                     "` loads it with load_l3_program");
  CompiledProgram program = CompiledProgram::from_dir(dir, platform);
  require_executable_here(parse_platform(program.platform()));
  return program;
}

namespace {

// report/run.html of an L2 run: one rank, one dispatch (an L2 run writes no run.json).
void write_l2_report_html(const CompiledProgram& program, const L2RunOutcome& outcome,
                          const std::string& result, const std::string& error) {
  Json report;
  report["program"] = program.name();
  report["world"] = 1;
  report["platform"] = program.platform();
  report["result"] = result;
  if (!error.empty()) report["error"] = error;
  report["run_ms"] = outcome.result.run_ms;
  Json rank = {{"rank", 0}, {"host", local_host_name()}, {"dispatches", Json::array()}};
  if (outcome.result.run_ms > 0)  // the dispatch completed
    rank["dispatches"].push_back({{"dispatch", 0},
                                    {"program", program.name()},
                                    {"ms", outcome.result.assemble_ms + outcome.result.run_ms},
                                    {"timings",
                                     {{"assemble_ms", outcome.result.assemble_ms},
                                      {"run_ms", outcome.result.run_ms}}}});
  report["ranks"] = Json::array({rank});
  write_run_html(program.dir(), report, outcome.result.dfx_dir.has_value());
}

}  // namespace

L2RunOutcome run_l2_program(const CompiledProgram& program, const RunRequest& request,
                            const DispatchSettings& settings, std::ostream& out) {
  RunStart start = start_run(program, request);
  ProgramArguments& args = start.args;

  L2RunOutcome outcome;
  outcome.output_dir = start.output_dir;

  for (size_t i = 0; i < args.tensors.size(); ++i)
    log::debug("argument {} ({}): {}", program.params()[i].name,
               direction_name(program.params()[i].direction), args.sources[i]);

  ChipWorker worker(settings.config_for(program.platform()), settings.cores);
  DispatchContext context = settings.context();
  for (const ScalarValue& v : start.scalars) context.scalars.push_back(v.abi_bits());
  out << scalars_line(program, start.scalars);
  try {
    outcome.result = worker.run(program, args.tensors, context);
  } catch (const std::exception& e) {
    write_l2_report_html(program, outcome, exit_code_of(e) != ExitCode::kFail ? "INFRA" : "FAIL",
                         e.what());
    throw;
  }

  out << program.name() << " (L2, " << program.platform() << "): "
      << outcome.result.num_tasks << " task(s) in " << ms_text(outcome.result.run_ms)
      << ", assembly " << ms_text(outcome.result.assemble_ms) << "\n";
  outcome.outputs_written =
      write_output_files(outcome.output_dir, program.params(), args.tensors, out);
  if (outcome.result.dfx_dir) {
    out << "dfx: " << outcome.result.dfx_dir->string() << "\n";
    if (settings.config.enable_chip_swimlane > 0)
      write_run_timeline(*outcome.result.dfx_dir, out);
    else
      remove_timeline(*outcome.result.dfx_dir);
  }

  try {
    if (request.validate)
      outcome.validation = validate_and_report(program, args.tensors, outcome.output_dir, out, {},
                                               request.expected);
  } catch (const std::exception& e) {
    write_l2_report_html(program, outcome, "FAIL", e.what());
    throw;
  }
  write_l2_report_html(program, outcome, request.validate ? "PASS" : "OK", "");
  return outcome;
}

}  // namespace pypto::coord
