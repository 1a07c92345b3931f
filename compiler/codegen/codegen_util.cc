#include "compiler/codegen/codegen_util.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "pypto/error.h"

namespace pypto::compiler {

FunctionTable::FunctionTable(const Program& program) {
  for (const Module& m : program.modules)
    for (const Function& f : m.functions) functions_.emplace(f.name, &f);
}

const Function* FunctionTable::find(const std::string& name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second;
}

std::string where(const SourceManager* sources, Span span) {
  if (!sources || !span.valid() || span.file >= sources->size()) return "";
  const SourceFile& file = sources->file(span.file);
  const LineCol lc = file.line_col(span.begin);
  return file.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col);
}

std::string located_error(const SourceManager* sources, Span span, const std::string& message) {
  if (!sources || !span.valid() || span.file >= sources->size()) return "";
  DiagnosticEngine diags(*sources);
  diags.error(span, message);
  std::string text = diags.render();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void codegen_error(const SourceManager* sources, Span span, const std::string& message) {
  const std::string text = located_error(sources, span, message);
  throw ProgramError(text.empty() ? message : text);
}

std::vector<ArgKind> signature_of(const Function& f) {
  std::vector<ArgKind> kinds;
  for (const Param& p : f.params) {
    switch (p.kind) {
      case ParamKind::kTensor:
        kinds.push_back(p.dir == Direction::kIn    ? ArgKind::kIn
                        : p.dir == Direction::kOut ? ArgKind::kOut
                                                   : ArgKind::kInOut);
        break;
      case ParamKind::kWindow:
        kinds.push_back(ArgKind::kWindow);
        break;
      case ParamKind::kScalar:
        kinds.push_back(ArgKind::kScalar);
        break;
    }
  }
  return kinds;
}

std::vector<const Function*> kernels_called(const Function& chip, const FunctionTable& table) {
  std::vector<const Function*> out;
  std::set<const Function*> seen, visiting;
  std::function<void(const std::vector<StmtPtr>&)> walk = [&](const std::vector<StmtPtr>& body) {
    for (const StmtPtr& s : body) {
      if (!s) continue;
      if (s->kind == StmtKind::kCall && s->value && s->value->kind == ExprKind::kCall) {
        const Function* callee = table.find(s->value->name);
        if (!callee) continue;
        if (callee->kind == FuncKind::kKernel) {
          if (seen.insert(callee).second) out.push_back(callee);
        } else if (callee->kind == FuncKind::kChip && visiting.insert(callee).second) {
          walk(callee->body);
          visiting.erase(callee);
        }
      }
      walk(s->body);
      walk(s->else_body);
    }
  };
  visiting.insert(&chip);
  walk(chip.body);
  return out;
}

std::string cpp_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string cpp_string_wrapped(const std::string& text, size_t first_column, size_t indent,
                               size_t width) {
  // Room for the quotes and the ");" that usually follows.
  const size_t reserve = 4;
  std::string out;
  std::string rest = text;
  size_t column = first_column;
  while (true) {
    const size_t room = width > column + reserve ? width - column - reserve : 16;
    if (cpp_string(rest).size() <= room + 2 || rest.size() <= 16) {
      out += cpp_string(rest);
      return out;
    }
    size_t cut = rest.rfind(' ', room);
    if (cut == std::string::npos || cut == 0) cut = std::min(room, rest.size());
    out += cpp_string(rest.substr(0, cut + 1 <= rest.size() ? cut + 1 : cut)) + "\n" +
           std::string(indent, ' ');
    rest = rest.substr(std::min(cut + 1, rest.size()));
    column = indent;
  }
}

const char* abi_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "PYPTO_F32";
    case DType::kF16:
      return "PYPTO_F16";
    case DType::kBF16:
      return "PYPTO_BF16";
    case DType::kI8:
      return "PYPTO_I8";
    case DType::kI16:
      return "PYPTO_I16";
    case DType::kI32:
      return "PYPTO_I32";
    case DType::kI64:
      return "PYPTO_I64";
    case DType::kU8:
      return "PYPTO_U8";
    case DType::kBool:
      return "PYPTO_BOOL";
  }
  return "PYPTO_F32";
}

std::string func_id_constant(const std::string& kernel_name) {
  std::string out = "k";
  bool upper = true;
  for (char c : kernel_name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "FuncId";
}

std::string comment_block(const std::string& text, size_t width) {
  std::string out, current;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j == i) break;
    const std::string word = text.substr(i, j - i);
    if (!current.empty() && 3 + current.size() + 1 + word.size() > width) {
      out += "// " + current + "\n";
      current.clear();
    }
    current += (current.empty() ? "" : " ") + word;
    i = j;
  }
  if (!current.empty()) out += "// " + current + "\n";
  return out;
}

std::string type_text(DType dtype, const std::vector<int64_t>& shape) {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace pypto::compiler
