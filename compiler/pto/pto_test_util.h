// Helpers of the .pto tests: lower a kernel of an in-memory or testdata
// program; parse listings; compile an emitted body with the host compiler.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "compiler/codegen/kernel_lowering.h"
#include "compiler/pto/pto_parser.h"
#include "compiler/test_util.h"

namespace pypto::compiler::testing {

// A kernel with scalar parameters, control flow and views (lowered by
// lower_kernel_test, run by pto_emit_cpp_test).
inline constexpr const char* kScaleProgram =
    "kernel aiv scale(x: in f32[4, 8, 16], y: out f32[8, 16], alpha: f32, n: i32) {\n"
    "  let i = rank() % 4\n"
    "  let s = alpha\n"
    "  if n > 2 && !(i == 1) { s = s * 2.0 } else if n < 0 { s = 1 } else { s = -s }\n"
    "  for r in 0 .. 8 step 2 {\n"
    "    let t = load(x[i], [r, 0], [2, 16])\n"
    "    store(max(mul(t, s), 0.0), view(y, [r, 0], [2, 16]), [0, 0])\n"
    "  }\n"
    "}\n"
    "chip main(x: in f32[4, 8, 16], y: out f32[8, 16]) { scale(x, y, 0.5, 3) }\n";

inline const Function* find_function(const Program& program, const std::string& name) {
  for (const Module& m : program.modules)
    for (const Function& f : m.functions)
      if (f.name == name) return &f;
  return nullptr;
}

// Checks `text` as t.ptl (world 2 unless given) and lowers kernel `kernel`.
inline LoweredKernel lower_source(const std::string& text, const std::string& kernel,
                                  std::optional<int64_t> world = 2) {
  SourceManager sources;
  DiagnosticEngine diags(sources);
  LoadOptions load;
  load.read = [&text](const std::string& path) -> std::optional<std::string> {
    if (path == "t.ptl") return text;
    return std::nullopt;
  };
  Program program = load_program("t.ptl", load, sources, diags);
  CheckResult result;
  if (!diags.has_errors()) {
    CheckOptions options;
    options.world = world;
    result = check(program, options, diags);
  }
  if (diags.has_errors()) throw std::runtime_error("front end:\n" + diags.render());
  const Function* f = find_function(program, kernel);
  if (!f) throw std::runtime_error("no function " + kernel);
  LowerOptions lo;
  lo.world = result.world;
  lo.sources = &sources;
  return lower_kernel(*f, lo);
}

inline LoweredKernel lower_file(const std::string& file, const std::string& kernel,
                                std::optional<int64_t> world) {
  return lower_source(read_testdata(file), kernel, world);
}

// Parses `text` as "t.pto"; returns the unit or nullopt and the rendered diagnostics.
inline std::optional<pto::Unit> parse_pto(const std::string& text, std::string* diagnostics) {
  SourceManager sources;
  const int32_t file = sources.add("t.pto", text);
  DiagnosticEngine diags(sources);
  std::optional<pto::Unit> unit = pto::parse(sources, file, diags);
  if (diagnostics) *diagnostics = diags.render();
  return unit;
}

// The repository root, from the testdata directory.
inline std::string repo_root() { return std::string(PYPTO_COMPILER_TESTDATA) + "/../.."; }

// Compiles `body` (a ptoas_<unit> definition) with a wrapper exporting
// kernel_entry into a shared object under `dir`; returns its path, or throws
// with the compiler's output.
inline std::string build_kernel(const std::string& dir, const std::string& unit,
                                const std::string& body) {
  const std::string src = dir + "/" + unit + "_kernel.cpp";
  const std::string so = dir + "/" + unit + "_kernel.so";
  std::ofstream(src) << "#include \"pypto/kernel_abi.h\"\n#include \"pypto/tile.h\"\n"
                     << body << "extern \"C\" void kernel_entry(const pypto_kernel_args* args) {\n"
                     << "  ptoas_" << unit << "(args);\n}\n";
  const std::string log = dir + "/" + unit + "_cc.log";
  const std::string cmd = "c++ -std=c++17 -O2 -Wall -Wextra -Werror -fPIC -shared -I" +
                          repo_root() + "/include " + src + " -o " + so + " > " +
                          log + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    throw std::runtime_error("compiling " + src + " failed:\n" + ss.str());
  }
  return so;
}

}  // namespace pypto::compiler::testing
