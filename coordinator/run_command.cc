#include "coordinator/run_command.h"

#include "common/fs_util.h"
#include "coordinator/l3_run.h"
#include "pypto/build_kind.h"
#include "pypto/error.h"

namespace pypto::coord {

void add_run_args(CLI::App& cmd, RunArgs& args) {
  cmd.add_option("dir", args.dir, "build directory")->required()->transform(normal_path);
  cmd.add_option("--input", args.inputs,
                 "NAME=FILE.npy: data of In/InOut parameter NAME instead of "
                 "golden/inputs/NAME.npy (repeatable)");
  cmd.add_option("--scalar", args.scalars,
                 "NAME=VALUE: value of scalar parameter NAME instead of the default the build "
                 "records (repeatable)");
  cmd.add_option("--expected", args.expected,
                 "NAME=FILE.npy: with --validate, the expected output NAME instead of "
                 "golden/expected/NAME.npy (repeatable; needed when --input or --scalar "
                 "differ from the golden data)");
  cmd.add_option("--output-dir", args.output_dir,
                 "write the outputs to DIR/<name>.npy instead of <dir>/outputs/")
      ->transform(normal_path);
  cmd.add_flag("--validate", args.validate,
               "compare the outputs with golden/expected using golden.json's rtol/atol; a "
               "mismatch exits 1");
  add_dispatch_flags(cmd, args.dispatch);
}

RunRequest make_run_request(const RunArgs& args) {
  RunRequest request;
  for (const std::string& text : args.inputs) request.inputs.push_back(parse_input_override(text));
  request.scalars = args.scalars;
  for (const std::string& text : args.expected)
    request.expected.push_back(parse_input_override(text, "--expected"));
  if (args.output_dir) {
    if (args.output_dir->empty()) throw UsageError("--output-dir: the directory name is empty");
    request.output_dir = fs::path(*args.output_dir);
  }
  request.validate = args.validate;
  return request;
}

int run_run(const RunArgs& args, std::ostream& out) {
  const RunRequest request = make_run_request(args);
  const DispatchSettings settings = resolve_dispatch_flags(args.dispatch);
  if (detect_build_kind(args.dir) == BuildKind::kL3) {
    run_l3_program(load_l3_program(args.dir, args.dispatch.platform), request, settings, out);
    return 0;
  }
  const CompiledProgram program = load_l2_program(args.dir, args.dispatch.platform, "run");
  run_l2_program(program, request, settings, out);
  return 0;
}

}  // namespace pypto::coord
