// Generic functions: `f<R, C>(x: in f32[R, C])`. A call binds each shape
// parameter from the extents of its tensor and window arguments — an extent
// written `R` takes the argument's extent, one written `k * R` (k a constant)
// its extent divided by k — and calls the instance of f for that binding: a
// copy of f with the parameters replaced by their values, checked like any
// other function and generated under its own name. Instances are shared by
// every call with the same binding.
#include <functional>
#include <set>

#include "compiler/check/checker_impl.h"

namespace pypto::compiler {

namespace {

constexpr int kMaxInstantiationDepth = 32;

// Bare option words (notify(..., set), wait(..., ge, ...)) read as options
// whatever variables exist, so a shape parameter may not take their name.
bool is_option_word(const std::string& name) {
  static const std::set<std::string> words = {"set", "add", "eq", "ne", "gt", "ge", "lt", "le"};
  return words.count(name) > 0;
}

const ShapeParam* find_shape_param(const Function& f, const std::string& name) {
  for (const ShapeParam& p : f.shape_params)
    if (p.name == name) return &p;
  return nullptr;
}

bool mentions_shape_param(const Expr& e, const Function& f) {
  if (e.kind == ExprKind::kName && find_shape_param(f, e.name)) return true;
  for (const ExprPtr& a : e.args)
    if (a && mentions_shape_param(*a, f)) return true;
  return false;
}

// Replaces the shape parameters' names by their values.
void substitute(Expr& e, const std::map<std::string, int64_t>& values) {
  if (e.kind != ExprKind::kName) return;
  auto it = values.find(e.name);
  if (it == values.end()) return;
  e.kind = ExprKind::kInt;
  e.int_value = it->second;
  e.name.clear();
}

}  // namespace

void Checker::check_generic_declaration(Function& f) {
  const int errors_before = diags_.error_count();
  std::set<std::string> seen;
  for (const ShapeParam& sp : f.shape_params) {
    if (reserved_name(sp.name, sp.span, "shape parameter")) continue;
    if (is_option_word(sp.name)) {
      error(sp.span, "'" + sp.name + "' is an option word (set add eq ne gt ge lt le); it cannot "
                     "name a shape parameter");
      continue;
    }
    if (!seen.insert(sp.name).second) {
      error(sp.span, "duplicate shape parameter '" + sp.name + "'");
      continue;
    }
    // Bindable: an extent written R or k * R of some tensor or window parameter.
    bool bindable = false;
    for (Param& p : f.params) {
      if (p.name == sp.name)
        error(p.span, "'" + sp.name + "' is a shape parameter of '" + f.name +
                          "'; it cannot also name a parameter");
      for (ExprPtr& d : p.dims) {
        if (!d) continue;
        std::string name;
        if (d->kind == ExprKind::kName && d->name == sp.name) bindable = true;
        if (d->kind == ExprKind::kBinary && d->op == Tok::kStar)
          for (const ExprPtr& side : d->args)
            if (side && side->kind == ExprKind::kName && side->name == sp.name) bindable = true;
      }
    }
    if (!bindable) {
      error(sp.span, "shape parameter '" + sp.name + "' of '" + f.name +
                         "' is in no parameter's extents, so no call can bind it");
      note(f.span, "write it as an extent of a tensor or window parameter, alone ('" +
                       sp.name + "') or times a constant ('2 * " + sp.name + "')");
    }
  }
  for_each_declared_name(f.body, [&](const std::string& name, Span span) {
    if (find_shape_param(f, name))
      error(span, "'" + name + "' is a shape parameter of '" + f.name +
                      "'; it cannot be redeclared in its body");
  });
  // Calls of a broken generic would only repeat its errors.
  if (diags_.error_count() > errors_before) broken_generics_.insert(&f);
}

// The constant k of an extent `k * R` or `R * k` (R a shape parameter of
// `generic`, k free of them), with `param` set to R; nullopt for other forms.
std::optional<int64_t> Checker::shape_factor(Expr& e, const Function& generic,
                                             std::string& param) {
  if (e.kind == ExprKind::kName && find_shape_param(generic, e.name)) {
    param = e.name;
    return 1;
  }
  if (e.kind != ExprKind::kBinary || e.op != Tok::kStar || e.args.size() != 2 || !e.args[0] ||
      !e.args[1])
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    Expr& name = *e.args[side];
    Expr& factor = *e.args[1 - side];
    if (name.kind != ExprKind::kName || !find_shape_param(generic, name.name)) continue;
    if (mentions_shape_param(factor, generic)) return std::nullopt;
    // The factor names globals only (constants, WORLD), never the caller's locals.
    auto saved = std::move(scopes_);
    scopes_.clear();
    const Type t = check_expr(factor);
    scopes_ = std::move(saved);
    if (t.kind != TypeKind::kInt || !factor.const_value || *factor.const_value <= 0)
      return std::nullopt;
    param = name.name;
    return factor.const_value;
  }
  return std::nullopt;
}

Function* Checker::instantiate(Expr& call, Function& generic) {
  if (broken_generics_.count(&generic)) return nullptr;
  std::map<std::string, int64_t> values;
  std::map<std::string, size_t> bound_by;  // shape parameter -> argument index
  bool ok = true;
  for (size_t i = 0; i < generic.params.size() && ok; ++i) {
    Param& p = generic.params[i];
    if (p.kind == ParamKind::kScalar || !call.args[i]) continue;
    const Type& a = call.args[i]->type;
    if (a.is_error()) return nullptr;  // reported already
    if ((a.kind != TypeKind::kTensor && a.kind != TypeKind::kWindow) ||
        a.shape.size() != p.dims.size())
      continue;  // check_argument reports it against the instance
    for (size_t d = 0; d < p.dims.size(); ++d) {
      std::string name;
      if (!p.dims[d]) continue;
      const std::optional<int64_t> factor = shape_factor(*p.dims[d], generic, name);
      if (!factor) continue;
      const int64_t extent = a.shape[d];
      if (extent % *factor != 0) {
        error(call.args[i]->span, "argument " + std::to_string(i + 1) + " of '" + generic.name +
                                      "' has extent " + std::to_string(extent) + " in dimension " +
                                      std::to_string(d) + ", which is not a multiple of " +
                                      std::to_string(*factor) + " as '" + name + "' needs");
        note(p.type_span, "'" + p.name + "' is declared here");
        ok = false;
        break;
      }
      const int64_t value = extent / *factor;
      auto prev = values.find(name);
      if (prev != values.end() && prev->second != value) {
        error(call.args[i]->span,
              "argument " + std::to_string(i + 1) + " of '" + generic.name +
                  "' makes shape parameter '" + name + "' " + std::to_string(value) +
                  ", but argument " + std::to_string(bound_by[name] + 1) + " made it " +
                  std::to_string(prev->second));
        note(p.type_span, "'" + p.name + "' is declared here");
        ok = false;
        break;
      }
      values[name] = value;
      bound_by.emplace(name, i);
    }
  }
  if (!ok) return nullptr;
  for (const ShapeParam& sp : generic.shape_params) {
    if (values.count(sp.name)) continue;
    error(call.span, "cannot infer shape parameter '" + sp.name + "' of '" + generic.name +
                         "' from the arguments of this call");
    note(sp.span, "'" + sp.name + "' is bound by a tensor or window argument whose extent is "
                  "written '" + sp.name + "' or a constant times it ('2 * " + sp.name + "')");
    return nullptr;
  }

  std::string display = generic.name + "<", mangled = generic.name;
  for (size_t k = 0; k < generic.shape_params.size(); ++k) {
    const int64_t v = values[generic.shape_params[k].name];
    display += (k ? ", " : "") + generic.shape_params[k].name + " = " + std::to_string(v);
    mangled += (k ? "x" : "_") + std::to_string(v);
  }
  display += ">";
  auto existing = instances_.find(display);
  if (existing != instances_.end()) return existing->second;

  if (instantiation_depth_ >= kMaxInstantiationDepth) {
    error(call.span, "instantiating " + display + " nests instances " +
                         std::to_string(kMaxInstantiationDepth) +
                         " deep; does a generic function call itself with growing shapes?");
    return nullptr;
  }
  const std::string base = mangled;
  for (int n = 1; functions_.count(mangled) || globals_.count(mangled); ++n)
    mangled = base + "_" + std::to_string(n);

  Function instance = clone(generic);
  instance.shape_params.clear();
  instance.instance_of = display;
  instance.name = mangled;
  auto bind = [&values](Expr& e) { substitute(e, values); };
  for (Param& p : instance.params)
    for (ExprPtr& d : p.dims)
      if (d) for_each_expr(*d, bind);
  for_each_expr(instance.body, bind);
  Module& module = program_.modules[module_of_.at(&generic)];
  module.functions.push_back(std::move(instance));
  Function& inst = module.functions.back();
  functions_[inst.name] = &inst;
  instances_[display] = &inst;

  // Check it now, in a fresh context, then resume the caller.
  Function* const caller = fn_;
  auto saved_scopes = std::move(scopes_);
  auto saved_loops = std::move(host_loops_);
  const int errors_before = diags_.error_count();
  ++instantiation_depth_;
  check_params(inst);
  check_function(inst);
  --instantiation_depth_;
  fn_ = caller;
  scopes_ = std::move(saved_scopes);
  host_loops_ = std::move(saved_loops);
  if (diags_.error_count() > errors_before)
    note(call.span, "in " + display + ", instantiated by this call");
  return &inst;
}

}  // namespace pypto::compiler
