#include "coordinator/l2_run.h"

#include "artifact/build_kind.h"
#include "artifact/build_paths.h"
#include "common/error.h"
#include "common/log.h"
#include "coordinator/run_outputs.h"

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
  outcome.result = worker.run(program, args.tensors, context);

  out << program.name() << " (L2, " << program.platform() << "): "
      << outcome.result.record.num_tasks << " task(s) in " << ms_text(outcome.result.run_ms)
      << ", assembly " << ms_text(outcome.result.assemble_ms) << "\n";
  outcome.outputs_written =
      write_output_files(outcome.output_dir, program.params(), args.tensors, out);
  if (outcome.result.dfx_dir) out << "dfx: " << outcome.result.dfx_dir->string() << "\n";

  if (request.validate)
    outcome.validation = validate_and_report(program, args.tensors, outcome.output_dir, out, {},
                                             request.expected);
  return outcome;
}

}  // namespace pypto::coord
