#include "compiler/codegen/codegen_host_plan.h"

#include <algorithm>
#include <optional>
#include <set>

#include "pypto/dtype.h"

namespace pypto::compiler {

namespace {

// A value of the host function at compile time.
struct HostValue {
  // kScalarParam: a scalar parameter of the entry (`param`), known only at run time.
  enum Kind { kNone, kInt, kFloat, kBool, kBox, kWindow, kScalarParam } kind = kNone;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  // kBox: the region [offsets, offsets + shape) of host parameter `param`, in
  // the parameter's full rank; its first `dropped` dimensions were indexed away.
  std::string param;
  std::vector<int64_t> offsets, shape;
  size_t dropped = 0;
  // kWindow.
  std::string window;
};

class HostEvaluator {
 public:
  HostEvaluator(const FunctionTable& table, int64_t world, const SourceManager* sources)
      : table_(table), world_(world), sources_(sources) {}

  HostPlan run(const Function& host) {
    Frame frame;
    frame.scopes.emplace_back();
    for (const Param& p : host.params) {
      HostValue v;
      if (p.kind == ParamKind::kTensor) {
        host_tensor_names_.insert(p.name);
        v.kind = HostValue::kBox;
        v.param = p.name;
        v.shape = p.type.shape;
        v.offsets.assign(v.shape.size(), 0);
      } else {
        // A host scalar parameter has no compile-time value: a dispatch passes
        // the run's value (host_orch.json {"kind": "scalar", "param"}).
        v.kind = HostValue::kScalarParam;
        v.param = p.name;
      }
      frame.scopes.back()[p.name] = v;
    }
    frames_.push_back(std::move(frame));
    exec_block(host.body);
    return std::move(plan_);
  }

 private:
  using Scope = std::map<std::string, HostValue>;
  struct Frame {
    std::vector<Scope> scopes;
  };

  [[noreturn]] void fail(Span span, const std::string& message) const {
    codegen_error(sources_, span, message);
  }

  HostValue* lookup(const std::string& name) {
    auto& scopes = frames_.back().scopes;
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  void exec_block(const std::vector<StmtPtr>& body) {
    frames_.back().scopes.emplace_back();
    for (const StmtPtr& s : body)
      if (s) exec(*s);
    frames_.back().scopes.pop_back();
  }

  void exec(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::kLet:
      case StmtKind::kConst:
        frames_.back().scopes.back()[s.name] = eval(*s.value, s.name);
        return;
      case StmtKind::kAssign: {
        HostValue* v = lookup(s.name);
        if (!v) fail(s.span, "assignment to unknown name '" + s.name + "'");
        *v = eval(*s.value, s.name);
        return;
      }
      case StmtKind::kFor: {
        const int64_t lo = int_of(*s.lo, "the loop's lower bound");
        const int64_t hi = int_of(*s.hi, "the loop's upper bound");
        const int64_t step = s.step ? int_of(*s.step, "the loop's step") : 1;
        if (step <= 0) fail(s.span, "the loop's step must be positive");
        for (int64_t v = lo; v < hi; v += step) {
          HostValue value;
          value.kind = HostValue::kInt;
          value.i = v;
          frames_.back().scopes.push_back({{s.name, value}});
          exec_block(s.body);
          frames_.back().scopes.pop_back();
          if (v > INT64_MAX - step) break;
        }
        return;
      }
      case StmtKind::kIf: {
        const HostValue c = eval(*s.value);
        if (c.kind != HostValue::kBool)
          fail(s.value->span, "this condition of the host function is not known at compile time");
        exec_block(c.b ? s.body : s.else_body);
        return;
      }
      case StmtKind::kCall:
        exec_call(s);
        return;
    }
  }

  void exec_call(const Stmt& s) {
    const Expr& call = *s.value;
    const Function* callee = table_.find(call.name);
    if (!callee) {
      eval(call);  // a builtin as a statement: evaluated for its checks only
      return;
    }
    if (s.on) {
      dispatch(s, *callee);
      return;
    }
    if (callee->kind != FuncKind::kHost)
      fail(call.span, "only host functions can be called from a host function without 'on'");
    // Inline the host routine: a frame of its own with the arguments bound.
    Frame frame;
    frame.scopes.emplace_back();
    for (size_t i = 0; i < callee->params.size() && i < call.args.size(); ++i)
      frame.scopes.back()[callee->params[i].name] = eval(*call.args[i]);
    frames_.push_back(std::move(frame));
    exec_block(callee->body);
    frames_.pop_back();
  }

  void dispatch(const Stmt& s, const Function& chip) {
    const Expr& call = *s.value;
    const int64_t rank = int_of(*s.on, "the dispatch target");
    if (rank < 0 || rank >= world_)
      fail(s.on->span, "dispatch of '" + chip.name + "' to rank " + std::to_string(rank) +
                           ", but ranks are 0 .. " + std::to_string(world_ - 1));
    Dispatch d;
    d.rank = rank;
    d.program = chip.name;
    PlannedDispatch planned;
    planned.chip = &chip;
    planned.span = s.span;
    for (size_t i = 0; i < chip.params.size() && i < call.args.size(); ++i) {
      const Param& p = chip.params[i];
      const Expr& arg = *call.args[i];
      const HostValue v = eval(arg);
      switch (p.kind) {
        case ParamKind::kTensor:
          if (v.kind != HostValue::kBox)
            fail(arg.span, "argument '" + p.name + "' of '" + chip.name +
                               "' is not a region of a host parameter");
          d.args.push_back(HostArg::host(v.param, v.offsets, v.shape));
          break;
        case ParamKind::kWindow:
          if (v.kind != HostValue::kWindow)
            fail(arg.span, "argument '" + p.name + "' of '" + chip.name + "' is not a window");
          d.args.push_back(HostArg::window_arg(v.window));
          planned.windows[p.name] = v.window;
          break;
        case ParamKind::kScalar: {
          const bool to_float = p.type.kind == TypeKind::kFloat;
          if (v.kind == HostValue::kScalarParam) {
            d.args.push_back(HostArg::scalar_param(v.param, p.dtype));
          } else if (v.kind == HostValue::kInt && !to_float) {
            d.args.push_back(HostArg::scalar(v.i));
          } else if ((v.kind == HostValue::kInt || v.kind == HostValue::kFloat) && to_float) {
            ScalarValue value;
            value.dtype = p.dtype;
            value.f = v.kind == HostValue::kInt ? static_cast<double>(v.i) : v.f;
            d.args.push_back(HostArg::scalar_constant(value));
          } else {
            fail(arg.span, "scalar argument '" + p.name + "' of '" + chip.name +
                               "' must be known at compile time, or be a scalar parameter of '" +
                               "the host function passed on as it is (the host plan is static: "
                               "it cannot compute with run-time values)");
          }
          break;
        }
      }
    }
    // In-place parameters (`x: ... at w`): the box lives in the host window bound to w.
    for (size_t i = 0; i < chip.params.size() && i < d.args.size(); ++i) {
      const Param& p = chip.params[i];
      if (p.at.empty()) continue;
      auto bound = planned.windows.find(p.at);
      if (bound == planned.windows.end())
        fail(p.at_span, "'" + p.name + "' is placed in '" + p.at +
                            "', which this dispatch does not bind to a window");
      d.args[i].window = bound->second;
    }
    if (std::find(plan_.chips.begin(), plan_.chips.end(), &chip) == plan_.chips.end())
      plan_.chips.push_back(&chip);
    plan_.orch.dispatches.push_back(std::move(d));
    plan_.dispatches.push_back(std::move(planned));
  }

  int64_t int_of(const Expr& e, const std::string& what) {
    const HostValue v = eval(e);
    if (v.kind != HostValue::kInt) fail(e.span, what + " is not an integer known at compile time");
    return v.i;
  }

  std::vector<int64_t> list_of(const Expr& e, const std::string& what) {
    if (e.kind != ExprKind::kList) fail(e.span, what + " must be a list");
    std::vector<int64_t> out;
    for (const ExprPtr& a : e.args) out.push_back(int_of(*a, what));
    return out;
  }

  static HostValue int_value(int64_t i) {
    HostValue v;
    v.kind = HostValue::kInt;
    v.i = i;
    return v;
  }
  static HostValue float_value(double f) {
    HostValue v;
    v.kind = HostValue::kFloat;
    v.f = f;
    return v;
  }
  static HostValue bool_value(bool b) {
    HostValue v;
    v.kind = HostValue::kBool;
    v.b = b;
    return v;
  }

  HostValue eval(const Expr& e, const std::string& let_name = "") {
    if (e.const_value && e.type.kind == TypeKind::kInt) return int_value(*e.const_value);
    if (e.const_float && e.type.kind == TypeKind::kFloat) return float_value(*e.const_float);
    switch (e.kind) {
      case ExprKind::kInt:
        return int_value(e.int_value);
      case ExprKind::kBool:
        return bool_value(e.bool_value);
      case ExprKind::kFloat:
        return float_value(e.float_value);
      case ExprKind::kName: {
        const HostValue* v = lookup(e.name);
        if (!v) {
          if (e.const_value) return int_value(*e.const_value);
          fail(e.span, "'" + e.name + "' has no value known at compile time");
        }
        return *v;
      }
      case ExprKind::kIndex: {
        HostValue t = eval(*e.args[0]);
        const int64_t i = int_of(*e.args[1], "the index");
        if (t.kind != HostValue::kBox || t.dropped >= t.shape.size())
          fail(e.span, "only host tensors can be indexed here");
        const size_t d = t.dropped;
        if (i < 0 || i >= t.shape[d])
          fail(e.args[1]->span,
               "index " + std::to_string(i) + " is outside 0 .. " + std::to_string(t.shape[d] - 1));
        t.offsets[d] += i;
        t.shape[d] = 1;
        ++t.dropped;
        return t;
      }
      case ExprKind::kUnary: {
        const HostValue a = eval(*e.args[0]);
        if (e.op == Tok::kMinus && a.kind == HostValue::kInt) return int_value(-a.i);
        if (e.op == Tok::kMinus && a.kind == HostValue::kFloat) return float_value(-a.f);
        if (e.op == Tok::kBang && a.kind == HostValue::kBool) return bool_value(!a.b);
        return HostValue{};
      }
      case ExprKind::kBinary:
        return binary(e);
      case ExprKind::kCall:
        return call(e, let_name);
      default:
        return HostValue{};
    }
  }

  HostValue binary(const Expr& e) {
    const HostValue a = eval(*e.args[0]);
    if (e.op == Tok::kAndAnd || e.op == Tok::kOrOr) {
      if (a.kind != HostValue::kBool) return HostValue{};
      if (e.op == Tok::kAndAnd && !a.b) return bool_value(false);
      if (e.op == Tok::kOrOr && a.b) return bool_value(true);
      const HostValue b = eval(*e.args[1]);
      return b.kind == HostValue::kBool ? b : HostValue{};
    }
    const HostValue b = eval(*e.args[1]);
    if (a.kind == HostValue::kBool && b.kind == HostValue::kBool) {
      if (e.op == Tok::kEq) return bool_value(a.b == b.b);
      if (e.op == Tok::kNe) return bool_value(a.b != b.b);
      return HostValue{};
    }
    const auto number = [](const HostValue& v) { return v.kind == HostValue::kInt || v.kind == HostValue::kFloat; };
    if (number(a) && number(b) && (a.kind == HostValue::kFloat || b.kind == HostValue::kFloat)) {
      // Floats fold in double, as the reference interpreter computes them.
      const double x = a.kind == HostValue::kInt ? static_cast<double>(a.i) : a.f;
      const double y = b.kind == HostValue::kInt ? static_cast<double>(b.i) : b.f;
      switch (e.op) {
        case Tok::kPlus: return float_value(x + y);
        case Tok::kMinus: return float_value(x - y);
        case Tok::kStar: return float_value(x * y);
        case Tok::kSlash: return float_value(x / y);
        case Tok::kEq: return bool_value(x == y);
        case Tok::kNe: return bool_value(x != y);
        case Tok::kLt: return bool_value(x < y);
        case Tok::kLe: return bool_value(x <= y);
        case Tok::kGt: return bool_value(x > y);
        case Tok::kGe: return bool_value(x >= y);
        default: return HostValue{};
      }
    }
    if (a.kind != HostValue::kInt || b.kind != HostValue::kInt) return HostValue{};
    const int64_t x = a.i, y = b.i;
    int64_t r = 0;
    switch (e.op) {
      case Tok::kPlus:
        if (__builtin_add_overflow(x, y, &r)) fail(e.span, "integer overflow");
        return int_value(r);
      case Tok::kMinus:
        if (__builtin_sub_overflow(x, y, &r)) fail(e.span, "integer overflow");
        return int_value(r);
      case Tok::kStar:
        if (__builtin_mul_overflow(x, y, &r)) fail(e.span, "integer overflow");
        return int_value(r);
      case Tok::kSlash:
      case Tok::kPercent:
        if (y == 0) fail(e.span, "division by zero");
        if (x == INT64_MIN && y == -1) fail(e.span, "integer overflow");
        return int_value(e.op == Tok::kSlash ? x / y : x % y);
      case Tok::kEq:
        return bool_value(x == y);
      case Tok::kNe:
        return bool_value(x != y);
      case Tok::kLt:
        return bool_value(x < y);
      case Tok::kLe:
        return bool_value(x <= y);
      case Tok::kGt:
        return bool_value(x > y);
      case Tok::kGe:
        return bool_value(x >= y);
      default:
        return HostValue{};
    }
  }

  HostValue call(const Expr& e, const std::string& let_name) {
    if (e.name == "world") return int_value(world_);
    if ((e.name == "max" || e.name == "min") && e.args.size() == 2) {
      const int64_t a = int_of(*e.args[0], "this operand");
      const int64_t b = int_of(*e.args[1], "this operand");
      return int_value(e.name == "max" ? std::max(a, b) : std::min(a, b));
    }
    if (e.name == "view" && e.args.size() == 3) {
      HostValue t = eval(*e.args[0]);
      if (t.kind != HostValue::kBox) fail(e.span, "view of something that is not a host tensor");
      const std::vector<int64_t> offsets = list_of(*e.args[1], "the offsets");
      const std::vector<int64_t> shape = list_of(*e.args[2], "the shape");
      if (offsets.size() != shape.size() || t.dropped + shape.size() != t.shape.size())
        fail(e.span, "the view's offsets and shape must have one entry per dimension");
      for (size_t k = 0; k < shape.size(); ++k) {
        const size_t d = t.dropped + k;
        if (offsets[k] < 0 || offsets[k] + shape[k] > t.shape[d])
          fail(e.args[1]->span, "this view leaves its tensor in dimension " + std::to_string(k));
        t.offsets[d] += offsets[k];
        t.shape[d] = shape[k];
      }
      return t;
    }
    if (e.name == "window_buffer") {
      HostValue w;
      w.kind = HostValue::kWindow;
      const std::string name = unique_name(let_name.empty() ? "window" : let_name, used_windows_);
      WindowInfo info;
      info.name = name;
      info.dtype = e.type.dtype;
      info.shape = e.type.shape;
      info.bytes = static_cast<int64_t>(dtype_size(info.dtype));
      for (int64_t extent : info.shape) info.bytes *= extent;
      for (int64_t r = 0; r < world_; ++r) info.ranks.push_back(r);
      plan_.orch.windows.push_back(std::move(info));
      w.window = name;
      return w;
    }
    if (e.name == "tensor") {
      // A host intermediate, named after its let like a window.
      const std::string name =
          unique_name(let_name.empty() ? "tensor" : let_name, host_tensor_names_);
      ParamInfo info;
      info.name = name;
      info.direction = pypto::Direction::kInOut;
      info.dtype = e.type.dtype;
      info.shape = e.type.shape;
      plan_.orch.intermediates.push_back(info);
      HostValue t;
      t.kind = HostValue::kBox;
      t.param = name;
      t.shape = info.shape;
      t.offsets.assign(t.shape.size(), 0);
      return t;
    }
    return HostValue{};
  }

  // `base`, or base_1, base_2, ... when taken; recorded as taken.
  static std::string unique_name(const std::string& base, std::set<std::string>& taken) {
    std::string name = base;
    for (int n = 1; taken.count(name); ++n) name = base + "_" + std::to_string(n);
    taken.insert(name);
    return name;
  }

  const FunctionTable& table_;
  int64_t world_;
  const SourceManager* sources_;
  std::vector<Frame> frames_;
  std::set<std::string> used_windows_;
  std::set<std::string> host_tensor_names_;  // the entry's tensor parameters and intermediates
  HostPlan plan_;
};

}  // namespace

HostPlan plan_host(const Function& host, const FunctionTable& table, int64_t world,
                   const SourceManager* sources) {
  return HostEvaluator(table, world, sources).run(host);
}

}  // namespace pypto::compiler
