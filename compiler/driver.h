// What `pypto-compile` does, apart from parsing its command line: load the
// program, check it, print diagnostics, write the build directory (-o), choose
// the exit code. Kept out of the thin main so tests can run it in-process.
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
  // --device-ids 0,1,2,3: distributed_meta.json's device ids (one per rank);
  // WORLD defaults to their count. Without it the ids are 0 .. WORLD - 1.
  std::vector<int64_t> device_ids;
  std::string platform = "a2a3sim";
  std::optional<std::string> output;  // -o DIR: the build directory to write
  std::vector<std::string> lib_dirs;
  bool no_golden = false;           // --no-golden: no golden/ (runs then need --input)
  std::vector<std::string> inputs;  // --input NAME=FILE.npy: replaces a seeded input
  // --scalar NAME=VALUE: the value of a scalar parameter of the entry (the
  // golden data's and the build's default) instead of a seeded one.
  std::vector<std::string> scalars;
  uint64_t seed = 0;                // --seed S: of the seeded golden inputs
};

// Exit codes (docs/errors.md): 0 success, 1 the program has errors (or the
// reference run fails), 2 usage, 3 infrastructure (a file that cannot be
// read or written).
int run_compile(const CompileArgs& args, std::ostream& out, std::ostream& err);

// The .ptl library shipped with the compiler (collectives.ptl), searched by
// `import` after every -L directory: $PYPTO_PTL_LIB_DIR when set, else
// <this executable>/../share/pypto/lib when it exists (an installed compiler),
// else the source tree's compiler/lib (a build-tree compiler).
std::string standard_library_dir();

// The whole command, CLI11 parsing included.
int pypto_compile_main(int argc, char** argv);

}  // namespace pypto::compiler
