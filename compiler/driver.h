// What `pypto-compile` does, apart from parsing its command line: load the
// program, check it, print diagnostics, choose the exit code. Kept out of the
// thin main so tests can run it in-process.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace pypto::compiler {

struct CompileArgs {
  std::string input;
  bool check = false;
  std::optional<int64_t> world;
  std::string platform = "a2a3sim";
  std::optional<std::string> output;  // -o DIR: not implemented yet
  std::vector<std::string> lib_dirs;
};

// Exit codes (docs/errors.md): 0 the program is fine, 1 it has errors,
// 2 usage, 3 a requested stage that does not exist yet.
int run_compile(const CompileArgs& args, std::ostream& out, std::ostream& err);

// The whole command, CLI11 parsing included.
int pypto_compile_main(int argc, char** argv);

}  // namespace pypto::compiler
