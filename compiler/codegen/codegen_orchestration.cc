#include "compiler/codegen/codegen_orchestration.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "pypto/dtype.h"

namespace pypto::compiler {

namespace {

// A value of the chip function as generated C++ sees it.
struct CValue {
  // kFloat: a C++ double, as the reference interpreter computes floats; it
  // becomes a kernel's f32 bit pattern only when passed to one.
  enum Kind { kTensor, kInt, kFloat, kBool, kWindow } kind = kInt;
  std::string cpp;     // the C++ variable (tensors, scalars) or expression
  std::string window;  // kWindow: the entry's window parameter it is
};

std::string dims_literal(const std::vector<std::string>& values) {
  std::string s = "Dims{{";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + values[i];
  return s + "}}";
}

std::string int_literal(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807 - 1)";
  if (v < 0) return "(" + std::to_string(v) + ")";
  return std::to_string(v);
}

const char* direction_constant(Direction dir) {
  switch (dir) {
    case Direction::kIn:
      return "PYPTO_IN";
    case Direction::kOut:
      return "PYPTO_OUT";
    case Direction::kInOut:
      return "PYPTO_INOUT";
  }
  return "PYPTO_IN";
}

const char* binary_operator(Tok op) {
  switch (op) {
    case Tok::kPlus:
      return "+";
    case Tok::kMinus:
      return "-";
    case Tok::kStar:
      return "*";
    case Tok::kSlash:
      return "/";
    case Tok::kPercent:
      return "%";
    case Tok::kEq:
      return "==";
    case Tok::kNe:
      return "!=";
    case Tok::kLt:
      return "<";
    case Tok::kLe:
      return "<=";
    case Tok::kGt:
      return ">";
    case Tok::kGe:
      return ">=";
    case Tok::kAndAnd:
      return "&&";
    case Tok::kOrOr:
      return "||";
    default:
      return nullptr;
  }
}

std::string param_list(const Function& f, ParamKind kind) {
  std::string s;
  for (const Param& p : f.params)
    if (p.kind == kind) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

int count_params(const Function& f, ParamKind kind) {
  int n = 0;
  for (const Param& p : f.params) n += p.kind == kind;
  return n;
}

class OrchGen {
 public:
  OrchGen(const Function& chip, const FunctionTable& table, const OrchestrationOptions& options)
      : chip_(chip), table_(table), options_(options) {}

  GeneratedOrchestration run() {
    frames_.emplace_back();
    frames_.back().emplace_back();
    indent_ = 1;
    bind_entry_params();
    for (const StmtPtr& s : chip_.body)
      if (s) stmt(*s);
    GeneratedOrchestration out;
    out.source = assemble();
    out.window_uses = std::move(window_uses_);
    return out;
  }

 private:
  using Scope = std::map<std::string, CValue>;
  using Frame = std::vector<Scope>;

  [[noreturn]] void fail(Span span, const std::string& message) const {
    codegen_error(options_.sources, span, message);
  }

  void line(const std::string& text) {
    body_ += std::string(static_cast<size_t>(indent_) * 2, ' ') + text + "\n";
  }
  std::string temp() { return "t" + std::to_string(next_temp_++); }
  std::string at(Span span) const {
    const std::string w = where(options_.sources, span);
    return w.empty() ? "" : " (" + w + ")";
  }
  // The C++ statement that reports `message` and leaves build_graph.
  std::string fail_stmt(const std::string& message) {
    return "return fail(args, " + cpp_string(chip_.name + ": " + message) + ");";
  }

  void declare(const std::string& name, const CValue& value) {
    frames_.back().back()[name] = value;
  }
  const CValue* lookup(const std::string& name) const {
    const Frame& f = frames_.back();
    for (auto it = f.rbegin(); it != f.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  void bind_entry_params() {
    int tensor = 0, scalar = 0;
    for (const Param& p : chip_.params) {
      const std::string var = "v_" + p.name;
      switch (p.kind) {
        case ParamKind::kTensor: {
          std::vector<std::string> extents;
          for (int64_t e : p.type.shape) extents.push_back(std::to_string(e));
          line("pypto_tensor " + var + ";");
          line("if (!as_shape(args->tensors[" + std::to_string(tensor) + "], " +
               abi_dtype_name(p.type.dtype) + ", " + std::to_string(p.type.shape.size()) + ", " +
               dims_literal(extents) + ", &" + var + "))");
          line("  " + fail_stmt("tensor '" + p.name + "' must be " +
                                type_text(p.type.dtype, p.type.shape)));
          declare(p.name, CValue{CValue::kTensor, var, ""});
          ++tensor;
          break;
        }
        case ParamKind::kScalar: {
          const bool is_float = p.type.kind == TypeKind::kFloat;
          if (is_float) {
            uses_float_ = true;
            line("[[maybe_unused]] const double " + var + " = f32_of_bits(args->scalars[" +
                 std::to_string(scalar) + "]);");
          } else {
            line("[[maybe_unused]] const int64_t " + var + " = args->scalars[" +
                 std::to_string(scalar) + "];");
          }
          declare(p.name, CValue{is_float ? CValue::kFloat : CValue::kInt, var, ""});
          ++scalar;
          break;
        }
        case ParamKind::kWindow:
          declare(p.name, CValue{CValue::kWindow, "", p.name});
          break;
      }
    }
  }

  void block(const std::vector<StmtPtr>& body) {
    frames_.back().emplace_back();
    for (const StmtPtr& s : body)
      if (s) stmt(*s);
    frames_.back().pop_back();
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::kLet:
      case StmtKind::kConst:
        let(s);
        return;
      case StmtKind::kAssign: {
        const CValue* target = lookup(s.name);
        if (!target) fail(s.span, "assignment to unknown name '" + s.name + "'");
        CValue v = value(*s.value);
        if (target->kind == CValue::kFloat && v.kind == CValue::kInt)
          v = CValue{CValue::kFloat, "static_cast<double>(" + v.cpp + ")", ""};
        if (v.kind != target->kind || target->kind == CValue::kWindow)
          fail(s.span, "this assignment is not supported in a chip function yet");
        line(target->cpp + " = " + v.cpp + ";");
        return;
      }
      case StmtKind::kFor: {
        const std::string lo = int_expr(*s.lo);
        const std::string hi = int_expr(*s.hi);
        const std::string step = s.step ? int_expr(*s.step) : "1";
        const std::string var = "v_" + s.name;
        const std::string end = temp();
        line("{");
        ++indent_;
        line("const int64_t " + end + " = " + hi + ";");
        line("for (int64_t " + var + " = " + lo + "; " + var + " < " + end + "; " + var +
             " += " + step + ") {");
        ++indent_;
        frames_.back().push_back({{s.name, CValue{CValue::kInt, var, ""}}});
        block(s.body);
        frames_.back().pop_back();
        --indent_;
        line("}");
        --indent_;
        line("}");
        return;
      }
      case StmtKind::kIf: {
        line("if (" + bool_expr(*s.value) + ") {");
        ++indent_;
        block(s.body);
        --indent_;
        if (!s.else_body.empty()) {
          line("} else {");
          ++indent_;
          block(s.else_body);
          --indent_;
        }
        line("}");
        return;
      }
      case StmtKind::kCall:
        call_stmt(s);
        return;
    }
  }

  void let(const Stmt& s) {
    const CValue v = value(*s.value);
    const std::string var = "v_" + s.name;
    const char* qualifier =
        s.kind == StmtKind::kConst ? "[[maybe_unused]] const " : "[[maybe_unused]] ";
    switch (v.kind) {
      case CValue::kTensor:
        line(std::string(qualifier) + "pypto_tensor " + var + " = " + v.cpp + ";");
        break;
      case CValue::kInt:
        line(std::string(qualifier) + "int64_t " + var + " = " + v.cpp + ";");
        break;
      case CValue::kFloat:
        line(std::string(qualifier) + "double " + var + " = " + v.cpp + ";");
        break;
      case CValue::kBool:
        line(std::string(qualifier) + "bool " + var + " = " + v.cpp + ";");
        break;
      case CValue::kWindow:
        declare(s.name, v);
        return;
    }
    declare(s.name, CValue{v.kind, var, ""});
  }

  // Any value: tensors become C++ variables (temporaries emitted first).
  CValue value(const Expr& e) {
    switch (e.type.kind) {
      case TypeKind::kTensor:
        return CValue{CValue::kTensor, tensor_expr(e), ""};
      case TypeKind::kWindow: {
        if (e.kind == ExprKind::kName) {
          const CValue* v = lookup(e.name);
          if (v && v->kind == CValue::kWindow) return *v;
        }
        fail(e.span, "this window expression is not supported in a chip function yet");
      }
      case TypeKind::kInt:
        return CValue{CValue::kInt, int_expr(e), ""};
      case TypeKind::kBool:
        return CValue{CValue::kBool, bool_expr(e), ""};
      case TypeKind::kFloat:
        return CValue{CValue::kFloat, float_expr(e), ""};
      default:
        fail(e.span, "this expression is not supported in a chip function yet");
    }
  }

  std::string tensor_expr(const Expr& e) {
    if (e.kind == ExprKind::kName) {
      const CValue* v = lookup(e.name);
      if (!v || v->kind != CValue::kTensor) fail(e.span, "'" + e.name + "' is not a tensor here");
      return v->cpp;
    }
    if (e.kind == ExprKind::kIndex && e.args.size() == 2) {
      const std::string base = tensor_expr(*e.args[0]);
      const std::string index = int_expr(*e.args[1]);
      std::string t = temp();
      uses_index_ = true;
      line("pypto_tensor " + t + ";");
      line("if (!index_view(" + base + ", " + index + ", &" + t + "))");
      line("  " + fail_stmt("index out of range" + at(e.span)));
      return t;
    }
    if (e.kind == ExprKind::kCall && e.name == "view" && e.args.size() == 3) {
      const std::string base = tensor_expr(*e.args[0]);
      std::vector<std::string> offsets, shape;
      for (const ExprPtr& a : e.args[1]->args) offsets.push_back(int_expr(*a));
      for (const ExprPtr& a : e.args[2]->args) shape.push_back(int_expr(*a));
      std::string t = temp();
      uses_view_ = true;
      line("pypto_tensor " + t + ";");
      line("if (!sub_view(" + base + ", " + dims_literal(offsets) + ", " + dims_literal(shape) +
           ", &" + t + "))");
      line("  " + fail_stmt("view out of range" + at(e.span)));
      return t;
    }
    if (e.kind == ExprKind::kCall && e.name == "tensor") {
      // An intermediate: a buffer of the orchestration binary, zeroed at every entry
      // (the runtime has drained the previous dispatch's tasks by then).
      const std::string buffer = "g_intermediate" + std::to_string(intermediates_.size());
      int64_t bytes = static_cast<int64_t>(dtype_size(e.type.dtype));
      std::vector<std::string> extents;
      for (int64_t x : e.type.shape) {
        bytes *= x;
        extents.push_back(std::to_string(x));
      }
      intermediates_.push_back({buffer, bytes, type_text(e.type.dtype, e.type.shape) + at(e.span)});
      std::string t = temp();
      line("const pypto_tensor " + t + " = intermediate(" + buffer + ", " +
           abi_dtype_name(e.type.dtype) + ", " + std::to_string(e.type.shape.size()) + ", " +
           dims_literal(extents) + ");");
      return t;
    }
    fail(e.span, "this tensor expression is not supported in a chip function yet");
  }

  std::string int_expr(const Expr& e) {
    if (e.const_value) return int_literal(*e.const_value);
    switch (e.kind) {
      case ExprKind::kInt:
        return int_literal(e.int_value);
      case ExprKind::kName: {
        const CValue* v = lookup(e.name);
        if (!v || v->kind != CValue::kInt) fail(e.span, "'" + e.name + "' is not an integer here");
        return v->cpp;
      }
      case ExprKind::kUnary:
        if (e.op == Tok::kMinus) return "(-" + int_expr(*e.args[0]) + ")";
        break;
      case ExprKind::kBinary: {
        const char* op = binary_operator(e.op);
        if (op && e.op != Tok::kAndAnd && e.op != Tok::kOrOr)
          return "(" + int_expr(*e.args[0]) + " " + op + " " + int_expr(*e.args[1]) + ")";
        break;
      }
      case ExprKind::kCall:
        if (e.name == "rank") return "int64_t{args->rank}";
        if (e.name == "world") return "int64_t{args->world}";
        if ((e.name == "max" || e.name == "min") && e.args.size() == 2) {
          (e.name == "max" ? uses_max_ : uses_min_) = true;
          return e.name + "_i64(" + int_expr(*e.args[0]) + ", " + int_expr(*e.args[1]) + ")";
        }
        break;
      default:
        break;
    }
    fail(e.span, "this integer expression is not supported in a chip function yet");
  }

  // A float scalar expression as a C++ double; integers in it convert exactly.
  std::string float_expr(const Expr& e) {
    if (e.type.kind == TypeKind::kInt) return "static_cast<double>(" + int_expr(e) + ")";
    if (e.const_float) return double_literal(*e.const_float);
    switch (e.kind) {
      case ExprKind::kFloat:
        return double_literal(e.float_value);
      case ExprKind::kName: {
        const CValue* v = lookup(e.name);
        if (!v || v->kind != CValue::kFloat) fail(e.span, "'" + e.name + "' is not a float here");
        return v->cpp;
      }
      case ExprKind::kUnary:
        if (e.op == Tok::kMinus) return "(-" + float_expr(*e.args[0]) + ")";
        break;
      case ExprKind::kBinary: {
        if (e.op == Tok::kPlus || e.op == Tok::kMinus || e.op == Tok::kStar || e.op == Tok::kSlash)
          return "(" + float_expr(*e.args[0]) + " " + binary_operator(e.op) + " " +
                 float_expr(*e.args[1]) + ")";
        break;
      }
      case ExprKind::kCall:
        if ((e.name == "max" || e.name == "min") && e.args.size() == 2) {
          (e.name == "max" ? uses_fmax_ : uses_fmin_) = true;
          return e.name + "_f64(" + float_expr(*e.args[0]) + ", " + float_expr(*e.args[1]) + ")";
        }
        break;
      default:
        break;
    }
    fail(e.span, "this float expression is not supported in a chip function yet");
  }

  static std::string double_literal(double v) {
    if (std::isnan(v)) return "__builtin_nan(\"\")";
    if (std::isinf(v)) return v < 0 ? "(-__builtin_inf())" : "__builtin_inf()";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return v < 0 ? "(" + s + ")" : s;
  }

  std::string bool_expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kBool:
        return e.bool_value ? "true" : "false";
      case ExprKind::kName: {
        const CValue* v = lookup(e.name);
        if (!v || v->kind != CValue::kBool)
          fail(e.span, "'" + e.name + "' is not a condition here");
        return v->cpp;
      }
      case ExprKind::kUnary:
        if (e.op == Tok::kBang) return "(!" + bool_expr(*e.args[0]) + ")";
        break;
      case ExprKind::kBinary: {
        if (e.op == Tok::kAndAnd || e.op == Tok::kOrOr)
          return "(" + bool_expr(*e.args[0]) + " " + binary_operator(e.op) + " " +
                 bool_expr(*e.args[1]) + ")";
        const char* op = binary_operator(e.op);
        if (!op) break;
        const bool bools = e.args[0]->type.kind == TypeKind::kBool;
        const bool floats = e.args[0]->type.kind == TypeKind::kFloat ||
                            e.args[1]->type.kind == TypeKind::kFloat;
        const std::string a = bools    ? bool_expr(*e.args[0])
                              : floats ? float_expr(*e.args[0])
                                       : int_expr(*e.args[0]);
        const std::string b = bools    ? bool_expr(*e.args[1])
                              : floats ? float_expr(*e.args[1])
                                       : int_expr(*e.args[1]);
        return "(" + a + " " + op + " " + b + ")";
      }
      default:
        break;
    }
    fail(e.span, "this condition is not supported in a chip function yet");
  }

  void call_stmt(const Stmt& s) {
    const Expr& call = *s.value;
    const Function* callee = table_.find(call.name);
    if (!callee) return;  // a builtin statement has no effect on the task graph
    if (callee->kind == FuncKind::kKernel) {
      submit(call, *callee);
    } else if (callee->kind == FuncKind::kChip) {
      inline_chip(call, *callee);
    } else {
      fail(call.span, "a chip function cannot call host function '" + callee->name + "'");
    }
  }

  void submit(const Expr& call, const Function& kernel) {
    auto id = options_.func_ids.find(kernel.name);
    if (id == options_.func_ids.end())
      fail(call.span, "internal: kernel '" + kernel.name + "' has no func_id");
    line("{  // task: " + kernel.name + at(call.span));
    ++indent_;
    std::vector<std::string> tensors, scalars;
    for (size_t i = 0; i < kernel.params.size() && i < call.args.size(); ++i) {
      const Param& p = kernel.params[i];
      const Expr& arg = *call.args[i];
      if (p.kind == ParamKind::kTensor) {
        tensors.push_back("{" + tensor_expr(arg) + ", " + direction_constant(p.dir) + "}");
      } else if (p.kind == ParamKind::kScalar) {
        if (p.type.kind == TypeKind::kFloat) {
          // The kernel's f32 scalar: the value rounded to float, as its bit pattern.
          uses_float_ = true;
          scalars.push_back("bits_of_f32(" + float_expr(arg) + ")");
        } else {
          const CValue v = value(arg);
          if (v.kind != CValue::kInt)
            fail(arg.span, "scalar argument '" + p.name + "' is not supported here");
          scalars.push_back(v.cpp);
        }
      } else {
        const CValue v = value(arg);
        window_uses_.push_back(KernelWindowUse{&kernel, p.name, v.window, call.span});
      }
    }
    const std::string nt = std::to_string(tensors.size());
    const std::string ns = std::to_string(scalars.size());
    if (!tensors.empty()) {
      line("const pypto_task_arg task[" + nt + "] = {");
      for (size_t i = 0; i < tensors.size(); ++i)
        line("    " + tensors[i] + (i + 1 < tensors.size() ? "," : ""));
      line("};");
    }
    if (!scalars.empty()) {
      std::string list;
      for (size_t i = 0; i < scalars.size(); ++i) list += (i ? ", " : "") + scalars[i];
      line("const int64_t scalars[" + ns + "] = {" + list + "};");
    }
    line("if (args->api->submit(args->runtime, " + func_id_constant(kernel.name) + ", " +
         (kernel.core == CoreType::kAic ? "PYPTO_CORE_AIC" : "PYPTO_CORE_AIV") + ",");
    line("                      " + std::string(tensors.empty() ? "nullptr" : "task") + ", " + nt +
         ", " + (scalars.empty() ? "nullptr" : "scalars") + ", " + ns + ") < 0)");
    line("  return false;  // the runtime has reported why");
    --indent_;
    line("}");
  }

  void inline_chip(const Expr& call, const Function& callee) {
    if (inlining_.count(&callee)) fail(call.span, "recursive chip call to '" + callee.name + "'");
    line("{  // inlined: " + callee.name + at(call.span));
    ++indent_;
    // Arguments first, in the caller's scope, then the callee's own frame.
    Scope bound;
    for (size_t i = 0; i < callee.params.size() && i < call.args.size(); ++i) {
      const Param& p = callee.params[i];
      CValue v = value(*call.args[i]);
      if (p.kind == ParamKind::kScalar && p.type.kind == TypeKind::kFloat && v.kind == CValue::kInt)
        v = CValue{CValue::kFloat, "static_cast<double>(" + v.cpp + ")", ""};
      if (v.kind != CValue::kWindow) {
        const std::string t = temp();
        const char* ctype = v.kind == CValue::kTensor  ? "const pypto_tensor "
                            : v.kind == CValue::kFloat ? "const double "
                                                       : "const int64_t ";
        line(ctype + t + " = " + v.cpp + ";");
        v.cpp = t;
      }
      bound[p.name] = v;
    }
    line("{");
    ++indent_;
    Frame frame;
    frame.emplace_back();
    for (const Param& p : callee.params) {
      auto it = bound.find(p.name);
      if (it == bound.end()) continue;
      CValue v = it->second;
      if (v.kind == CValue::kTensor) {
        line("[[maybe_unused]] const pypto_tensor v_" + p.name + " = " + v.cpp + ";");
        v.cpp = "v_" + p.name;
      } else if (v.kind != CValue::kWindow) {
        line(std::string("[[maybe_unused]] const ") +
             (v.kind == CValue::kFloat ? "double" : "int64_t") + " v_" + p.name + " = " + v.cpp +
             ";");
        v.cpp = "v_" + p.name;
      }
      frame.back()[p.name] = v;
    }
    frames_.push_back(std::move(frame));
    inlining_.insert(&callee);
    for (const StmtPtr& s : callee.body)
      if (s) stmt(*s);
    inlining_.erase(&callee);
    frames_.pop_back();
    --indent_;
    line("}");
    --indent_;
    line("}");
  }

  std::string assemble() const {
    std::ostringstream o;
    const int nt = count_params(chip_, ParamKind::kTensor);
    const int ns = count_params(chip_, ParamKind::kScalar);
    const int nw = count_params(chip_, ParamKind::kWindow);
    std::string header = "Chip orchestration \"" + chip_.name + "\", generated by pypto-compile";
    if (!options_.origin.empty()) header += " from " + options_.origin;
    header +=
        ". Each kernel call of the chip function is a task submitted on tensor views; the "
        "runtime infers the dependencies from the regions they read and write. Window buffers "
        "reach the kernels through their context (by name), so they are no task arguments.";
    o << comment_block(header)
      << "#include \"pypto/kernel_abi.h\"\n\n"
         "namespace {\n\n";
    for (const Function* k : kernels_called(chip_, table_)) {
      auto id = options_.func_ids.find(k->name);
      if (id == options_.func_ids.end()) continue;
      o << "constexpr int32_t " << func_id_constant(k->name) << " = " << id->second
        << ";  // kernel \"" << k->name << "\", " << (k->core == CoreType::kAic ? "aic" : "aiv")
        << "\n";
    }
    o << "\n"
         "struct Dims {\n"
         "  int64_t v[PYPTO_MAX_DIMS];\n"
         "};\n\n"
         "bool fail(const pypto_orch_args* args, const char* message) {\n"
         "  args->api->report_error(args->runtime, message);\n"
         "  return false;\n"
         "}\n\n";
    if (nt > 0)
      o << "// `t` as a view of dtype `dtype` with the `ndim` extents `shape`: the same\n"
           "// extents, or the same once leading extents of 1 are dropped (a host box\n"
           "// x[r] arrives as [1, ...]). False when they differ.\n"
           "bool as_shape(const pypto_tensor& t, int32_t dtype, int32_t ndim, const Dims& "
           "shape,\n"
           "              pypto_tensor* out) {\n"
           "  if (t.dtype != dtype || t.ndim < 0 || t.ndim > PYPTO_MAX_DIMS) return false;\n"
           "  const int32_t skip = t.ndim > ndim ? t.ndim - ndim : 0;\n"
           "  const int32_t pad = ndim > t.ndim ? ndim - t.ndim : 0;\n"
           "  for (int32_t d = 0; d < skip; ++d)\n"
           "    if (t.shape[d] != 1) return false;\n"
           "  pypto_tensor v = t;\n"
           "  v.ndim = ndim;\n"
           "  for (int32_t d = ndim - 1; d >= 0; --d) {\n"
           "    if (d < pad) {\n"
           "      if (shape.v[d] != 1) return false;\n"
           "      v.shape[d] = 1;\n"
           "      v.strides[d] = d + 1 < ndim ? v.strides[d + 1] * v.shape[d + 1] : 1;\n"
           "      continue;\n"
           "    }\n"
           "    const int32_t s = d - pad + skip;\n"
           "    if (t.shape[s] != shape.v[d]) return false;\n"
           "    v.shape[d] = t.shape[s];\n"
           "    v.strides[d] = t.strides[s];\n"
           "  }\n"
           "  for (int32_t d = ndim; d < PYPTO_MAX_DIMS; ++d) v.shape[d] = v.strides[d] = 0;\n"
           "  *out = v;\n"
           "  return true;\n"
           "}\n\n";
    if (uses_view_)
      o << "// The region at `offsets` with extents `shape` of `t`; false when it leaves `t`.\n"
           "bool sub_view(const pypto_tensor& t, const Dims& offsets, const Dims& shape,\n"
           "              pypto_tensor* out) {\n"
           "  pypto_tensor v = t;\n"
           "  for (int32_t d = 0; d < t.ndim; ++d) {\n"
           "    if (offsets.v[d] < 0 || shape.v[d] < 0 || offsets.v[d] > t.shape[d] - "
           "shape.v[d])\n"
           "      return false;\n"
           "    v.offset += offsets.v[d] * t.strides[d];\n"
           "    v.shape[d] = shape.v[d];\n"
           "  }\n"
           "  *out = v;\n"
           "  return true;\n"
           "}\n\n";
    if (uses_index_)
      o << "// t[i]: `t` without its first dimension, at index i; false when out of range.\n"
           "bool index_view(const pypto_tensor& t, int64_t i, pypto_tensor* out) {\n"
           "  if (t.ndim < 1 || i < 0 || i >= t.shape[0]) return false;\n"
           "  pypto_tensor v = t;\n"
           "  v.offset += i * t.strides[0];\n"
           "  v.ndim = t.ndim - 1;\n"
           "  for (int32_t d = 0; d + 1 < t.ndim; ++d) {\n"
           "    v.shape[d] = t.shape[d + 1];\n"
           "    v.strides[d] = t.strides[d + 1];\n"
           "  }\n"
           "  v.shape[t.ndim - 1] = v.strides[t.ndim - 1] = 0;\n"
           "  *out = v;\n"
           "  return true;\n"
           "}\n\n";
    if (uses_float_)
      o << "// A float scalar of the kernel ABI travels as its f32 bit pattern in the low 32 bits.\n"
           "double f32_of_bits(int64_t bits) {\n"
           "  const uint32_t b = static_cast<uint32_t>(bits);\n"
           "  float f;\n"
           "  __builtin_memcpy(&f, &b, sizeof f);\n"
           "  return f;\n"
           "}\n\n"
           "int64_t bits_of_f32(double value) {\n"
           "  const float f = static_cast<float>(value);\n"
           "  uint32_t b;\n"
           "  __builtin_memcpy(&b, &f, sizeof b);\n"
           "  return static_cast<int64_t>(b);\n"
           "}\n\n";
    if (uses_fmax_) o << "double max_f64(double a, double b) { return a < b ? b : a; }\n\n";
    if (uses_fmin_) o << "double min_f64(double a, double b) { return b < a ? b : a; }\n\n";
    if (uses_max_) o << "int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }\n\n";
    if (uses_min_) o << "int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }\n\n";
    if (!intermediates_.empty()) {
      o << "// A row-major tensor over `data`.\n"
           "pypto_tensor intermediate(void* data, int32_t dtype, int32_t ndim, const Dims& "
           "shape) {\n"
           "  pypto_tensor v = {};\n"
           "  v.data = data;\n"
           "  v.dtype = dtype;\n"
           "  v.ndim = ndim;\n"
           "  int64_t stride = 1;\n"
           "  for (int32_t d = ndim - 1; d >= 0; --d) {\n"
           "    v.shape[d] = shape.v[d];\n"
           "    v.strides[d] = stride;\n"
           "    stride *= shape.v[d];\n"
           "  }\n"
           "  return v;\n"
           "}\n\n";
      for (const auto& b : intermediates_)
        o << "alignas(64) unsigned char " << b.name << "[" << b.bytes << "];  // " << b.what
          << "\n";
      o << "\n";
    }
    o << "// The task graph of \"" << chip_.name << "\"; false after an error was reported.\n"
      << "bool build_graph(const pypto_orch_args* args) {\n";
    for (const auto& b : intermediates_)
      o << "  for (unsigned char& byte : " << b.name << ") byte = 0;\n";
    o << body_ << "  return true;\n"
      << "}\n\n"
      << "}  // namespace\n\n"
      << "extern \"C\" void orchestration_entry(const pypto_orch_args* args) {\n"
      << "  if (args->abi_version != PYPTO_KERNEL_ABI_VERSION) {\n"
      << "    args->api->report_error(args->runtime, "
      << cpp_string(chip_.name + ": built against another kernel ABI") << ");\n"
      << "    return;\n"
      << "  }\n";
    auto plural = [](int n, const char* word) {
      return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
    };
    std::string expects = chip_.name + ": expects " + plural(nt, "tensor");
    if (nt) expects += " (" + param_list(chip_, ParamKind::kTensor) + ")";
    expects += ", " + plural(ns, "scalar");
    if (ns) expects += " (" + param_list(chip_, ParamKind::kScalar) + ")";
    expects += " and " + plural(nw, "window");
    if (nw) expects += " (" + param_list(chip_, ParamKind::kWindow) + ")";
    o << "  if (args->num_tensors != " << nt << " || args->num_scalars != " << ns
      << " || args->num_windows != " << nw << ") {\n"
      << "    args->api->report_error(args->runtime,\n"
      << "                            " << cpp_string_wrapped(expects, 28, 28) << ");\n"
      << "    return;\n"
      << "  }\n"
      << "  args->api->scope_begin(args->runtime, " << cpp_string(chip_.name) << ");\n"
      << "  build_graph(args);\n"
      << "  args->api->scope_end(args->runtime);\n"
      << "}\n";
    return o.str();
  }

  struct Intermediate {
    std::string name;
    int64_t bytes;
    std::string what;
  };

  const Function& chip_;
  const FunctionTable& table_;
  const OrchestrationOptions& options_;
  std::vector<Frame> frames_;
  std::set<const Function*> inlining_;
  std::string body_;
  int indent_ = 1;
  int next_temp_ = 0;
  bool uses_view_ = false, uses_index_ = false, uses_max_ = false, uses_min_ = false;
  bool uses_float_ = false, uses_fmax_ = false, uses_fmin_ = false;
  std::vector<Intermediate> intermediates_;
  std::vector<KernelWindowUse> window_uses_;
};

}  // namespace

GeneratedOrchestration generate_orchestration(const Function& chip, const FunctionTable& table,
                                              const OrchestrationOptions& options) {
  return OrchGen(chip, table, options).run();
}

}  // namespace pypto::compiler
