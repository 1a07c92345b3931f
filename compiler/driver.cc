#include "compiler/driver.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/error.h"
#include "common/run_config.h"
#include "compiler/checker.h"
#include "compiler/loader.h"

namespace pypto::compiler {

namespace {
// Beyond any machine the runtime targets; keeps host-plan enumeration bounded.
constexpr int64_t kMaxWorld = 65536;
}  // namespace

int run_compile(const CompileArgs& args, std::ostream& out, std::ostream& err) {
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
  if (args.output) {
    err << "pypto-compile: error: code generation is not implemented yet; only --check is "
           "available (pypto-compile "
        << args.input << " --check)\n";
    return static_cast<int>(ExitCode::kInfra);
  }
  if (!args.check) {
    err << "pypto-compile: error: nothing to do: pass --check (code generation with -o DIR is "
           "not implemented yet)\n";
    return static_cast<int>(ExitCode::kUsage);
  }

  SourceManager sources;
  DiagnosticEngine diags(sources);
  LoadOptions load;
  load.lib_dirs = args.lib_dirs;
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
  out << args.input << ": ok: " << (result.distributed ? "L3" : "L2") << " program, entry '"
      << (result.entry ? result.entry->name : "?") << "'";
  if (result.distributed) out << ", WORLD = " << result.world;
  out << ", platform " << args.platform << "\n";
  return static_cast<int>(ExitCode::kOk);
}

int pypto_compile_main(int argc, char** argv) {
  CLI::App app{"pypto-compile: compile a .ptl tile program into a build directory"};
  CompileArgs args;
  app.add_option("program", args.input, "the .ptl program")->required();
  app.add_flag("--check", args.check, "parse and check the program, print diagnostics");
  app.add_option("--world", args.world, "world size: the value of WORLD (L3 programs)");
  app.add_option("--platform", args.platform, "a2a3sim (default), a2a3, a5sim or a5");
  app.add_option("-o,--output", args.output,
                 "build directory to write (not implemented yet: exits 3)");
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
