// Recursive-descent parser: tokens -> Module. It reports every syntax error
// it finds and recovers at the next statement (or top-level declaration), so
// one run shows several mistakes; a partial tree is still returned.
#pragma once

#include <vector>

#include "compiler/frontend/ast.h"
#include "compiler/frontend/lexer.h"
#include "compiler/frontend/source.h"

namespace pypto::compiler {

// Nesting (blocks and expressions) deeper than this is reported instead of
// recursing further, so no input can exhaust the stack.
inline constexpr int kMaxNesting = 200;

Module parse(const std::vector<Token>& tokens, int32_t file_id, DiagnosticEngine& diags);

// Lexes and parses one file already added to `sources`.
Module parse_file(const SourceManager& sources, int32_t file_id, DiagnosticEngine& diags);

}  // namespace pypto::compiler
