#include "compiler/driver.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <utility>

#include "common/fs_util.h"
#include "common/version.h"
#include "compiler/check/checker.h"
#include "compiler/codegen/codegen_build.h"
#include "compiler/codegen/kernel_lowering.h"
#include "compiler/frontend/loader.h"
#include "compiler/interp/interp_values.h"
#include "compiler/interp/reference_interpreter.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/error.h"
#include "pypto/npy.h"
#include "pypto/run_config.h"
#include "pypto/scalar_param.h"

namespace pypto::compiler {

namespace fs = std::filesystem;

namespace {
// Beyond any machine the runtime targets; keeps host-plan enumeration bounded.
constexpr int64_t kMaxWorld = 65536;

// --input NAME=FILE.npy, split; nullopt when malformed.
std::optional<std::pair<std::string, std::string>> split_input(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) return std::nullopt;
  return std::make_pair(spec.substr(0, eq), spec.substr(eq + 1));
}

// The entry's scalar parameters with their seeded values, --scalar in place;
// writes the values into their one-element tensors of `tensors`.
std::vector<ScalarValue> entry_scalars(const CompileArgs& args, const Function& entry,
                                       std::vector<Tensor>& tensors) {
  std::vector<ScalarParam> seeded;
  std::vector<size_t> index;
  for (size_t i = 0; i < entry.params.size(); ++i) {
    const Param& p = entry.params[i];
    if (p.kind != ParamKind::kScalar) continue;
    ScalarParam s;
    s.name = p.name;
    s.value.dtype = p.dtype;
    const auto* p0 = static_cast<const std::byte*>(tensors[i].data());
    if (is_float_dtype(p.dtype))
      s.value.f = interp::read_float(p0, p.dtype);
    else
      s.value.i = interp::read_int(p0, p.dtype);
    seeded.push_back(std::move(s));
    index.push_back(i);
  }
  std::vector<ScalarValue> values = scalar_values(seeded, args.scalars);
  for (size_t k = 0; k < values.size(); ++k) {
    auto* p0 = static_cast<std::byte*>(tensors[index[k]].data());
    if (values[k].is_float())
      interp::write_float(p0, values[k].dtype, values[k].f);
    else
      interp::write_int(p0, values[k].dtype, values[k].i);
  }
  return values;
}

// Seeded arguments of the entry with --input files and --scalar values in
// place, the reference interpreter run on them: the golden data of the build.
GoldenData make_golden(const CompileArgs& args, const Program& program, const Function& entry,
                       int64_t world, const SourceManager& sources) {
  std::vector<Tensor> tensors = seeded_arguments(entry, args.seed);
  entry_scalars(args, entry, tensors);
  for (const std::string& spec : args.inputs) {
    const auto [name, file] = *split_input(spec);
    size_t index = entry.params.size();
    for (size_t i = 0; i < entry.params.size(); ++i)
      if (entry.params[i].name == name) index = i;
    if (index == entry.params.size() || entry.params[index].kind != ParamKind::kTensor ||
        entry.params[index].dir == Direction::kOut) {
      std::string inputs;
      for (const Param& p : entry.params)
        if (p.kind == ParamKind::kTensor && p.dir != Direction::kOut)
          inputs += (inputs.empty() ? "" : ", ") + p.name;
      throw UsageError("--input " + spec + ": '" + name + "' is not an input of '" + entry.name +
                       "' (its inputs: " + (inputs.empty() ? "none" : inputs) + ")");
    }
    const Param& p = entry.params[index];
    Tensor t = read_npy(file);
    if (t.dtype() != p.type.dtype || t.shape() != p.type.shape)
      throw UsageError("--input " + spec + ": '" + name + "' must be " +
                       shape_string(p.type.dtype, p.type.shape) + ", but " + file + " holds " +
                       t.describe());
    tensors[index] = t;
  }
  GoldenData golden;
  golden.seed = args.seed;
  for (const Tensor& t : tensors) golden.before.push_back(t.contiguous());
  InterpretOptions options;
  options.world = world;
  options.sources = &sources;
  interpret(program, entry, tensors, options);
  golden.after = std::move(tensors);
  return golden;
}

// -o DIR: lowers every kernel, computes the golden data, writes the directory.
int write_output(const CompileArgs& args, const Program& program, const CheckResult& result,
                 const SourceManager& sources, std::ostream& out) {
  BuildRequest request;
  request.program = &program;
  request.entry = result.entry;
  request.distributed = result.distributed;
  request.world = result.world;
  request.device_ids = args.device_ids;
  request.platform = args.platform;
  request.origin = std::filesystem::path(args.input).filename().string();
  request.sources = &sources;
  {
    std::vector<Tensor> seeded = seeded_arguments(*result.entry, args.seed);
    request.scalars = entry_scalars(args, *result.entry, seeded);
  }
  std::optional<GoldenData> golden;
  if (!args.no_golden) golden = make_golden(args, program, *result.entry, result.world, sources);
  LowerOptions lower_options;
  lower_options.world = result.world;
  lower_options.sources = &sources;
  const BuildSummary summary = write_build(
      *args.output, request, [&](const Function& k) { return lower_kernel(k, lower_options); },
      golden);
  out << args.input << ": wrote " << build_kind_name(summary.kind) << " build " << *args.output
      << ": entry '" << result.entry->name << "', " << summary.kernels
      << (summary.kernels == 1 ? " kernel" : " kernels");
  if (summary.kind == BuildKind::kL3)
    out << ", " << summary.dispatches << (summary.dispatches == 1 ? " dispatch" : " dispatches")
        << ", WORLD = " << result.world;
  out << ", platform " << args.platform << ", "
      << (summary.golden ? "golden data (seed " + std::to_string(args.seed) + ")"
                         : std::string("no golden data"))
      << "\n";
  return static_cast<int>(ExitCode::kOk);
}

}  // namespace

int run_compile(const CompileArgs& given, std::ostream& out, std::ostream& err) {
  CompileArgs args = given;
  const std::optional<Platform> platform = try_parse_platform(args.platform);
  if (!platform) {
    err << "pypto-compile: error: unknown platform '" << args.platform
        << "'; valid platforms: a2a3sim, a2a3, a5sim, a5\n";
    return static_cast<int>(ExitCode::kUsage);
  }
  if (args.world && (*args.world < 1 || *args.world > kMaxWorld)) {
    err << "pypto-compile: error: --world must be between 1 and " << kMaxWorld << ", not "
        << *args.world << "\n";
    return static_cast<int>(ExitCode::kUsage);
  }
  if (!args.device_ids.empty()) {
    const auto count = static_cast<int64_t>(args.device_ids.size());
    if (args.world && *args.world != count) {
      err << "pypto-compile: error: --world " << *args.world << " but --device-ids lists " << count
          << " device(s); give one id per rank, or leave --world out (it defaults to their "
             "count)\n";
      return static_cast<int>(ExitCode::kUsage);
    }
    try {
      check_device_ids_override(args.device_ids, count);  // distinct ids >= 0, as pypto-coord's
    } catch (const UsageError& e) {
      err << "pypto-compile: error: " << e.what() << "\n";
      return static_cast<int>(ExitCode::kUsage);
    }
    args.world = count;
  }
  if (!args.check && !args.output) {
    err << "pypto-compile: error: nothing to do: pass --check or -o DIR\n";
    return static_cast<int>(ExitCode::kUsage);
  }
  for (const std::string& spec : args.inputs) {
    if (!split_input(spec)) {
      err << "pypto-compile: error: --input " << spec << ": expected NAME=FILE.npy\n";
      return static_cast<int>(ExitCode::kUsage);
    }
  }
  if (!args.output && args.no_golden) {
    err << "pypto-compile: error: --no-golden only applies with -o DIR (--check runs the "
           "reference interpreter)\n";
    return static_cast<int>(ExitCode::kUsage);
  }
  if (args.no_golden && !args.inputs.empty()) {
    err << "pypto-compile: error: --input gives golden inputs, but --no-golden writes none\n";
    return static_cast<int>(ExitCode::kUsage);
  }

  SourceManager sources;
  DiagnosticEngine diags(sources);
  LoadOptions load;
  load.lib_dirs = args.lib_dirs;
  load.lib_dirs.push_back(standard_library_dir());
  Program program = load_program(args.input, load, sources, diags);
  // Type errors on top of syntax errors are mostly noise; check a program that parsed.
  CheckResult result;
  if (!diags.has_errors()) {
    CheckOptions options;
    options.world = args.world;
    options.arch = platform->arch;
    result = check(program, options, diags);
  }
  err << diags.render();
  if (diags.has_errors()) {
    const int n = diags.error_count();
    err << n << (n == 1 ? " error" : " errors") << " generated.\n";
    return static_cast<int>(ExitCode::kFail);
  }
  // --check runs everything -o runs (code generation, the reference run on
  // seeded inputs with its deadlock and error detection), into a scratch
  // directory it removes, so that "ok" means -o succeeds.
  std::optional<fs::path> scratch;
  CompileArgs effective = args;
  if (!args.output) {
    std::string pattern = (fs::temp_directory_path() / "pypto-check-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      err << "pypto-compile: error: cannot create a scratch directory under "
          << fs::temp_directory_path().string() << " for --check\n";
      return static_cast<int>(ExitCode::kInfra);
    }
    scratch = fs::path(pattern);
    effective.output = pattern;
  }
  struct RemoveScratch {
    const std::optional<fs::path>& dir;
    ~RemoveScratch() {
      std::error_code ec;
      if (dir) fs::remove_all(*dir, ec);
    }
  } remove_scratch{scratch};
  try {
    std::ostringstream wrote;
    const int code = write_output(effective, program, result, sources, scratch ? wrote : out);
    if (args.check) {
      out << args.input << ": ok: " << (result.distributed ? "L3" : "L2") << " program, entry '"
          << (result.entry ? result.entry->name : "?") << "'";
      if (result.distributed) out << ", WORLD = " << result.world;
      out << ", platform " << args.platform << "\n";
    }
    return code;
  } catch (const Error& e) {
    // ProgramError (1): a construct code generation or the reference run refuses;
    // UsageError (2): a bad --input; InfraError (3): a file that cannot be read or written.
    const std::string message = e.what();
    if (message.find(": error: ") != std::string::npos) {
      err << message << (message.empty() || message.back() != '\n' ? "\n" : "");
    } else {
      err << "pypto-compile: error: " << message << "\n";
    }
    return static_cast<int>(e.exit_code());
  }
}

std::string standard_library_dir() {
  if (const char* env = std::getenv("PYPTO_PTL_LIB_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed =
        (exe.parent_path() / ".." / PYPTO_INSTALL_PTL_LIB_SUBDIR).lexically_normal();
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return PYPTO_SOURCE_PTL_LIB_DIR;
}

int pypto_compile_main(int argc, char** argv) {
  CLI::App app{"pypto-compile: compile a .ptl tile program into a build directory"};
  app.set_version_flag("--version", version_text("pypto-compile"));
  CompileArgs args;
  app.add_option("program", args.input, "the .ptl program")->required();
  app.add_flag("--check", args.check,
               "check the program as -o would (diagnostics, code generation, the reference "
               "run on seeded inputs) without writing a build directory");
  app.add_option("--world", args.world,
                 "world size: the value of WORLD (L3 programs; default: the number of "
                 "--device-ids)");
  app.add_option("--device-ids", args.device_ids,
                 "device ids of the ranks, comma-separated (L3; default 0 .. WORLD-1)")
      ->delimiter(',');
  app.add_option("--platform", args.platform, "a2a3sim (default), a2a3, a5sim or a5");
  app.add_option("-o,--output", args.output, "build directory to write")
      ->transform(normal_path);
  app.add_flag("--no-golden", args.no_golden,
               "write no golden/ (no reference run; runs then need --input)");
  app.add_option("--input", args.inputs,
                 "NAME=FILE.npy: golden input of parameter NAME instead of seeded data "
                 "(repeatable)");
  app.add_option("--scalar", args.scalars,
                 "NAME=VALUE: value of scalar parameter NAME of the entry: the build's default "
                 "and the golden data's (repeatable; default: a seeded value)");
  app.add_option("--seed", args.seed, "seed of the generated golden inputs (default 0)");
  app.add_option("-L,--lib-dir", args.lib_dirs, "directory searched by 'import' (repeatable)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  }
  try {
    return run_compile(args, std::cout, std::cerr);
  } catch (const std::exception& e) {
    // Not expected (the front end reports through diagnostics); never die with a trace.
    std::cerr << "pypto-compile: internal error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kInfra);
  }
}

}  // namespace pypto::compiler
