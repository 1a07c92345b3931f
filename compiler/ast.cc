#include "compiler/ast.h"

#include <sstream>

namespace pypto::compiler {

const char* func_kind_name(FuncKind kind) {
  switch (kind) {
    case FuncKind::kKernel:
      return "kernel";
    case FuncKind::kChip:
      return "chip function";
    case FuncKind::kHost:
      return "host function";
  }
  return "function";
}

namespace {

// Operator tokens print as their spelling without quotes.
std::string op_text(Tok op) {
  std::string s = tok_name(op);
  if (s.size() > 2 && s.front() == '\'') s = s.substr(1, s.size() - 2);
  return s;
}

void dump_args(const Expr& e, std::ostringstream& os) {
  for (const ExprPtr& a : e.args) os << " " << (a ? dump(*a) : "<null>");
}

void dump_block(const std::vector<StmtPtr>& body, std::ostringstream& os) {
  os << "{";
  for (size_t i = 0; i < body.size(); ++i) os << (i ? " " : "") << dump(*body[i]);
  os << "}";
}

}  // namespace

std::string dump(const Expr& e) {
  std::ostringstream os;
  switch (e.kind) {
    case ExprKind::kInt:
      os << e.int_value;
      break;
    case ExprKind::kFloat:
      os << e.float_value;
      break;
    case ExprKind::kBool:
      os << (e.bool_value ? "true" : "false");
      break;
    case ExprKind::kName:
      os << e.name;
      break;
    case ExprKind::kCall:
      os << "(call " << e.name;
      dump_args(e, os);
      os << ")";
      break;
    case ExprKind::kIndex:
      os << "(index";
      dump_args(e, os);
      os << ")";
      break;
    case ExprKind::kUnary:
    case ExprKind::kBinary:
      os << "(" << op_text(e.op);
      dump_args(e, os);
      os << ")";
      break;
    case ExprKind::kList:
      os << "(list";
      dump_args(e, os);
      os << ")";
      break;
    case ExprKind::kTypeLit:
      os << "(type " << dtype_name(e.dtype);
      dump_args(e, os);
      os << ")";
      break;
    case ExprKind::kDType:
      os << dtype_name(e.dtype);
      break;
  }
  return os.str();
}

std::string dump(const Stmt& s) {
  std::ostringstream os;
  auto val = [](const ExprPtr& e) { return e ? dump(*e) : std::string("<null>"); };
  switch (s.kind) {
    case StmtKind::kLet:
      os << "(let " << s.name << " " << val(s.value) << ")";
      break;
    case StmtKind::kConst:
      os << "(const " << s.name << " " << val(s.value) << ")";
      break;
    case StmtKind::kAssign:
      os << "(= " << s.name << " " << val(s.value) << ")";
      break;
    case StmtKind::kCall:
      os << val(s.value);
      if (s.on) os << " on " << val(s.on);
      break;
    case StmtKind::kFor:
      os << "(for " << s.name << " " << val(s.lo) << " " << val(s.hi);
      if (s.step) os << " step " << val(s.step);
      os << " ";
      dump_block(s.body, os);
      os << ")";
      break;
    case StmtKind::kIf:
      os << "(if " << val(s.value) << " ";
      dump_block(s.body, os);
      if (!s.else_body.empty()) {
        os << " else ";
        dump_block(s.else_body, os);
      }
      os << ")";
      break;
  }
  return os.str();
}

std::string dump(const Module& m) {
  std::ostringstream os;
  for (const Import& i : m.imports) os << "(import \"" << i.path << "\")\n";
  for (const ConstDecl& c : m.consts)
    os << "(const " << c.name << " " << (c.value ? dump(*c.value) : "<null>") << ")\n";
  for (const Function& f : m.functions) {
    os << "("
       << (f.kind == FuncKind::kKernel ? (f.core == CoreType::kAic ? "kernel aic" : "kernel aiv")
           : f.kind == FuncKind::kChip ? "chip"
                                       : "host")
       << " " << f.name << " (";
    for (size_t i = 0; i < f.params.size(); ++i) {
      const Param& p = f.params[i];
      os << (i ? " " : "") << p.name << ":";
      if (p.kind == ParamKind::kWindow) os << "window ";
      if (p.kind == ParamKind::kTensor) os << direction_name(p.dir) << " ";
      os << dtype_name(p.dtype);
      if (p.kind != ParamKind::kScalar) {
        os << "[";
        for (size_t d = 0; d < p.dims.size(); ++d) os << (d ? " " : "") << dump(*p.dims[d]);
        os << "]";
      }
    }
    os << ") ";
    dump_block(f.body, os);
    os << ")\n";
  }
  return os.str();
}

}  // namespace pypto::compiler
