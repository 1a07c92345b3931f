// The arguments of one L2 run: In/InOut data from golden/inputs/<name>.npy or
// from --input NAME=FILE.npy, Out parameters allocated fresh (docs/commands.md,
// "Inputs").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "coordinator/program_data.h"
#include "pypto/tensor.h"

namespace pypto::coord {

namespace fs = std::filesystem;

struct InputOverride {
  std::string name;
  fs::path file;
};

// Parses "NAME=FILE.npy"; throws UsageError for any other shape.
// `flag` names the option in the message (--input, --expected).
InputOverride parse_input_override(const std::string& text, const std::string& flag = "--input");

struct ProgramArguments {
  std::vector<Tensor> tensors;        // one per parameter, in call order
  std::vector<std::string> sources;   // where each came from, for the summary
};

// Error classes, so that exec can tell a wrong command line from a broken directory:
// - UsageError (2): an override names no parameter, an Out parameter, or one
//   twice; an --input file has the wrong dtype/shape; an input has no data
//   (no golden/ and no --input).
// - InfraError / ArtifactError (3): a file is missing, unreadable or not a
//   valid .npy; a golden/inputs file does not match its parameter; an Out
//   parameter of dynamic shape has no golden/expected file to size it.
ProgramArguments prepare_arguments(const ProgramData& program,
                                   const std::vector<InputOverride>& overrides);

}  // namespace pypto::coord
