// What every run (L2 or L3) does with its outputs: write them as .npy files,
// print where they went, and --validate them against golden/.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/program_data.h"
#include "coordinator/program_inputs.h"
#include "coordinator/validate.h"
#include "pypto/tensor.h"

namespace pypto::coord {

namespace fs = std::filesystem;

// What a run (L2 or L3) is asked for beyond its dispatch flags.
struct RunRequest {
  std::vector<InputOverride> inputs;
  std::vector<std::string> scalars;     // --scalar NAME=VALUE
  std::vector<InputOverride> expected;  // --expected NAME=FILE.npy: instead of golden/expected
  std::optional<fs::path> output_dir;  // <dir>/outputs when unset
  bool validate = false;
};

// The start every run shares: refuses --validate without golden/ (UsageError),
// prepares the arguments (program_inputs.h), removes the outputs an earlier run left.
// With --validate it also refuses (UsageError) inputs or scalars other than
// those golden/expected was computed from, unless --expected gives every
// expected output.
struct RunStart {
  ProgramArguments args;
  fs::path output_dir;
  std::vector<ScalarValue> scalars;  // one per scalar parameter: the default or --scalar
};
RunStart start_run(const ProgramData& program, const RunRequest& request);

// "12.3 ms" (two decimals under 10 ms).
std::string ms_text(double ms);

// Removes <dir>/<name>.npy of every output parameter: only those, since an
// --output-dir may hold anything else. A failed run then leaves none behind.
void remove_output_files(const fs::path& dir, const std::vector<ParamInfo>& params);

// Writes every Out/InOut argument to <dir>/<name>.npy and prints "outputs: ..." to `out`.
std::vector<fs::path> write_output_files(const fs::path& dir, const std::vector<ParamInfo>& params,
                                         const std::vector<Tensor>& args, std::ostream& out);

// For a failed output, where it was produced ("; rank 3 wrote that element"), or "".
using MismatchLocator = std::function<std::string(const OutputComparison&)>;

// --validate: compares, prints "validation: passed (...)", or prints the failure and
// throws ValidationError naming each differing output, its first mismatch and where
// the actual outputs are.
// `expected` (--expected) replaces golden/expected/<name>.npy for the outputs it names.
ValidationReport validate_and_report(const ProgramData& program, const std::vector<Tensor>& args,
                                     const fs::path& output_dir, std::ostream& out,
                                     const MismatchLocator& locate = {},
                                     const std::vector<InputOverride>& expected = {});

// "scalars: alpha=2.5, b=1\n", or "" for a program without scalar parameters.
std::string scalars_line(const ProgramData& program, const std::vector<ScalarValue>& values);

}  // namespace pypto::coord
