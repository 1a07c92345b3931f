// Helpers shared by the code generators (compiler/codegen_*.cc): functions by
// name, source locations for messages, argument kinds of a function's
// signature, C++ literals.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "artifact/kernel_config.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"

namespace pypto::compiler {

// Every function of a checked program, by name (names are unique program-wide).
class FunctionTable {
 public:
  explicit FunctionTable(const Program& program);
  // nullptr when `name` is not a function (a builtin, say).
  const Function* find(const std::string& name) const;
  // Adds a function generated after parsing (a window specialization).
  void add(const Function* f) { functions_[f->name] = f; }

 private:
  std::map<std::string, const Function*> functions_;
};

// "file:line:col" of a span, or "" without sources or location.
std::string where(const SourceManager* sources, Span span);

// `message` rendered as the checker renders its errors (DiagnosticEngine:
// "file:line:col: error: message", the source line, a caret), without the
// final line break; "" without sources or location.
std::string located_error(const SourceManager* sources, Span span, const std::string& message);

// Throws ProgramError with located_error(...), or `message` alone when the
// location is unknown.
[[noreturn]] void codegen_error(const SourceManager* sources, Span span,
                                const std::string& message);

// The kinds of `f`'s parameters in order: In/Out/InOut (tensors), Window, Scalar.
std::vector<ArgKind> signature_of(const Function& f);

// The kernels a chip function submits, directly or through the chip functions
// it inlines, in order of first call.
std::vector<const Function*> kernels_called(const Function& chip, const FunctionTable& table);

// A C++ string literal of `text` (quotes and escapes included).
std::string cpp_string(const std::string& text);

// cpp_string(text) split into adjacent literals, one per line, so that no line
// is longer than `width` columns when each continuation line starts with
// `indent` spaces (the first line's literal starts at column `first_column`).
std::string cpp_string_wrapped(const std::string& text, size_t first_column, size_t indent,
                               size_t width = 100);

// "PYPTO_F32" ... for a dtype.
const char* abi_dtype_name(DType dtype);

// "kReduceStepFuncId" for "reduce_step".
std::string func_id_constant(const std::string& kernel_name);

// `text` as "// " comment lines of at most `width` columns (words kept whole).
std::string comment_block(const std::string& text, size_t width = 80);

// "f32[1, 256]".
std::string type_text(DType dtype, const std::vector<int64_t>& shape);

}  // namespace pypto::compiler
