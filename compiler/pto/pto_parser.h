// Reads a .pto listing (docs/pto-format.md) into a PTO unit and checks it:
// every register defined before use with one type, operands of the right
// kind and type for each instruction, regions inside their tensors where the
// offsets are constants, blocks closed. Problems are reported clang-style
// (file:line:col: error: ... with the line and a caret) through the
// DiagnosticEngine; whatever the input, the parser neither crashes nor throws.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/frontend/source.h"
#include "compiler/pto/pto_ir.h"

namespace pypto::compiler::pto {

// Parses file `file` of `sources`. Returns the unit, or nullopt after
// reporting at least one error.
std::optional<Unit> parse(const SourceManager& sources, int32_t file, DiagnosticEngine& diags);

}  // namespace pypto::compiler::pto
