// --validate: actual outputs against golden/expected/<name>.npy with
// golden.json's tolerances (docs/commands.md, "Validation").
//
// An element passes when |actual - expected| <= atol + rtol * |expected|
// (numpy.isclose's rule, asymmetric in `expected`), when both are NaN, or when
// both are the same infinity. A NaN against a number fails, as does an
// infinity against anything but itself. Integer and bool outputs use the same
// rule on their values (exact with the usual rtol = atol = 0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/program_data.h"
#include "coordinator/program_inputs.h"
#include "pypto/tensor.h"

namespace pypto::coord {

struct OutputComparison {
  std::string name;
  int64_t total = 0;
  int64_t mismatches = 0;
  // The first mismatching element (row-major order).
  std::vector<int64_t> first_index;
  int64_t first_flat = -1;
  std::string expected_value;  // shortest round-trip text of the element
  std::string actual_value;
  std::string bound;           // atol + rtol*|expected| at that element
  // Set when the tensors cannot be compared at all (dtype or shape differ).
  std::string problem;

  bool ok() const { return problem.empty() && mismatches == 0; }
  // One line: "output 'c': 3 of 1024 elements differ ...; first at [0, 3] (flat 3): ..."
  std::string describe(double rtol, double atol) const;
};

// Element by element; `actual` and `expected` may have any layout.
OutputComparison compare_output(const std::string& name, const Tensor& actual,
                                const Tensor& expected, double rtol, double atol);

struct ValidationReport {
  double rtol = 0;
  double atol = 0;
  std::vector<OutputComparison> outputs;  // golden.json's outputs, in its order

  bool ok() const;
  int failures() const;
};

// Compares every output golden.json lists; `args` holds one tensor per
// parameter in call order. Needs program.golden. A golden/expected file
// that cannot be read or has another dtype than its parameter is an
// ArtifactError (exit 3): the directory is broken, not the program.
// `expected` (NAME=FILE.npy, --expected) replaces golden/expected/<name>.npy for
// the outputs it names.
ValidationReport validate_outputs(const ProgramData& program, const std::vector<Tensor>& args,
                                  const std::vector<InputOverride>& expected = {});

// "[3, 17]".
std::string index_text(const std::vector<int64_t>& index);

}  // namespace pypto::coord
