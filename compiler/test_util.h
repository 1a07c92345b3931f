// Helpers shared by the compiler's tests: run the front end on in-memory files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "compiler/check/checker.h"
#include "compiler/driver.h"
#include "compiler/frontend/loader.h"
#include "compiler/frontend/source.h"

namespace pypto::compiler::testing {

// One pypto-compile run in this process: its exit code and what it printed.
struct Ran {
  int code;
  std::string out, err;
};

inline Ran run(const CompileArgs& args) {
  std::ostringstream out, err;
  const int code = run_compile(args, out, err);
  return Ran{code, out.str(), err.str()};
}

// <TempDir>/pypto_compiler_test_<pid>/<name>, removed first (and created when
// `create`); the whole <pid> directory is removed when the test process exits,
// so no test leaves files behind.
inline std::filesystem::path scratch_dir(const std::string& name, bool create = true) {
  namespace fs = std::filesystem;
  struct Root {
    fs::path path;
    ~Root() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Root root{fs::path(::testing::TempDir()) /
                         ("pypto_compiler_test_" + std::to_string(::getpid()))};
  const fs::path dir = root.path / name;
  fs::remove_all(dir);
  fs::create_directories(create ? dir : dir.parent_path());
  return dir;
}

// The whole text of a file (empty when it cannot be read: the test's
// assertions then fail on the content).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// compiler/testdata/<name>, and compiler/lib/<name> (the shipped .ptl library).
inline std::string read_testdata(const std::string& name) {
  return read_text(std::string(PYPTO_COMPILER_TESTDATA) + "/" + name);
}
inline std::string read_library(const std::string& name) {
  return read_text(std::string(PYPTO_COMPILER_LIB) + "/" + name);
}

struct FrontEndRun {
  std::string diagnostics;  // rendered, as the command prints them
  int errors = 0;
  CheckResult result;                // points into `program`
  std::unique_ptr<Program> program;  // kept alive for `result.entry`
};

// Loads "t.ptl" (plus any other files of `files`, for imports) and checks it
// when it parsed. `world` defaults to 2 so L3 test programs need no option.
inline FrontEndRun run_front_end(const std::map<std::string, std::string>& files,
                                 std::optional<int64_t> world = 2, Arch arch = Arch::kA2A3,
                                 const std::string& root = "t.ptl") {
  SourceManager sources;
  DiagnosticEngine diags(sources);
  LoadOptions load;
  load.lib_dirs = {"lib"};
  load.read = [&files](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  FrontEndRun run;
  run.program = std::make_unique<Program>(load_program(root, load, sources, diags));
  if (!diags.has_errors()) {
    CheckOptions options;
    options.world = world;
    options.arch = arch;
    run.result = check(*run.program, options, diags);
  }
  run.diagnostics = diags.render();
  run.errors = diags.error_count();
  return run;
}

inline std::string diagnose(const std::string& text, std::optional<int64_t> world = 2,
                            Arch arch = Arch::kA2A3) {
  return run_front_end({{"t.ptl", text}}, world, arch).diagnostics;
}

}  // namespace pypto::compiler::testing
