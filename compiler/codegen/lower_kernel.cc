// Checked kernel -> PTO unit -> {.pto listing, C++ body}. The C++ body is
// made from the printed listing read back by the .pto parser, exactly as
// pypto-ptoas makes it, so the two files of a build always agree.
#include <map>
#include <set>

#include "compiler/codegen/codegen_util.h"
#include "compiler/codegen/kernel_lowering.h"
#include "compiler/pto/pto_emit_cpp.h"
#include "compiler/pto/pto_parser.h"
#include "compiler/pto/pto_printer.h"
#include "pypto/error.h"

namespace pypto::compiler {

namespace {

using pto::Inst;
using pto::Opcode;
using pto::Operand;
using pto::RegType;

// A tensor or window as an expression names it: a parameter, maybe indexed
// (x[i] fixes leading dimensions) or viewed (view(t, offsets, shape)).
struct TensorRef {
  int param = -1;
  std::vector<Operand> base;  // one per dimension of the parameter
  size_t rank = 0;            // dimensions of the view
};

class Lowerer {
 public:
  Lowerer(const Function& fn, const LowerOptions& options) : fn_(fn), opt_(options) {}

  LoweredKernel run() {
    if (fn_.kind != FuncKind::kKernel)
      fail(fn_.name_span, "'" + fn_.name + "' is not a kernel; only kernels lower to .pto");
    unit_.name = fn_.name;
    unit_.core = fn_.core;
    // .source/.loc: a failed wait at run time names the program's line (docs/pto-format.md).
    if (opt_.sources && fn_.name_span.valid() && fn_.name_span.file < opt_.sources->size())
      unit_.source = opt_.sources->file(fn_.name_span.file).path();
    scopes_.emplace_back();
    for (const Param& p : fn_.params) add_param(p);
    cur_ = &unit_.body;
    block(fn_.body);

    LoweredKernel out;
    out.unit = unit_.name;
    out.pto = pto::print(unit_);
    SourceManager sm;
    const int32_t file = sm.add("ptoas/" + unit_.name + ".pto", out.pto);
    DiagnosticEngine diags(sm);
    std::optional<pto::Unit> parsed = pto::parse(sm, file, diags);
    if (!parsed)
      throw ProgramError("internal error: the lowering of kernel '" + fn_.name +
                         "' produced a listing the .pto parser rejects:\n" + diags.render() +
                         "listing:\n" + out.pto);
    out.cpp_body = pto::emit_cpp(*parsed);
    return out;
  }

 private:
  struct Binding {
    enum Kind { kReg, kParam } kind = kReg;
    int index = -1;
  };

  [[noreturn]] void fail(Span span, const std::string& message) const {
    if (const std::string text = located_error(opt_.sources, span, message); !text.empty())
      throw ProgramError(text);
    throw ProgramError("kernel '" + fn_.name + "': error: " + message);
  }
  [[noreturn]] void unsupported(Span span, const std::string& what) const {
    fail(span, what + " is not supported by the kernel lowering yet");
  }

  // ------------------------------------------------------------ names
  std::string fresh_name(const std::string& want) {
    std::string name = want;
    for (int k = 1; used_.count(name); ++k) name = want + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }
  int new_reg(const std::string& want, const RegType& type) {
    unit_.regs.push_back(pto::Register{fresh_name(want), type});
    return static_cast<int>(unit_.regs.size()) - 1;
  }
  int temp(const RegType& type) {
    std::string name;
    do {
      name = "t" + std::to_string(temps_++);
    } while (used_.count(name));
    used_.insert(name);
    unit_.regs.push_back(pto::Register{name, type});
    return static_cast<int>(unit_.regs.size()) - 1;
  }
  const Binding* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }
  const RegType& reg_type(int r) const { return unit_.regs[static_cast<size_t>(r)].type; }

  RegType type_of(const Type& t, Span span) const {
    switch (t.kind) {
      case TypeKind::kTile:
        if (!pto::supported_dtype(t.dtype))
          unsupported(span, std::string("a ") + dtype_name(t.dtype) + " tile");
        return RegType::tile(t.dtype, t.shape[0], t.shape[1]);
      case TypeKind::kInt:
        return RegType::scalar(RegType::kInt);
      case TypeKind::kFloat:
        return RegType::scalar(RegType::kFloat);
      case TypeKind::kBool:
        return RegType::scalar(RegType::kBool);
      default:
        fail(span, "internal error: a value of type " + to_string(t) + " has no register type");
    }
  }

  void add_param(const Param& p) {
    pto::Param q;
    q.name = p.name;
    q.dtype = p.dtype;
    if (p.kind == ParamKind::kScalar) {
      q.kind = pto::ParamKind::kScalar;
      const bool int_dtype = p.dtype == DType::kI8 || p.dtype == DType::kI16 ||
                             p.dtype == DType::kI32 || p.dtype == DType::kI64 ||
                             p.dtype == DType::kU8;
      if (!int_dtype && p.dtype != DType::kF32)
        unsupported(p.type_span, std::string("a ") + dtype_name(p.dtype) + " scalar parameter");
    } else {
      q.kind = p.kind == ParamKind::kWindow ? pto::ParamKind::kWindow : pto::ParamKind::kTensor;
      q.dir = p.dir;
      q.shape = p.type.shape;
      if (q.shape.empty()) fail(p.type_span, "internal error: parameter without a checked shape");
      if (!pto::supported_dtype(p.dtype))
        unsupported(p.type_span, std::string("a ") + dtype_name(p.dtype) +
                                     (p.kind == ParamKind::kWindow ? " window" : " tensor"));
    }
    unit_.params.push_back(std::move(q));
    scopes_.back()[p.name] = Binding{Binding::kParam, static_cast<int>(unit_.params.size()) - 1};
  }

  void emit(Inst inst) { cur_->push_back(std::move(inst)); }
  Inst make(Opcode op, int dst, std::vector<Operand> args) {
    Inst i;
    i.source_line = stmt_line_;
    i.op = op;
    i.dst = dst;
    i.args = std::move(args);
    return i;
  }

  // ------------------------------------------------------------ statements
  void block(const std::vector<StmtPtr>& body) {
    for (const StmtPtr& s : body)
      if (s) stmt(*s);
  }

  void scoped_block(const std::vector<StmtPtr>& body, std::vector<Inst>* into) {
    std::vector<Inst>* saved = cur_;
    cur_ = into;
    scopes_.emplace_back();
    block(body);
    scopes_.pop_back();
    cur_ = saved;
  }

  void stmt(const Stmt& s) {
    if (!unit_.source.empty() && s.span.valid() && s.span.file == fn_.name_span.file)
      stmt_line_ = opt_.sources->file(s.span.file).line_col(s.span.begin).line;
    switch (s.kind) {
      case StmtKind::kConst:
        return;  // folded by the checker into every use
      case StmtKind::kLet: {
        const RegType t = type_of(s.value->type, s.value->span);
        const int r = new_reg(s.name, t);
        fresh_.insert(r);
        into(*s.value, r);
        fresh_.erase(r);
        scopes_.back()[s.name] = Binding{Binding::kReg, r};
        return;
      }
      case StmtKind::kAssign: {
        const Binding* b = lookup(s.name);
        if (!b || b->kind != Binding::kReg) fail(s.name_span, "cannot assign '" + s.name + "'");
        into(*s.value, b->index);
        return;
      }
      case StmtKind::kCall:
        if (s.on) unsupported(s.span, "'on' in a kernel");
        call_stmt(*s.value);
        return;
      case StmtKind::kFor: {
        Operand lo = int_operand(*s.lo);
        Operand hi = int_operand(*s.hi);
        Operand step = s.step ? int_operand(*s.step) : Operand::of_int(1);
        const int r = new_reg(s.name, RegType::scalar(RegType::kInt));
        Inst f = make(Opcode::kFor, r, {lo, hi, step});
        std::vector<Inst>* saved = cur_;
        cur_->push_back(std::move(f));
        Inst& loop = cur_->back();
        cur_ = &loop.body;
        scopes_.emplace_back();
        scopes_.back()[s.name] = Binding{Binding::kReg, r};
        block(s.body);
        scopes_.pop_back();
        cur_ = saved;
        return;
      }
      case StmtKind::kIf: {
        Operand c = bool_operand(*s.value);
        Inst i = make(Opcode::kIf, -1, {c});
        i.has_else = !s.else_body.empty();
        cur_->push_back(std::move(i));
        Inst& node = cur_->back();
        scoped_block(s.body, &node.body);
        if (node.has_else) scoped_block(s.else_body, &node.else_body);
        return;
      }
    }
  }

  void call_stmt(const Expr& e) {
    if (e.kind != ExprKind::kCall) unsupported(e.span, "this statement");
    const std::string& n = e.name;
    const auto& a = e.args;
    if (n == "store") {
      const int t = tile_reg(*a[0]);
      Operand r = region(*a[1], *a[2], reg_type(t), e.span);
      emit(make(Opcode::kTStore, -1, {Operand::of_reg(t), r}));
      return;
    }
    if (n == "remote_store") {
      const int t = tile_reg(*a[0]);
      Operand w = region(*a[1], *a[3], reg_type(t), e.span);
      Operand peer = int_operand(*a[2]);
      const std::string op = a.size() == 5 ? a[4]->name : "set";
      if (op == "add" && pto::half_dtype(reg_type(t).dtype))
        unsupported(e.span, "'remote_store(..., add)' of f16/bf16 tiles");
      emit(make(Opcode::kTRemoteStore, -1, {Operand::of_reg(t), w, peer, Operand::of_option(op)}));
      return;
    }
    if (n == "put" || n == "get") {
      const TensorRef local = tensor_ref(*a[0]);
      const Param& lp = fn_.params[static_cast<size_t>(local.param)];
      bool whole = local.rank == unit_.params[static_cast<size_t>(local.param)].shape.size();
      for (const Operand& o : local.base) whole = whole && o.kind == Operand::kInt && o.int_value == 0;
      if (!whole || a[0]->type.shape != lp.type.shape)
        unsupported(a[0]->span, "'" + n + "' of a view or an indexed tensor");
      TensorRef w = tensor_ref(*a[1]);
      Operand region_op;
      region_op.kind = Operand::kRegion;
      region_op.param = w.param;
      for (const ExprPtr& x : a[3]->args) region_op.index.push_back(int_operand(*x));
      emit(make(n == "put" ? Opcode::kPut : Opcode::kGet, -1,
                {Operand::of_param(local.param), region_op, int_operand(*a[2])}));
      return;
    }
    if (n == "notify") {
      Operand cell = region(*a[0], *a[2], RegType::tile(DType::kI32, 1, 1), e.span);
      emit(make(Opcode::kNotify, -1,
                {cell, int_operand(*a[1]), int_operand(*a[3]), Operand::of_option(a[4]->name)}));
      return;
    }
    if (n == "wait") {
      Operand cell = region(*a[0], *a[1], RegType::tile(DType::kI32, 1, 1), e.span);
      emit(make(Opcode::kWait, -1, {cell, Operand::of_option(a[2]->name), int_operand(*a[3])}));
      return;
    }
    unsupported(e.span, "the statement '" + n + "(...)'");
  }

  // ------------------------------------------------------------ tensors and regions
  TensorRef tensor_ref(const Expr& e) {
    if (e.kind == ExprKind::kName) {
      const Binding* b = lookup(e.name);
      if (!b || b->kind != Binding::kParam ||
          unit_.params[static_cast<size_t>(b->index)].kind == pto::ParamKind::kScalar)
        fail(e.span, "'" + e.name + "' is not a tensor or window parameter");
      TensorRef r;
      r.param = b->index;
      r.rank = unit_.params[static_cast<size_t>(b->index)].shape.size();
      r.base.assign(r.rank, Operand::of_int(0));
      return r;
    }
    if (e.kind == ExprKind::kIndex) {
      TensorRef r = tensor_ref(*e.args[0]);
      const size_t d = r.base.size() - r.rank;  // the view's first dimension
      r.base[d] = add(r.base[d], int_operand(*e.args[1]));
      --r.rank;
      return r;
    }
    if (e.kind == ExprKind::kCall && e.name == "view") {
      TensorRef r = tensor_ref(*e.args[0]);
      const size_t d0 = r.base.size() - r.rank;
      const auto& offs = e.args[1]->args;
      for (size_t i = 0; i < offs.size() && d0 + i < r.base.size(); ++i)
        r.base[d0 + i] = add(r.base[d0 + i], int_operand(*offs[i]));
      return r;
    }
    unsupported(e.span, "this tensor expression");
  }

  Operand add(const Operand& a, const Operand& b) {
    if (a.kind == Operand::kInt && a.int_value == 0) return b;
    if (b.kind == Operand::kInt && b.int_value == 0) return a;
    if (a.kind == Operand::kInt && b.kind == Operand::kInt) {
      int64_t r = 0;
      if (!__builtin_add_overflow(a.int_value, b.int_value, &r)) return Operand::of_int(r);
    }
    const int t = temp(RegType::scalar(RegType::kInt));
    emit(make(Opcode::kAdd, t, {a, b}));
    return Operand::of_reg(t);
  }

  // The region operand of `target` at the list `offsets` for a tile of `tile`'s shape.
  Operand region(const Expr& target, const Expr& offsets, const RegType& /*tile*/, Span /*span*/) {
    TensorRef r = tensor_ref(target);
    if (offsets.kind != ExprKind::kList) fail(offsets.span, "expected a list of offsets");
    const size_t d0 = r.base.size() - r.rank;
    if (offsets.args.size() != r.rank)
      fail(offsets.span, "internal error: offsets do not match the tensor's rank");
    for (size_t i = 0; i < offsets.args.size(); ++i)
      r.base[d0 + i] = add(r.base[d0 + i], int_operand(*offsets.args[i]));
    Operand o;
    o.kind = Operand::kRegion;
    o.param = r.param;
    o.index = std::move(r.base);
    return o;
  }

  // ------------------------------------------------------------ expressions
  // A scalar or bool value as an operand (immediate, register or scalar parameter).
  Operand scalar(const Expr& e) {
    if (e.type.kind == TypeKind::kInt && e.const_value) return Operand::of_int(*e.const_value);
    if (e.kind == ExprKind::kFloat) return Operand::of_float(e.float_value);
    if (e.type.kind == TypeKind::kFloat && e.const_float) return Operand::of_float(*e.const_float);
    if (e.kind == ExprKind::kName) {
      const Binding* b = lookup(e.name);
      if (!b) fail(e.span, "internal error: unbound name '" + e.name + "'");
      if (b->kind == Binding::kReg) return Operand::of_reg(b->index);
      if (unit_.params[static_cast<size_t>(b->index)].kind == pto::ParamKind::kScalar)
        return Operand::of_param(b->index);
      fail(e.span, "'" + e.name + "' is not a scalar");
    }
    const int t = temp(type_of(e.type, e.span));
    fresh_.insert(t);
    into(e, t);
    fresh_.erase(t);
    return Operand::of_reg(t);
  }
  Operand int_operand(const Expr& e) {
    if (e.type.kind != TypeKind::kInt) fail(e.span, "expected an integer");
    return scalar(e);
  }
  Operand bool_operand(const Expr& e) {
    if (e.type.kind != TypeKind::kBool) fail(e.span, "expected a bool");
    if (e.kind == ExprKind::kName) return scalar(e);
    const int t = temp(RegType::scalar(RegType::kBool));
    fresh_.insert(t);
    into(e, t);
    fresh_.erase(t);
    return Operand::of_reg(t);
  }
  int tile_reg(const Expr& e) {
    if (e.type.kind != TypeKind::kTile) fail(e.span, "expected a tile");
    if (e.kind == ExprKind::kName) {
      const Binding* b = lookup(e.name);
      if (b && b->kind == Binding::kReg) return b->index;
    }
    const int t = temp(type_of(e.type, e.span));
    fresh_.insert(t);
    into(e, t);
    fresh_.erase(t);
    return t;
  }

  // The first tile operand of an instruction defining `dst`: computed in
  // place into `dst` when that is a fresh register of the same type (saves a
  // tile buffer and a pass over memory), else into its own register.
  int first_operand(const Expr& e, int dst) {
    if (e.kind != ExprKind::kName && e.type.kind == TypeKind::kTile && fresh_.count(dst) &&
        type_of(e.type, e.span) == reg_type(dst)) {
      into(e, dst);
      return dst;
    }
    return tile_reg(e);
  }

  // Computes `e` into register `dst`.
  void into(const Expr& e, int dst) {
    const RegType dt = reg_type(dst);
    const RegType et = type_of(e.type, e.span);
    if (!(dt == et)) {
      // An int assigned to a float variable.
      if (dt.kind == RegType::kFloat && et.kind == RegType::kInt) {
        emit(make(Opcode::kMov, dst, {scalar(e)}));
        return;
      }
      fail(e.span, "internal error: a " + pto::to_string(et) + " value for a " +
                       pto::to_string(dt) + " register");
    }
    switch (e.kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
      case ExprKind::kName:
        if (dt.is_tile()) {
          const int src = tile_reg(e);
          if (src != dst) emit(make(Opcode::kTMov, dst, {Operand::of_reg(src)}));
        } else {
          emit(make(Opcode::kMov, dst, {scalar(e)}));
        }
        return;
      case ExprKind::kBool: {
        // true: 0 == 0, false: 0 != 0
        emit(make(e.bool_value ? Opcode::kEq : Opcode::kNe, dst,
                  {Operand::of_int(0), Operand::of_int(0)}));
        return;
      }
      case ExprKind::kUnary: {
        if (e.op == Tok::kMinus) {
          if (e.type.kind == TypeKind::kInt && e.const_value) {
            emit(make(Opcode::kMov, dst, {Operand::of_int(*e.const_value)}));
            return;
          }
          emit(make(Opcode::kNeg, dst, {scalar(*e.args[0])}));
          return;
        }
        emit(make(Opcode::kNot, dst, {bool_operand(*e.args[0])}));
        return;
      }
      case ExprKind::kBinary:
        binary(e, dst);
        return;
      case ExprKind::kCall:
        builtin(e, dst);
        return;
      default:
        unsupported(e.span, "this expression");
    }
  }

  void binary(const Expr& e, int dst) {
    if (e.type.kind == TypeKind::kInt && e.const_value) {
      emit(make(Opcode::kMov, dst, {Operand::of_int(*e.const_value)}));
      return;
    }
    if (e.type.kind == TypeKind::kFloat && e.const_float) {
      emit(make(Opcode::kMov, dst, {Operand::of_float(*e.const_float)}));
      return;
    }
    Opcode op;
    switch (e.op) {
      case Tok::kPlus: op = Opcode::kAdd; break;
      case Tok::kMinus: op = Opcode::kSub; break;
      case Tok::kStar: op = Opcode::kMul; break;
      case Tok::kSlash: op = Opcode::kDiv; break;
      case Tok::kPercent: op = Opcode::kRem; break;
      case Tok::kEq: op = Opcode::kEq; break;
      case Tok::kNe: op = Opcode::kNe; break;
      case Tok::kLt: op = Opcode::kLt; break;
      case Tok::kLe: op = Opcode::kLe; break;
      case Tok::kGt: op = Opcode::kGt; break;
      case Tok::kGe: op = Opcode::kGe; break;
      case Tok::kAndAnd: op = Opcode::kAnd; break;
      case Tok::kOrOr: op = Opcode::kOr; break;
      default:
        unsupported(e.span, "this operator");
    }
    if (op == Opcode::kAnd || op == Opcode::kOr) {
      // Short-circuit: the right side runs only when it decides the result.
      if (!fresh_.count(dst)) {  // `c = x && c` must not overwrite c before reading it
        const int t = temp(RegType::scalar(RegType::kBool));
        fresh_.insert(t);
        binary(e, t);
        fresh_.erase(t);
        emit(make(Opcode::kMov, dst, {Operand::of_reg(t)}));
        return;
      }
      into(*e.args[0], dst);
      Operand cond = Operand::of_reg(dst);
      if (op == Opcode::kOr) {
        const int t = temp(RegType::scalar(RegType::kBool));
        emit(make(Opcode::kNot, t, {Operand::of_reg(dst)}));
        cond = Operand::of_reg(t);
      }
      Inst i = make(Opcode::kIf, -1, {cond});
      cur_->push_back(std::move(i));
      std::vector<Inst>* saved = cur_;
      cur_ = &cur_->back().body;
      into(*e.args[1], dst);
      cur_ = saved;
      return;
    }
    Operand a = scalar(*e.args[0]);
    Operand b = scalar(*e.args[1]);
    emit(make(op, dst, {a, b}));
  }

  void builtin(const Expr& e, int dst) {
    const std::string& n = e.name;
    const auto& a = e.args;
    const RegType dt = reg_type(dst);
    if (n == "rank") {
      emit(make(Opcode::kRank, dst, {}));
      return;
    }
    if (n == "world") {
      emit(make(Opcode::kMov, dst, {Operand::of_int(e.const_value.value_or(opt_.world))}));
      return;
    }
    if (n == "load") {
      emit(make(Opcode::kTLoad, dst, {region(*a[0], *a[1], dt, e.span)}));
      return;
    }
    if (n == "remote_load") {
      Operand peer = int_operand(*a[1]);
      emit(make(Opcode::kTRemoteLoad, dst, {region(*a[0], *a[2], dt, e.span), peer}));
      return;
    }
    static const std::map<std::string, std::pair<Opcode, Opcode>> kBinary = {
        {"add", {Opcode::kTAdd, Opcode::kAdd}}, {"sub", {Opcode::kTSub, Opcode::kSub}},
        {"mul", {Opcode::kTMul, Opcode::kMul}}, {"div", {Opcode::kTDiv, Opcode::kDiv}},
        {"max", {Opcode::kTMax, Opcode::kMax}}, {"min", {Opcode::kTMin, Opcode::kMin}}};
    const bool float_tile =
        dt.is_tile() && (dt.dtype == DType::kF32 || pto::half_dtype(dt.dtype));
    if (auto it = kBinary.find(n); it != kBinary.end()) {
      if (!dt.is_tile()) {  // max/min of two scalars
        Operand x = scalar(*a[0]);
        Operand y = scalar(*a[1]);
        emit(make(it->second.second, dst, {x, y}));
        return;
      }
      const int x = first_operand(*a[0], dst);
      Operand y = a[1]->type.kind == TypeKind::kTile ? Operand::of_reg(tile_reg(*a[1])) : scalar(*a[1]);
      if (y.kind == Operand::kFloat && !float_tile)
        unsupported(a[1]->span, "a float operand with an integer tile");
      emit(make(it->second.first, dst, {Operand::of_reg(x), y}));
      return;
    }
    static const std::map<std::string, Opcode> kUnary = {
        {"exp", Opcode::kTExp}, {"sqrt", Opcode::kTSqrt}, {"neg", Opcode::kTNeg},
        {"row_sum", Opcode::kTRowSum}, {"row_max", Opcode::kTRowMax}, {"cast", Opcode::kTCvt}};
    if (auto it = kUnary.find(n); it != kUnary.end()) {
      const int x = first_operand(*a[0], dst);
      if ((n == "exp" || n == "sqrt") && !float_tile)
        unsupported(e.span, "'" + n + "' of a " + std::string(dtype_name(dt.dtype)) + " tile");
      emit(make(it->second, dst, {Operand::of_reg(x)}));
      return;
    }
    if (n == "matmul") {
      const int x = tile_reg(*a[0]);
      const int y = tile_reg(*a[1]);
      int acc = a.size() == 3 ? tile_reg(*a[2]) : -1;
      const int out = x == dst || y == dst ? temp(dt) : dst;
      std::vector<Operand> args = {Operand::of_reg(x), Operand::of_reg(y)};
      if (acc >= 0) args.push_back(Operand::of_reg(acc));
      emit(make(Opcode::kTMatmul, out, std::move(args)));
      if (out != dst) emit(make(Opcode::kTMov, dst, {Operand::of_reg(out)}));
      return;
    }
    if (n == "full" || n == "zeros") {
      Operand v = n == "full" ? scalar(*a[1])
                              : (float_tile ? Operand::of_float(0.0) : Operand::of_int(0));
      if (v.kind == Operand::kFloat && !float_tile)
        unsupported(a[1]->span, "a float fill value for an integer tile");
      emit(make(Opcode::kTFull, dst, {v}));
      return;
    }
    if (n == "min" || n == "max") return;  // handled above
    unsupported(e.span, "'" + n + "' in a kernel expression");
  }

  const Function& fn_;
  LowerOptions opt_;
  pto::Unit unit_;
  int stmt_line_ = 0;  // the program line of the statement being lowered (.loc)
  std::vector<std::map<std::string, Binding>> scopes_;
  std::vector<Inst>* cur_ = nullptr;
  std::set<std::string> used_;
  std::set<int> fresh_;  // registers being defined for the first time
  int temps_ = 0;
};

}  // namespace

LoweredKernel lower_kernel(const Function& kernel, const LowerOptions& options) {
  return Lowerer(kernel, options).run();
}

}  // namespace pypto::compiler
