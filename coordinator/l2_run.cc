#include "coordinator/l2_run.h"

#include <iomanip>
#include <sstream>

#include "artifact/build_kind.h"
#include "artifact/build_paths.h"
#include "common/error.h"
#include "common/log.h"
#include "common/npy.h"

namespace pypto::coord {

namespace {

std::string ms_text(double ms) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(ms < 10 ? 2 : 1) << ms << " ms";
  return out.str();
}

std::string validation_failure_message(const CompiledProgram& program,
                                       const ValidationReport& report, const fs::path& outputs) {
  std::string msg = "validation of " + program.dir().string() + " failed: " +
                    std::to_string(report.failures()) + " of " +
                    std::to_string(report.outputs.size()) +
                    " output(s) differ from golden/expected";
  for (const auto& o : report.outputs)
    if (!o.ok()) msg += "\n  " + o.describe(report.rtol, report.atol);
  msg += "\nactual outputs are in " + outputs.string() + "/";
  return msg;
}

}  // namespace

CompiledProgram load_l2_program(const fs::path& dir, const std::optional<std::string>& platform,
                                const std::string& command) {
  if (detect_build_kind(dir) == BuildKind::kL3)
    throw InfraError(dir.string() + " is an L3 (distributed) build; `pypto-coord " + command +
                     "` of L3 builds is not implemented yet (it needs the distributed runtime: "
                     "rank agents under mpirun). Only L2 (single-chip) builds run today; "
                     "`pypto-coord inspect " +
                     dir.string() + "` describes this one");
  CompiledProgram program = CompiledProgram::from_dir(dir, platform);
  require_executable_here(parse_platform(program.platform()));
  return program;
}

L2RunOutcome run_l2_program(const CompiledProgram& program, const L2RunRequest& request,
                            const DispatchSettings& settings, std::ostream& out) {
  if (request.validate && !program.golden())
    throw UsageError("--validate needs " + sidecar_display(program.dir(), kGoldenFile) +
                     " and golden/expected/, but " + program.dir().string() +
                     " has no golden/; run without --validate, or pass inputs with --input "
                     "NAME=FILE.npy");
  ProgramArguments args = prepare_arguments(program, request.inputs);

  L2RunOutcome outcome;
  outcome.output_dir = request.output_dir.value_or(program.dir() / kOutputsDir);
  // Only the files this run would write: an --output-dir may hold anything else.
  for (const ParamInfo& p : program.params()) {
    std::error_code ec;
    if (p.is_output()) fs::remove(outcome.output_dir / (p.name + ".npy"), ec);
  }

  for (size_t i = 0; i < args.tensors.size(); ++i)
    log::debug("argument {} ({}): {}", program.params()[i].name,
               direction_name(program.params()[i].direction), args.sources[i]);

  ChipWorker worker(settings.config_for(program.platform()), settings.cores);
  outcome.result = worker.run(program, args.tensors, settings.context());

  for (size_t i = 0; i < args.tensors.size(); ++i) {
    const ParamInfo& p = program.params()[i];
    if (!p.is_output()) continue;
    const fs::path file = outcome.output_dir / (p.name + ".npy");
    write_npy(file, args.tensors[i]);
    outcome.outputs_written.push_back(file);
  }

  out << program.name() << " (L2, " << program.platform() << "): "
      << outcome.result.record.num_tasks << " task(s) in " << ms_text(outcome.result.run_ms)
      << ", assembly " << ms_text(outcome.result.assemble_ms) << "\n";
  if (!outcome.outputs_written.empty()) {
    out << "outputs: ";
    for (size_t i = 0; i < outcome.outputs_written.size(); ++i)
      out << (i ? ", " : "") << outcome.outputs_written[i].string();
    out << "\n";
  }
  if (outcome.result.dfx_dir) out << "dfx: " << outcome.result.dfx_dir->string() << "\n";

  if (!request.validate) return outcome;
  outcome.validation = validate_outputs(program, args.tensors);
  const ValidationReport& report = *outcome.validation;
  if (!report.ok()) {
    out << "validation: FAILED (" << report.failures() << " of " << report.outputs.size()
        << " output(s))" << std::endl;
    throw ValidationError(validation_failure_message(program, report, outcome.output_dir));
  }
  out << "validation: passed (";
  for (size_t i = 0; i < report.outputs.size(); ++i)
    out << (i ? ", " : "") << report.outputs[i].name << ": " << report.outputs[i].total
        << " elements";
  out << " within rtol=" << report.rtol << ", atol=" << report.atol << ")\n";
  return outcome;
}

}  // namespace pypto::coord
