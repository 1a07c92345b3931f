#include "compiler/check/checker.h"

#include <algorithm>
#include <functional>

#include "compiler/check/checker_impl.h"

namespace pypto::compiler {

namespace {

constexpr const char* kWorld = "WORLD";

// The host functions of compiler/lib/collectives.ptl (and the generic name
// of the allreduce family): calling one that is not imported gets a hint
// instead of a bare "undefined".
constexpr const char* kLibraryCollectives[] = {
    "allreduce_sum",      "allreduce_max",      "allreduce_min",  "allreduce_ring_sum",
    "allreduce_ring_max", "allreduce_ring_min", "allgather",      "allgather_cols",
    "reduce_scatter",     "broadcast",          "all_to_all",     "barrier"};

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

bool int_like(const Type& t) { return t.kind == TypeKind::kInt; }

}  // namespace

std::string Checker::describe(const Expr& e) {
  if (e.kind == ExprKind::kName) return "'" + e.name + "'";
  if (e.kind == ExprKind::kIndex && !e.args.empty() && e.args[0]) return describe(*e.args[0]);
  // A view is named after the tensor it views: "cannot write 'in' tensor 'x'".
  if (e.kind == ExprKind::kCall && e.name == "view" && !e.args.empty() && e.args[0])
    return describe(*e.args[0]);
  if (e.kind == ExprKind::kCall) return "the result of '" + e.name + "'";
  return "this argument";
}

Checker::Checker(Program& program, const CheckOptions& options, DiagnosticEngine& diags)
    : program_(program), options_(options), diags_(diags), limits_(buffer_limits(options.arch)) {
  world_ = options.world.value_or(1);
}

CheckResult Checker::run() {
  CheckResult result;
  bool has_host = false;
  for (Module& m : program_.modules)
    for (Function& f : m.functions) has_host = has_host || f.kind == FuncKind::kHost;
  result.distributed = has_host;
  globals_[kWorld] = Var{Type::of(TypeKind::kInt), Var::kConst, world_, Span{}};

  collect_consts();
  collect_functions();
  // Source order (not name order), so diagnostics come out in the order of the files.
  auto registered = [&](const Function& f) {
    auto it = functions_.find(f.name);
    return it != functions_.end() && it->second == &f;
  };
  // Index loops: checking adds instances of generic functions to the modules.
  // Generic functions are checked through their instances only.
  auto each_plain = [&](auto&& visit) {
    for (Module& m : program_.modules)
      for (size_t i = 0, n = m.functions.size(); i < n; ++i)
        if (registered(m.functions[i]) && m.functions[i].instance_of.empty()) visit(m.functions[i]);
  };
  each_plain([&](Function& f) {
    if (f.generic())
      check_generic_declaration(f);
    else
      check_params(f);
  });
  // Window buffers of host functions, so a kernel naming one gets a pointed message.
  for (auto& [name, f] : functions_) {
    if (f->kind != FuncKind::kHost) continue;
    std::function<void(const std::vector<StmtPtr>&)> scan = [&](const std::vector<StmtPtr>& b) {
      for (const StmtPtr& s : b) {
        if (s->kind == StmtKind::kLet && s->value && s->value->kind == ExprKind::kCall &&
            s->value->name == "window_buffer") {
          host_windows_.insert(s->name);
        }
        scan(s->body);
        scan(s->else_body);
      }
    };
    scan(f->body);
  }
  each_plain([&](Function& f) {
    if (!f.generic()) check_function(f);
  });
  check_recursion();
  choose_entry(result);
  result.world = world_;
  result.ok = !diags_.has_errors();
  return result;
}

bool Checker::reserved_name(const std::string& name, Span span, const char* what) {
  if (name == kWorld) {
    error(span,
          std::string("'WORLD' is the world size (set by --world); it cannot name a ") + what);
    return true;
  }
  if (find_builtin(name)) {
    error(span, "'" + name + "' is a builtin operation; it cannot name a " + what);
    return true;
  }
  return false;
}

void Checker::collect_consts() {
  for (Module& m : program_.modules) {
    for (ConstDecl& c : m.consts) {
      if (!c.value || reserved_name(c.name, c.name_span, "constant")) continue;
      auto prev = globals_.find(c.name);
      if (prev != globals_.end()) {
        error(c.name_span, "redefinition of constant '" + c.name + "'");
        note(prev->second.span, "previous definition is here");
        continue;
      }
      const Type t = check_expr(*c.value);
      if (t.is_error()) {
        globals_[c.name] = Var{Type::error(), Var::kConst, std::nullopt, c.name_span};
        continue;
      }
      if (t.kind == TypeKind::kFloat) {
        if (!c.value->const_float) {
          error(c.value->span,
                "the value of constant '" + c.name + "' must be a compile-time integer or number");
          globals_[c.name] = Var{Type::error(), Var::kConst, std::nullopt, c.name_span};
          continue;
        }
        globals_[c.name] = Var{t, Var::kConst, std::nullopt, c.name_span, c.value->const_float};
        continue;
      }
      if (t.kind != TypeKind::kInt || !c.value->const_value) {
        error(c.value->span,
              "the value of constant '" + c.name + "' must be a compile-time integer or number");
        globals_[c.name] = Var{Type::error(), Var::kConst, std::nullopt, c.name_span};
        continue;
      }
      globals_[c.name] = Var{t, Var::kConst, c.value->const_value, c.name_span};
    }
  }
}

void Checker::collect_functions() {
  for (size_t mi = 0; mi < program_.modules.size(); ++mi) {
    for (Function& f : program_.modules[mi].functions) {
      module_of_[&f] = mi;
      if (reserved_name(f.name, f.name_span, func_kind_name(f.kind))) continue;
      auto prev = functions_.find(f.name);
      if (prev != functions_.end()) {
        error(f.name_span, "redefinition of '" + f.name + "'");
        note(prev->second->name_span, "previous definition is here");
        continue;
      }
      auto g = globals_.find(f.name);
      if (g != globals_.end()) {
        error(f.name_span, "'" + f.name + "' is already defined as a constant");
        note(g->second.span, "the constant is defined here");
        continue;
      }
      functions_[f.name] = &f;
    }
  }
}

void Checker::check_params(Function& f) {
  std::set<std::string> seen;
  fn_ = nullptr;
  for (Param& p : f.params) {
    if (!seen.insert(p.name).second) error(p.span, "duplicate parameter '" + p.name + "'");
    if (p.name == kWorld) error(p.span, "'WORLD' is the world size; it cannot name a parameter");
    if (p.kind == ParamKind::kScalar) {
      p.type = Type::of(is_float_dtype(p.dtype) ? TypeKind::kFloat : TypeKind::kInt);
      p.type.dtype = p.dtype;
      continue;
    }
    Type t;
    t.kind = p.kind == ParamKind::kWindow ? TypeKind::kWindow : TypeKind::kTensor;
    t.dtype = p.dtype;
    t.dir = p.dir;
    bool ok = true;
    for (ExprPtr& d : p.dims) {
      std::optional<int64_t> v = positive_constant(*d, "an extent of '" + p.name + "'");
      if (!v) ok = false;
      t.shape.push_back(v.value_or(1));
    }
    p.type = ok ? t : Type::error();
    if (p.kind == ParamKind::kWindow && f.kind == FuncKind::kHost) {
      error(p.type_span,
            "a host function cannot take a window parameter; create windows with "
            "window_buffer(...) in the host function");
    }
  }
  // In-place parameters: `x: inout f32[R, C] at w` puts x in window parameter w.
  std::map<std::string, const Param*> placed;  // window -> the parameter it holds
  for (Param& p : f.params) {
    if (p.at.empty()) continue;
    if (f.kind != FuncKind::kChip || p.kind != ParamKind::kTensor) {
      error(p.at_span, "only a tensor parameter of a chip function can be placed in a window "
                       "with 'at'");
      continue;
    }
    const Param* w = nullptr;
    for (const Param& q : f.params)
      if (q.name == p.at) w = &q;
    if (!w || w->kind != ParamKind::kWindow) {
      error(p.at_span, "'" + p.at + "' is not a window parameter of '" + f.name +
                           "'; 'at' names one of the function's window parameters");
      continue;
    }
    if (p.type.is_error() || w->type.is_error()) continue;
    int64_t bytes = static_cast<int64_t>(dtype_size(p.type.dtype));
    int64_t window_bytes = static_cast<int64_t>(dtype_size(w->type.dtype));
    for (int64_t e : p.type.shape) bytes *= e;
    for (int64_t e : w->type.shape) window_bytes *= e;
    if (p.type.dtype != w->type.dtype) {
      error(p.at_span, "'" + p.name + "' is " + dtype_name(p.type.dtype) + " but window '" +
                           w->name + "' holds " + dtype_name(w->type.dtype) +
                           "; a tensor placed in a window needs the window's dtype");
      note(w->span, "'" + w->name + "' is declared here");
    } else if (bytes > window_bytes) {
      error(p.at_span, "'" + p.name + "' (" + shape_string(p.type.dtype, p.type.shape) + ", " +
                           std::to_string(bytes) + " bytes) does not fit window '" + w->name +
                           "' (" + shape_string(w->type.dtype, w->type.shape) + ", " +
                           std::to_string(window_bytes) + " bytes)");
      note(w->span, "'" + w->name + "' is declared here");
    } else if (auto [it, fresh] = placed.emplace(p.at, &p); !fresh) {
      error(p.at_span, "window '" + p.at + "' already holds parameter '" + it->second->name +
                           "'; a window holds at most one in-place parameter");
      note(it->second->at_span, "'" + it->second->name + "' is placed here");
    }
  }
}

void Checker::check_function(Function& f) {
  fn_ = &f;
  scopes_.clear();
  scopes_.emplace_back();
  host_loops_.clear();
  for (Param& p : f.params) scopes_.back()[p.name] = Var{p.type, Var::kParam, std::nullopt, p.span};
  check_block(f.body);
  fn_ = nullptr;
}

void Checker::choose_entry(CheckResult& result) {
  const FuncKind kind = result.distributed ? FuncKind::kHost : FuncKind::kChip;
  auto main = functions_.find("main");
  if (main != functions_.end() && main->second->kind == kind && main->second->generic()) {
    error(main->second->name_span,
          "the entry 'main' cannot be generic: its shapes are the program's and must be "
          "written out");
    return;
  }
  std::vector<Function*> candidates;
  for (auto& [name, f] : functions_)
    if (f->kind == kind && !f->generic() && f->instance_of.empty()) candidates.push_back(f);
  if (candidates.empty()) {
    diags_.error(Span{},
                 "the program has no chip or host function to run (an L2 program needs "
                 "a chip function, an L3 program a host function)");
    return;
  }
  Function* entry = nullptr;
  if (main != functions_.end() && main->second->kind == kind) {
    entry = main->second;
  } else if (candidates.size() == 1) {
    entry = candidates.front();
  } else {
    error(candidates.front()->name_span,
          std::string("the program has several ") + func_kind_name(kind) +
              "s and none is named 'main'; name the entry point 'main'");
    return;
  }
  result.entry = entry;
  if (result.distributed && !options_.world) {
    error(entry->name_span, "'" + entry->name +
                                "' is a host function, so this is an L3 program: pass the "
                                "world size with --world N");
  }
  if (!result.distributed) {
    for (const Param& p : entry->params)
      if (p.kind == ParamKind::kWindow)
        error(p.type_span, "window parameter '" + p.name + "' of the entry '" + entry->name +
                               "' needs an L3 program: windows are created by a host function");
  }
}

void Checker::check_recursion() {
  // Functions are inlined into the task graph and the host plan, so a cycle has no meaning.
  std::map<const Function*, int> state;  // 1 visiting, 2 done
  std::vector<const Function*> stack;
  std::function<bool(const Function*)> visit = [&](const Function* f) {
    state[f] = 1;
    stack.push_back(f);
    for (const Function* g : calls_[f]) {
      if (state[g] == 1) {
        std::string path;
        bool in = false;
        for (const Function* s : stack) {
          if (s == g) in = true;
          if (in) path += s->name + " -> ";
        }
        error(g->name_span, "recursive call: " + path + g->name +
                                "; functions are inlined, so recursion is not allowed");
        return true;
      }
      if (state[g] == 0 && visit(g)) return true;
    }
    stack.pop_back();
    state[f] = 2;
    return false;
  };
  for (auto& [name, f] : functions_) {
    if (state[f] == 0) {
      stack.clear();
      if (visit(f)) return;
    }
  }
}

// ------------------------------------------------------------------ statements

void Checker::declare(const std::string& name, Var var) {
  if (name == kWorld) {
    error(var.span, "'WORLD' is the world size; it cannot be redefined");
    return;
  }
  auto& scope = scopes_.back();
  auto prev = scope.find(name);
  if (prev != scope.end()) {
    error(var.span, "redefinition of '" + name + "' in the same block");
    note(prev->second.span, "previous definition is here");
    return;
  }
  scope[name] = std::move(var);
}

const Checker::Var* Checker::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto v = it->find(name);
    if (v != it->end()) return &v->second;
  }
  auto g = globals_.find(name);
  return g == globals_.end() ? nullptr : &g->second;
}

void Checker::check_block(std::vector<StmtPtr>& body) {
  scopes_.emplace_back();
  for (StmtPtr& s : body)
    if (s) check_stmt(*s);
  scopes_.pop_back();
}

void Checker::check_stmt(Stmt& s) {
  switch (s.kind) {
    case StmtKind::kLet: {
      if (!s.value) return;
      Type t = check_expr(*s.value);
      switch (t.kind) {
        case TypeKind::kVoid:
          error(s.value->span, "'" + s.value->name +
                                   "' returns nothing; there is no value to "
                                   "bind to '" +
                                   s.name + "'");
          t = Type::error();
          break;
        case TypeKind::kList:
        case TypeKind::kSymbol:
        case TypeKind::kDType:
        case TypeKind::kTypeLit:
          error(s.value->span, with_article(to_string(t)) +
                                   " is not a value; it can only be an argument of a builtin");
          t = Type::error();
          break;
        default:
          break;
      }
      declare(s.name, Var{t, Var::kLet, std::nullopt, s.name_span});
      return;
    }
    case StmtKind::kConst: {
      if (!s.value) return;
      const Type t = check_expr(*s.value);
      if (!t.is_error() && (t.kind != TypeKind::kInt || !s.value->const_value)) {
        error(s.value->span,
              "the value of constant '" + s.name + "' must be a compile-time integer");
        declare(s.name, Var{Type::error(), Var::kConst, std::nullopt, s.name_span});
        return;
      }
      declare(s.name, Var{t, Var::kConst, s.value->const_value, s.name_span});
      return;
    }
    case StmtKind::kAssign: {
      if (!s.value) return;
      const Type t = check_expr(*s.value);
      const Var* v = lookup(s.name);
      if (!v) {
        error(s.name_span, "assignment to undefined name '" + s.name + "'; declare it with 'let'");
        return;
      }
      if (v->kind != Var::kLet) {
        const char* what = v->kind == Var::kParam  ? "parameter"
                           : v->kind == Var::kLoop ? "loop variable"
                                                   : "constant";
        error(s.name_span, std::string("cannot assign to ") + what + " '" + s.name +
                               "'; only 'let' variables can be assigned");
        return;
      }
      if (t.is_error() || v->type.is_error()) return;
      const bool widen = v->type.kind == TypeKind::kFloat && t.kind == TypeKind::kInt;
      if (!(t == v->type) && !widen) {
        error(s.value->span, "cannot assign " + with_article(to_string(t)) + " to '" + s.name +
                                 "', which holds " + with_article(to_string(v->type)));
        note(v->span, "'" + s.name + "' is declared here");
      }
      return;
    }
    case StmtKind::kFor:
      check_for(s);
      return;
    case StmtKind::kIf: {
      if (s.value) {
        const Type t = check_expr(*s.value);
        if (!t.is_error() && t.kind != TypeKind::kBool)
          error(s.value->span, "the condition must be a bool, not " + to_string(t) +
                                   "; compare explicitly, e.g. 'x != 0'");
      }
      check_block(s.body);
      check_block(s.else_body);
      return;
    }
    case StmtKind::kCall:
      check_call_stmt(s);
      return;
  }
}

void Checker::check_for(Stmt& s) {
  if (!s.lo || !s.hi) return;
  const Type lo = check_expr(*s.lo);
  const Type hi = check_expr(*s.hi);
  for (const auto* p : {&lo, &hi}) {
    const Expr& e = p == &lo ? *s.lo : *s.hi;
    if (!p->is_error() && p->kind != TypeKind::kInt)
      error(e.span, "a loop bound must be an integer, not " + to_string(*p));
  }
  int64_t step = 1;
  if (s.step) {
    const Type st = check_expr(*s.step);
    if (!st.is_error()) {
      if (st.kind != TypeKind::kInt || !s.step->const_value || *s.step->const_value <= 0)
        error(s.step->span, "the loop step must be a positive compile-time integer");
      else
        step = *s.step->const_value;
    }
  }
  const bool host = fn_ && fn_->kind == FuncKind::kHost;
  bool pushed = false;
  if (host && !lo.is_error() && !hi.is_error()) {
    if (!s.lo->const_value || !s.hi->const_value) {
      const Expr& bad = s.lo->const_value ? *s.hi : *s.lo;
      error(bad.span,
            "a host loop needs compile-time bounds: the host plan is fixed when the "
            "program is compiled");
    } else {
      host_loops_.push_back(HostLoop{s.name, *s.lo->const_value, *s.hi->const_value, step,
                                     s.lo->span.to(s.hi->span), false});
      pushed = true;
    }
  }
  scopes_.emplace_back();
  declare(s.name, Var{Type::of(TypeKind::kInt), Var::kLoop, std::nullopt, s.name_span});
  check_block(s.body);
  scopes_.pop_back();
  if (pushed) host_loops_.pop_back();
}

void Checker::check_call_stmt(Stmt& s) {
  if (!s.value) return;
  Expr& call = *s.value;
  if (s.on) {
    const Type t = check_expr(*s.on);
    if (!t.is_error() && t.kind != TypeKind::kInt)
      error(s.on->span, "the target of 'on' must be a rank (an integer), not " + to_string(t));
  }
  const Type t = check_call(call, /*statement=*/true, /*dispatched=*/s.on != nullptr);
  call.type = t;
  if (!t.is_error() && t.kind != TypeKind::kVoid)
    error(call.span, "the result of '" + call.name + "' is unused; bind it with 'let'");
  if (s.on && fn_ && fn_->kind == FuncKind::kHost) {
    auto it = functions_.find(call.name);
    if (it != functions_.end() && it->second->kind == FuncKind::kChip &&
        s.on->type.kind == TypeKind::kInt)
      check_dispatch_target(s, *it->second);
  }
}

// ------------------------------------------------------------------ expressions

Type Checker::check_expr(Expr& e) {
  Type t;
  switch (e.kind) {
    case ExprKind::kInt:
      t = Type::of(TypeKind::kInt);
      e.const_value = e.int_value;
      break;
    case ExprKind::kFloat:
      t = Type::of(TypeKind::kFloat);
      e.const_float = e.float_value;
      break;
    case ExprKind::kBool:
      t = Type::of(TypeKind::kBool);
      break;
    case ExprKind::kName:
      t = check_name(e);
      break;
    case ExprKind::kIndex:
      t = check_index(e);
      break;
    case ExprKind::kUnary:
      t = check_unary(e);
      break;
    case ExprKind::kBinary:
      t = check_binary(e);
      break;
    case ExprKind::kCall:
      t = check_call(e, false, false);
      break;
    case ExprKind::kList:
      for (ExprPtr& a : e.args)
        if (a) check_expr(*a);
      t = Type::of(TypeKind::kList);
      break;
    case ExprKind::kTypeLit: {
      t.kind = TypeKind::kTypeLit;
      t.dtype = e.dtype;
      for (ExprPtr& d : e.args) {
        if (!d) return e.type = Type::error();
        std::optional<int64_t> v = positive_constant(*d, "an extent of the type");
        if (!v) return e.type = Type::error();
        t.shape.push_back(*v);
      }
      break;
    }
    case ExprKind::kDType:
      t = Type::of(TypeKind::kDType);
      t.dtype = e.dtype;
      break;
  }
  e.type = t;
  return t;
}

Type Checker::check_name(Expr& e) {
  const Var* v = lookup(e.name);
  if (v) {
    e.const_value = v->value;
    e.const_float = v->fvalue;
    return v->type;
  }
  if (functions_.count(e.name) || find_builtin(e.name)) {
    error(e.span, "'" + e.name + "' is a function; call it with '" + e.name + "(...)'");
    return Type::error();
  }
  if (fn_ && fn_->kind != FuncKind::kHost && host_windows_.count(e.name)) {
    error(e.span, "window '" + e.name + "' is not a parameter of " + func_kind_name(fn_->kind) +
                      " '" + fn_->name + "'; pass it in as a 'window' parameter");
    return Type::error();
  }
  error(e.span, "use of undefined name '" + e.name + "'");
  return Type::error();
}

Type Checker::check_index(Expr& e) {
  if (e.args.size() != 2 || !e.args[0] || !e.args[1]) return Type::error();
  const Type base = check_expr(*e.args[0]);
  const Type index = check_expr(*e.args[1]);
  if (base.is_error() || index.is_error()) return Type::error();
  if (index.kind != TypeKind::kInt) {
    error(e.args[1]->span, "an index must be an integer, not " + to_string(index));
    return Type::error();
  }
  if (base.kind == TypeKind::kWindow) {
    error(e.span,
          "a window cannot be indexed; pass the whole window, or address its cells "
          "with offsets in a kernel");
    return Type::error();
  }
  if (base.kind != TypeKind::kTensor) {
    error(e.span, "only tensors can be indexed; " + describe(*e.args[0]) + " is " +
                      with_article(to_string(base)));
    return Type::error();
  }
  if (base.shape.size() < 2) {
    error(e.span, "indexing " + describe(*e.args[0]) + " (" + to_string(base) +
                      ") would leave no dimensions; use view(...) for a 1-element region");
    return Type::error();
  }
  if (const auto& c = e.args[1]->const_value; c && (*c < 0 || *c >= base.shape[0])) {
    error(e.args[1]->span, "index " + std::to_string(*c) + " is out of range for " +
                               describe(*e.args[0]) + ", whose first extent is " +
                               std::to_string(base.shape[0]));
    return Type::error();
  }
  Type t = base;
  t.shape.erase(t.shape.begin());
  return t;
}

Type Checker::check_unary(Expr& e) {
  if (e.args.empty() || !e.args[0]) return Type::error();
  const Type x = check_expr(*e.args[0]);
  if (x.is_error()) return x;
  if (e.op == Tok::kBang) {
    if (x.kind != TypeKind::kBool) {
      error(e.span, "'!' needs a bool, not " + to_string(x));
      return Type::error();
    }
    return x;
  }
  if (!x.is_scalar()) {
    error(e.span, x.kind == TypeKind::kTile ? "negate a tile with neg(x), not '-'"
                                            : "'-' needs a number, not " + to_string(x));
    return Type::error();
  }
  if (const auto& c = e.args[0]->const_value) {
    if (*c == INT64_MIN) {
      error(e.span, "integer overflow in a constant expression");
      return Type::error();
    }
    e.const_value = -*c;
  }
  if (const auto& f = e.args[0]->const_float) e.const_float = -*f;
  return x;
}

Type Checker::check_binary(Expr& e) {
  if (e.args.size() != 2 || !e.args[0] || !e.args[1]) return Type::error();
  const Type a = check_expr(*e.args[0]);
  const Type b = check_expr(*e.args[1]);
  if (a.is_error() || b.is_error()) return Type::error();
  const std::string op = std::string(tok_name(e.op));
  if (e.op == Tok::kAndAnd || e.op == Tok::kOrOr) {
    if (a.kind != TypeKind::kBool || b.kind != TypeKind::kBool) {
      error(e.span, op + " needs bool operands, not " + to_string(a) + " and " + to_string(b));
      return Type::error();
    }
    return a;
  }
  if (a.kind == TypeKind::kTile || b.kind == TypeKind::kTile) {
    error(e.span, "tiles are combined with the builtins add, sub, mul, div, max, min, not " + op);
    return Type::error();
  }
  if (!a.is_scalar() || !b.is_scalar()) {
    error(e.span, op + " needs numbers, not " + to_string(a) + " and " + to_string(b));
    return Type::error();
  }
  const bool cmp = e.op == Tok::kEq || e.op == Tok::kNe || e.op == Tok::kLt || e.op == Tok::kLe ||
                   e.op == Tok::kGt || e.op == Tok::kGe;
  if (cmp) return Type::of(TypeKind::kBool);
  const bool ints = int_like(a) && int_like(b);
  if (e.op == Tok::kPercent && !ints) {
    error(e.span, "'%' needs integers, not " + to_string(a) + " and " + to_string(b));
    return Type::error();
  }
  const auto& ca = e.args[0]->const_value;
  const auto& cb = e.args[1]->const_value;
  if (ints && ca && cb) {
    int64_t r = 0;
    bool overflow = false;
    switch (e.op) {
      case Tok::kPlus:
        overflow = __builtin_add_overflow(*ca, *cb, &r);
        break;
      case Tok::kMinus:
        overflow = __builtin_sub_overflow(*ca, *cb, &r);
        break;
      case Tok::kStar:
        overflow = __builtin_mul_overflow(*ca, *cb, &r);
        break;
      case Tok::kSlash:
      case Tok::kPercent:
        if (*cb == 0) {
          error(e.span, "division by zero in a constant expression");
          return Type::error();
        }
        overflow = *ca == INT64_MIN && *cb == -1;
        if (!overflow) r = e.op == Tok::kSlash ? *ca / *cb : *ca % *cb;
        break;
      default:
        break;
    }
    if (overflow) {
      error(e.span, "integer overflow in a constant expression");
      return Type::error();
    }
    e.const_value = r;
  }
  if (!ints) {
    // Float arithmetic on compile-time numbers folds in double (IEEE: a
    // division by zero is an infinity, as at run time).
    auto number = [](const Expr& x) -> std::optional<double> {
      if (x.const_float) return x.const_float;
      if (x.const_value) return static_cast<double>(*x.const_value);
      return std::nullopt;
    };
    const auto fa = number(*e.args[0]), fb = number(*e.args[1]);
    if (fa && fb) {
      switch (e.op) {
        case Tok::kPlus:
          e.const_float = *fa + *fb;
          break;
        case Tok::kMinus:
          e.const_float = *fa - *fb;
          break;
        case Tok::kStar:
          e.const_float = *fa * *fb;
          break;
        case Tok::kSlash:
          e.const_float = *fa / *fb;
          break;
        default:
          break;
      }
    }
  }
  return Type::of(ints ? TypeKind::kInt : TypeKind::kFloat);
}

Type Checker::check_call(Expr& e, bool statement, bool dispatched) {
  if (!fn_) {
    for (ExprPtr& a : e.args)
      if (a) check_expr(*a);
    error(e.span, "a constant cannot call '" + e.name +
                      "'; constants are computed at compile "
                      "time");
    return Type::error();
  }
  if (const BuiltinInfo* b = find_builtin(e.name)) {
    if (dispatched) {
      error(e.span, "'on' dispatches a chip function to a rank; '" + e.name + "' is a builtin");
      return Type::error();
    }
    return check_builtin(e, *b);
  }
  auto it = functions_.find(e.name);
  if (it == functions_.end()) {
    for (ExprPtr& a : e.args)
      if (a) check_expr(*a);
    error(e.name_span, "call to undefined function '" + e.name + "'");
    if (e.name == "allreduce") {
      note(e.name_span,
           "the collectives library has allreduce_sum, allreduce_max and allreduce_min (and "
           "allreduce_ring_* over a ring); add 'import \"collectives.ptl\"'");
    }
    for (const char* c : kLibraryCollectives)
      if (e.name == c)
        note(e.name_span, "'" + e.name +
                              "' is a collective of the library shipped with the compiler; add "
                              "'import \"collectives.ptl\"'");
    return Type::error();
  }
  Type t = check_user_call(e, *it->second, dispatched);
  if (!statement && !t.is_error()) {
    error(e.span, "'" + e.name + "' returns nothing; call it as a statement");
    return Type::error();
  }
  return t;
}

Type Checker::check_user_call(Expr& e, Function& callee, bool dispatched) {
  for (ExprPtr& a : e.args)
    if (a) check_expr(*a);
  const FuncKind from = fn_->kind, to = callee.kind;
  const std::string what = std::string(func_kind_name(to)) + " '" + callee.name + "'";
  bool ok = true;
  if (from == FuncKind::kKernel) {
    error(e.name_span, "a kernel cannot call " + what + "; kernels use builtin operations only");
    ok = false;
  } else if (from == FuncKind::kChip && to == FuncKind::kHost) {
    error(e.name_span, "a chip function cannot call " + what);
    ok = false;
  } else if (from == FuncKind::kHost && to == FuncKind::kKernel) {
    error(e.name_span, "a host function cannot launch " + what +
                           " directly; call it from a chip function and dispatch that");
    ok = false;
  } else if (from == FuncKind::kHost && to == FuncKind::kChip && !dispatched) {
    error(e.span, "dispatching " + what + " needs a target rank: '" + callee.name + "(...) on r'");
    ok = false;
  } else if (dispatched && !(from == FuncKind::kHost && to == FuncKind::kChip)) {
    error(e.span,
          "'on' dispatches a chip function from a host function; it cannot be used "
          "to call " +
              what);
    ok = false;
  }
  if (!ok) {
    note(callee.name_span, "'" + callee.name + "' is defined here");
    return Type::error();
  }
  if (e.args.size() != callee.params.size()) {
    calls_[fn_].insert(&callee);
    error(e.span, "'" + callee.name + "' takes " + plural(callee.params.size(), "argument") +
                      ", but " + std::to_string(e.args.size()) + " " +
                      (e.args.size() == 1 ? "was" : "were") + " given");
    note(callee.span, "'" + callee.name + "' is defined here");
    return Type::of(TypeKind::kVoid);
  }
  Function* target = &callee;
  if (callee.generic()) {
    target = instantiate(e, callee);
    if (!target) return Type::of(TypeKind::kVoid);
    e.name = target->name;  // code generation and the interpreter call the instance
  }
  calls_[fn_].insert(target);
  if (from == FuncKind::kChip) {
    for (const Param& p : target->params) {
      if (p.at.empty()) continue;
      error(e.name_span, "chip function '" + callee.name + "' places '" + p.name +
                             "' in window '" + p.at +
                             "', so it must be dispatched from a host function ('" + callee.name +
                             "(...) on r'), not called from another chip function");
      note(p.at_span, "'" + p.name + "' is placed here");
      return Type::of(TypeKind::kVoid);
    }
  }
  for (size_t i = 0; i < e.args.size(); ++i)
    if (e.args[i]) check_argument(*e.args[i], target->params[i], *target, i);
  return Type::of(TypeKind::kVoid);
}

void Checker::check_argument(Expr& arg, const Param& param, const Function& callee, size_t index) {
  const Type& a = arg.type;
  const Type& p = param.type;
  if (a.is_error() || p.is_error()) return;
  const std::string& callee_name = callee.instance_of.empty() ? callee.name : callee.instance_of;
  const std::string where = "argument " + std::to_string(index + 1) + " of '" + callee_name +
                            "' (parameter '" + param.name + "')";
  auto mismatch = [&](const std::string& why) {
    error(arg.span, where + ": " + why);
    note(param.span, "'" + param.name + "' is declared here");
  };
  switch (param.kind) {
    case ParamKind::kScalar:
      if (!a.is_scalar()) {
        mismatch("expected " + with_article(std::string(dtype_name(param.dtype)) + " scalar") +
                 ", got " +
                 (a.kind == TypeKind::kWindow ? "window " + describe(arg) : to_string(a)));
      } else if (p.kind == TypeKind::kInt && a.kind == TypeKind::kFloat) {
        mismatch(std::string("expected an integer (") + dtype_name(param.dtype) + "), got a float");
      }
      return;
    case ParamKind::kWindow:
      if (a.kind != TypeKind::kWindow) {
        mismatch("expected a window, but " + describe(arg) + " is " + with_article(to_string(a)) +
                 "; windows come from window_buffer(...)");
        return;
      }
      break;
    case ParamKind::kTensor:
      if (a.kind != TypeKind::kTensor) {
        mismatch("expected " + with_article(to_string(p)) + ", but " + describe(arg) + " is " +
                 with_article(to_string(a)));
        return;
      }
      if (p.dir != Direction::kIn && a.dir == Direction::kIn) {
        mismatch("cannot pass 'in' tensor " + describe(arg) + " as " +
                 with_article(std::string("'") + direction_name(p.dir) + "' parameter") +
                 ": the callee writes it");
        return;
      }
      break;
  }
  if (a.dtype != p.dtype || a.shape != p.shape) {
    mismatch("expected " + shape_string(p.dtype, p.shape) + ", got " +
             shape_string(a.dtype, a.shape));
  }
}

std::optional<int64_t> Checker::positive_constant(Expr& e, const std::string& what) {
  const Type t = check_expr(e);
  if (t.is_error()) return std::nullopt;
  if (t.kind != TypeKind::kInt || !e.const_value) {
    error(e.span, what + " must be a compile-time integer (shapes are static); " +
                      (t.kind == TypeKind::kInt ? "this value is known only at run time"
                                                : "this is a " + to_string(t)));
    return std::nullopt;
  }
  if (*e.const_value <= 0) {
    error(e.span, what + " must be positive, not " + std::to_string(*e.const_value));
    return std::nullopt;
  }
  return e.const_value;
}

CheckResult check(Program& program, const CheckOptions& options, DiagnosticEngine& diags) {
  return Checker(program, options, diags).run();
}

}  // namespace pypto::compiler
