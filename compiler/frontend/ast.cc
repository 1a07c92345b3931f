#include "compiler/frontend/ast.h"

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

ExprPtr clone(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->span = e.span;
  c->int_value = e.int_value;
  c->float_value = e.float_value;
  c->bool_value = e.bool_value;
  c->name = e.name;
  c->name_span = e.name_span;
  c->op = e.op;
  c->dtype = e.dtype;
  for (const ExprPtr& a : e.args) c->args.push_back(a ? clone(*a) : nullptr);
  c->type = e.type;
  c->const_value = e.const_value;
  return c;
}

namespace {
ExprPtr clone_or_null(const ExprPtr& e) { return e ? clone(*e) : nullptr; }
std::vector<StmtPtr> clone_block(const std::vector<StmtPtr>& block) {
  std::vector<StmtPtr> out;
  for (const StmtPtr& s : block) out.push_back(s ? clone(*s) : nullptr);
  return out;
}
}  // namespace

StmtPtr clone(const Stmt& s) {
  auto c = std::make_unique<Stmt>();
  c->kind = s.kind;
  c->span = s.span;
  c->name = s.name;
  c->name_span = s.name_span;
  c->value = clone_or_null(s.value);
  c->on = clone_or_null(s.on);
  c->lo = clone_or_null(s.lo);
  c->hi = clone_or_null(s.hi);
  c->step = clone_or_null(s.step);
  c->body = clone_block(s.body);
  c->else_body = clone_block(s.else_body);
  return c;
}

Function clone(const Function& f) {
  Function c;
  c.kind = f.kind;
  c.core = f.core;
  c.name = f.name;
  c.name_span = f.name_span;
  c.span = f.span;
  c.shape_params = f.shape_params;
  c.instance_of = f.instance_of;
  for (const Param& p : f.params) {
    Param q;
    q.name = p.name;
    q.span = p.span;
    q.type_span = p.type_span;
    q.kind = p.kind;
    q.dir = p.dir;
    q.dtype = p.dtype;
    for (const ExprPtr& d : p.dims) q.dims.push_back(clone_or_null(d));
    q.type = p.type;
    q.at = p.at;
    q.at_span = p.at_span;
    c.params.push_back(std::move(q));
  }
  c.body = clone_block(f.body);
  return c;
}

void for_each_expr(Expr& e, const std::function<void(Expr&)>& visit) {
  visit(e);
  for (ExprPtr& a : e.args)
    if (a) for_each_expr(*a, visit);
}

void for_each_expr(std::vector<StmtPtr>& block, const std::function<void(Expr&)>& visit) {
  for (StmtPtr& s : block) {
    if (!s) continue;
    for (ExprPtr* e : {&s->value, &s->on, &s->lo, &s->hi, &s->step})
      if (*e) for_each_expr(**e, visit);
    for_each_expr(s->body, visit);
    for_each_expr(s->else_body, visit);
  }
}

void for_each_declared_name(const std::vector<StmtPtr>& block,
                            const std::function<void(const std::string&, Span)>& visit) {
  for (const StmtPtr& s : block) {
    if (!s) continue;
    if (s->kind == StmtKind::kLet || s->kind == StmtKind::kConst || s->kind == StmtKind::kFor)
      visit(s->name, s->name_span);
    for_each_declared_name(s->body, visit);
    for_each_declared_name(s->else_body, visit);
  }
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
       << " " << f.name;
    if (f.generic()) {
      os << " <";
      for (size_t i = 0; i < f.shape_params.size(); ++i)
        os << (i ? " " : "") << f.shape_params[i].name;
      os << ">";
    }
    os << " (";
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
