#include "compiler/interp/interp_eval.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "compiler/interp/interp_tile_ops.h"
#include "pypto/error.h"

namespace pypto::compiler::interp {

namespace {

// Every so many loop iterations a rank checks whether another rank failed or
// the deadline passed.
constexpr uint32_t kTicksPerCheck = 256;

std::string list_string(const Shape& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

// How messages name the tensor or window an expression denotes.
std::string describe(const Expr& e) {
  if (e.kind == ExprKind::kName) return "'" + e.name + "'";
  if (e.kind == ExprKind::kIndex && !e.args.empty()) return describe(*e.args[0]);
  if (e.kind == ExprKind::kCall && e.name == "view" && !e.args.empty()) return describe(*e.args[0]);
  return "this " + std::string(e.kind == ExprKind::kCall ? "'" + e.name + "' result" : "value");
}

// The compile-time extents of a shape list: [16, 64].
Shape constant_list(const Expr& list) {
  Shape out;
  for (const ExprPtr& a : list.args) out.push_back(a->const_value.value_or(0));
  return out;
}

// A tile's [rows, cols] as the extents of a region of `rank` dimensions:
// [1, ..., 1, rows, cols], or [cols] in one dimension.
Shape tile_extents(const Tile& t, size_t rank) {
  if (rank == 1) return {t.cols};
  Shape out(rank - 2, 1);
  out.push_back(t.rows);
  out.push_back(t.cols);
  return out;
}

// The tile [rows, cols] of a region's extents (leading extents are 1).
std::pair<int64_t, int64_t> tile_shape(const Shape& extents) {
  const int64_t cols = extents.back();
  const int64_t rows = extents.size() >= 2 ? extents[extents.size() - 2] : 1;
  return {rows, cols};
}

Compare compare_of(const std::string& name) {
  if (name == "eq") return Compare::kEq;
  if (name == "ne") return Compare::kNe;
  if (name == "gt") return Compare::kGt;
  if (name == "ge") return Compare::kGe;
  if (name == "lt") return Compare::kLt;
  return Compare::kLe;
}

std::optional<BinaryOp> binary_op(const std::string& name) {
  if (name == "add") return BinaryOp::kAdd;
  if (name == "sub") return BinaryOp::kSub;
  if (name == "mul") return BinaryOp::kMul;
  if (name == "div") return BinaryOp::kDiv;
  if (name == "max") return BinaryOp::kMax;
  if (name == "min") return BinaryOp::kMin;
  return std::nullopt;
}

}  // namespace

// ------------------------------------------------------------ program info

std::string ProgramInfo::where(Span span) const {
  if (!span.valid()) return "<unknown location>";
  if (sources && span.file < sources->size()) {
    const SourceFile& f = sources->file(span.file);
    const LineCol lc = f.line_col(span.begin);
    return f.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col);
  }
  return "<file #" + std::to_string(span.file) + ", byte " + std::to_string(span.begin) + ">";
}

ProgramInfo describe_program(const Program& program, int64_t world, const SourceManager* sources) {
  ProgramInfo info;
  info.sources = sources;
  info.world = world;
  info.constants["WORLD"] = world;
  for (const Module& m : program.modules)
    for (const Function& f : m.functions) info.functions.emplace(f.name, &f);
  // In module order: a constant may use the constants before it (imports come first).
  for (const Module& m : program.modules) {
    for (const ConstDecl& c : m.consts) {
      if (!c.value) continue;
      if (c.value->const_value) {
        info.constants[c.name] = *c.value->const_value;
        continue;
      }
      Evaluator constant(info, nullptr, -1);
      info.constants[c.name] = constant.evaluate(*c.value);
    }
  }
  return info;
}

// ------------------------------------------------------------ evaluator

Evaluator::Evaluator(const ProgramInfo& program, World* world, int64_t rank)
    : program_(program), world_(world), rank_(rank) {}

void Evaluator::run(const Function& f, const std::vector<Value>& args) {
  if (args.size() != f.params.size()) internal(f.name_span, "argument count of '" + f.name + "'");
  Frame frame;
  frame.fn = &f;
  frame.scopes.emplace_back();
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = f.params[i];
    Value v = args[i];
    if (p.kind == ParamKind::kScalar) {
      // A scalar takes the parameter's dtype, as the C++ argument conversion does.
      const Number n = std::holds_alternative<int64_t>(v) ? Number(std::get<int64_t>(v))
                                                          : Number(std::get<double>(v));
      if (is_float_dtype(p.dtype))
        v = float_element(p.dtype, n);
      else
        v = int_element(p.dtype, n);
    }
    frame.scopes.back()[p.name] = std::move(v);
  }
  frames_.push_back(std::move(frame));
  exec_block(f.body);
  frames_.pop_back();
}

Value Evaluator::evaluate(const Expr& e) { return eval(e); }

// ------------------------------------------------------------ statements

void Evaluator::exec_block(const std::vector<StmtPtr>& body) {
  frames_.back().scopes.emplace_back();
  for (const StmtPtr& s : body)
    if (s) exec(*s);
  frames_.back().scopes.pop_back();
}

void Evaluator::exec(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::kLet: {
      Value v = eval(*s.value);
      if (const auto* w = std::get_if<WindowRef>(&v); w && world_ && rank_ < 0)
        world_->name_window(*w, s.name);
      declare(s.name, std::move(v));
      return;
    }
    case StmtKind::kConst:
      declare(s.name, eval(*s.value));
      return;
    case StmtKind::kAssign:
      assign(s, eval(*s.value));
      return;
    case StmtKind::kFor:
      exec_for(s);
      return;
    case StmtKind::kIf:
      if (eval_bool(*s.value))
        exec_block(s.body);
      else
        exec_block(s.else_body);
      return;
    case StmtKind::kCall:
      exec_call(s);
      return;
  }
}

void Evaluator::exec_for(const Stmt& s) {
  const int64_t lo = eval_int(*s.lo);
  const int64_t hi = eval_int(*s.hi);
  const int64_t step = s.step ? eval_int(*s.step) : 1;
  if (step <= 0) fail(s.step->span, "the loop step must be positive");
  // The loop variable lives in a scope of its own around the body's block.
  frames_.back().scopes.emplace_back();
  for (int64_t i = lo; i < hi;) {
    tick();
    frames_.back().scopes.back()[s.name] = i;
    exec_block(s.body);
    if (i > std::numeric_limits<int64_t>::max() - step) break;
    i += step;
  }
  frames_.back().scopes.pop_back();
}

void Evaluator::exec_call(const Stmt& s) {
  const Expr& call = *s.value;
  if (s.on) {
    // `chip(...) on r` in a host function: recorded; the rank thread runs it.
    const int64_t target = eval_int(*s.on);
    if (target < 0 || target >= program_.world) {
      fail(s.on->span, "dispatch to rank " + std::to_string(target) + ", but ranks are 0 .. " +
                           std::to_string(program_.world - 1));
    }
    Dispatch d;
    d.rank = target;
    d.chip = program_.functions.at(call.name);
    for (const ExprPtr& a : call.args) d.args.push_back(eval(*a));
    dispatches_.push_back(std::move(d));
    return;
  }
  auto it = program_.functions.find(call.name);
  if (it == program_.functions.end()) {
    eval_builtin_checked(call);
    return;
  }
  // A host function called from a host function and a chip function called from a
  // chip function are inlined; a kernel called from a chip function is a task. Tasks
  // run to completion in program order: one valid schedule of the runtime's
  // dependency-inferred task graph, equal to any other for race-free programs.
  std::vector<Value> args;
  for (const ExprPtr& a : call.args) args.push_back(eval(*a));
  run(*it->second, args);
}

void Evaluator::declare(const std::string& name, Value v) {
  frames_.back().scopes.back()[name] = std::move(v);
}

void Evaluator::assign(const Stmt& s, Value v) {
  auto& scopes = frames_.back().scopes;
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto found = it->find(s.name);
    if (found == it->end()) continue;
    // An int assigned to a float variable becomes a float.
    if (std::holds_alternative<double>(found->second) && std::holds_alternative<int64_t>(v))
      v = static_cast<double>(std::get<int64_t>(v));
    found->second = std::move(v);
    return;
  }
  internal(s.name_span, "assignment to unknown variable '" + s.name + "'");
}

// ------------------------------------------------------------ expressions

Value Evaluator::eval(const Expr& e) {
  // Folded by the checker: constants, WORLD, world(), constant arithmetic.
  if (e.const_value && e.type.kind == TypeKind::kInt) return *e.const_value;
  switch (e.kind) {
    case ExprKind::kInt:
      return e.int_value;
    case ExprKind::kFloat:
      return e.float_value;
    case ExprKind::kBool:
      return e.bool_value;
    case ExprKind::kName:
      return eval_name(e);
    case ExprKind::kIndex:
      return eval_index(e);
    case ExprKind::kUnary:
      return eval_unary(e);
    case ExprKind::kBinary:
      return eval_binary(e);
    case ExprKind::kCall:
      if (program_.functions.count(e.name)) internal(e.span, "a call to a function as a value");
      return eval_builtin_checked(e);
    case ExprKind::kList:
    case ExprKind::kTypeLit:
    case ExprKind::kDType:
      break;
  }
  internal(e.span, "a list, type or dtype outside a builtin's arguments");
}

Value Evaluator::eval_name(const Expr& e) {
  if (!frames_.empty()) {
    const auto& scopes = frames_.back().scopes;
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto found = it->find(e.name);
      if (found != it->end()) return found->second;
    }
  }
  auto c = program_.constants.find(e.name);
  if (c != program_.constants.end()) return c->second;
  internal(e.span, "unknown name '" + e.name + "'");
}

Value Evaluator::eval_index(const Expr& e) {
  TensorRef t = eval_tensor(*e.args[0]);
  const int64_t i = eval_int(*e.args[1]);
  if (i < 0 || i >= t.shape[0]) {
    fail(e.args[1]->span, "index " + std::to_string(i) + " is out of range for " +
                              describe(*e.args[0]) + ", whose first extent is " +
                              std::to_string(t.shape[0]));
  }
  t.offset += i * t.strides[0];
  t.shape.erase(t.shape.begin());
  t.strides.erase(t.strides.begin());
  return t;
}

Value Evaluator::eval_unary(const Expr& e) {
  if (e.op == Tok::kBang) return !eval_bool(*e.args[0]);
  const Number x = eval_number(*e.args[0]);
  if (const auto* i = std::get_if<int64_t>(&x)) {
    if (*i == std::numeric_limits<int64_t>::min()) fail(e.span, "integer overflow in '-'");
    return -*i;
  }
  return -std::get<double>(x);
}

Value Evaluator::eval_binary(const Expr& e) {
  if (e.op == Tok::kAndAnd) return eval_bool(*e.args[0]) && eval_bool(*e.args[1]);
  if (e.op == Tok::kOrOr) return eval_bool(*e.args[0]) || eval_bool(*e.args[1]);
  const Number a = eval_number(*e.args[0]);
  const Number b = eval_number(*e.args[1]);
  const auto* ia = std::get_if<int64_t>(&a);
  const auto* ib = std::get_if<int64_t>(&b);
  const std::string op = tok_name(e.op);
  if (ia && ib) {
    int64_t r = 0;
    switch (e.op) {
      case Tok::kEq:
        return *ia == *ib;
      case Tok::kNe:
        return *ia != *ib;
      case Tok::kLt:
        return *ia < *ib;
      case Tok::kLe:
        return *ia <= *ib;
      case Tok::kGt:
        return *ia > *ib;
      case Tok::kGe:
        return *ia >= *ib;
      case Tok::kPlus:
        if (__builtin_add_overflow(*ia, *ib, &r)) break;
        return r;
      case Tok::kMinus:
        if (__builtin_sub_overflow(*ia, *ib, &r)) break;
        return r;
      case Tok::kStar:
        if (__builtin_mul_overflow(*ia, *ib, &r)) break;
        return r;
      case Tok::kSlash:
      case Tok::kPercent:
        if (*ib == 0) fail(e.span, "integer division by zero in " + op);
        if (*ia == std::numeric_limits<int64_t>::min() && *ib == -1) break;
        return e.op == Tok::kSlash ? *ia / *ib : *ia % *ib;
      default:
        internal(e.span, "operator " + op + " on integers");
    }
    fail(e.span, "integer overflow in " + op + " of " + std::to_string(*ia) + " and " +
                     std::to_string(*ib));
  }
  const double x = as_double(a);
  const double y = as_double(b);
  switch (e.op) {
    case Tok::kEq:
      return x == y;
    case Tok::kNe:
      return x != y;
    case Tok::kLt:
      return x < y;
    case Tok::kLe:
      return x <= y;
    case Tok::kGt:
      return x > y;
    case Tok::kGe:
      return x >= y;
    case Tok::kPlus:
      return x + y;
    case Tok::kMinus:
      return x - y;
    case Tok::kStar:
      return x * y;
    case Tok::kSlash:
      return x / y;
    default:
      internal(e.span, "operator " + op + " on floats");
  }
}

int64_t Evaluator::eval_int(const Expr& e) {
  const Value v = eval(e);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  internal(e.span, "an integer was expected");
}

Number Evaluator::eval_number(const Expr& e) {
  const Value v = eval(e);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  internal(e.span, "a number was expected");
}

bool Evaluator::eval_bool(const Expr& e) {
  const Value v = eval(e);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  internal(e.span, "a bool was expected");
}

TilePtr Evaluator::eval_tile(const Expr& e) {
  Value v = eval(e);
  if (auto* t = std::get_if<TilePtr>(&v)) return std::move(*t);
  internal(e.span, "a tile was expected");
}

TensorRef Evaluator::eval_tensor(const Expr& e) {
  Value v = eval(e);
  if (auto* t = std::get_if<TensorRef>(&v)) return std::move(*t);
  internal(e.span, "a tensor was expected");
}

WindowRef Evaluator::eval_window(const Expr& e) {
  const Value v = eval(e);
  if (const auto* w = std::get_if<WindowRef>(&v)) return *w;
  internal(e.span, "a window was expected");
}

Shape Evaluator::eval_offsets(const Expr& list) {
  if (list.kind != ExprKind::kList) internal(list.span, "offsets that are not a list");
  Shape out;
  for (const ExprPtr& a : list.args) out.push_back(eval_int(*a));
  return out;
}

int64_t Evaluator::eval_peer(const Expr& e) {
  const int64_t peer = eval_int(e);
  if (peer < 0 || peer >= program_.world) {
    fail(e.span, "peer rank " + std::to_string(peer) + " is out of range: ranks are 0 .. " +
                     std::to_string(program_.world - 1) + " (WORLD is " +
                     std::to_string(program_.world) + ")");
  }
  return peer;
}

// ------------------------------------------------------------ memory

std::string Evaluator::window_name(const Expr& e, WindowRef w) const {
  const std::string host = world_->window(w).name;
  if (e.kind == ExprKind::kName && e.name != host && !host.empty())
    return "'" + e.name + "' (host window '" + host + "')";
  return describe(e);
}

Evaluator::Place Evaluator::place(const Expr& e) {
  Value v = eval(e);
  if (auto* t = std::get_if<TensorRef>(&v)) {
    const bool in_window = t->in_window;
    return Place{std::move(*t), in_window, describe(e)};
  }
  if (const auto* w = std::get_if<WindowRef>(&v)) {
    if (rank_ < 0) internal(e.span, "a window accessed outside a rank");
    const Tensor& copy = world_->window(*w).copies[static_cast<size_t>(rank_)];
    return Place{TensorRef::of(copy), true, "window " + window_name(e, *w)};
  }
  internal(e.span, "a tensor or window was expected");
}

Evaluator::Place Evaluator::peer_place(const Expr& window, int64_t peer) {
  const WindowRef w = eval_window(window);
  const Tensor& copy = world_->window(w).copies[static_cast<size_t>(peer)];
  return Place{TensorRef::of(copy), true,
               "window " + window_name(window, w) + " of rank " + std::to_string(peer)};
}

void Evaluator::check_region(const Expr& offsets_list, const Shape& offsets, const Shape& extents,
                             const Shape& shape, const std::string& name) {
  if (offsets.size() != shape.size() || extents.size() != shape.size())
    internal(offsets_list.span, "a region of the wrong rank");
  for (size_t d = 0; d < shape.size(); ++d) {
    const Span at = d < offsets_list.args.size() ? offsets_list.args[d]->span : offsets_list.span;
    if (offsets[d] < 0) {
      fail(at, "offset " + std::to_string(offsets[d]) + " of dimension " + std::to_string(d) +
                   " into " + name + " is negative");
    }
    int64_t end = 0;
    if (__builtin_add_overflow(offsets[d], extents[d], &end) || end > shape[d]) {
      fail(at, "the region [" + std::to_string(offsets[d]) + ", " +
                   (end >= offsets[d] ? std::to_string(end) : std::string("overflow")) +
                   ") of dimension " + std::to_string(d) + " (offsets " + list_string(offsets) +
                   ") exceeds " + name + ", whose extent there is " + std::to_string(shape[d]));
    }
  }
}

template <class F>
void Evaluator::touch(const Place& p, bool writes, F&& f) {
  if (p.window)
    world_->access(writes, std::forward<F>(f));
  else
    f();
}

// ------------------------------------------------------------ builtins

Value Evaluator::eval_builtin_checked(const Expr& call) {
  try {
    return eval_builtin(call);
  } catch (const ValueError& e) {
    fail(call.span, e.what());
  }
}

Value Evaluator::eval_builtin(const Expr& call) {
  const std::string& name = call.name;
  const auto& a = call.args;
  if (name == "rank") {
    if (rank_ < 0) internal(call.span, "rank() outside a rank");
    return rank_;
  }
  if (name == "world") return program_.world;
  if (auto op = binary_op(name)) {
    Value x = eval(*a[0]);
    if (const auto* t = std::get_if<TilePtr>(&x)) {
      Value y = eval(*a[1]);
      if (const auto* u = std::get_if<TilePtr>(&y)) return tile_binary(*op, **t, **u);
      const Number s = std::holds_alternative<int64_t>(y) ? Number(std::get<int64_t>(y))
                                                          : Number(std::get<double>(y));
      return tile_binary(*op, **t, s);
    }
    // max/min of two scalars.
    const Number p = std::holds_alternative<int64_t>(x) ? Number(std::get<int64_t>(x))
                                                        : Number(std::get<double>(x));
    const Number q = eval_number(*a[1]);
    if (std::holds_alternative<int64_t>(p) && std::holds_alternative<int64_t>(q)) {
      const int64_t i = std::get<int64_t>(p), j = std::get<int64_t>(q);
      return *op == BinaryOp::kMax ? std::max(i, j) : std::min(i, j);
    }
    const double i = as_double(p), j = as_double(q);
    return *op == BinaryOp::kMax ? std::max(i, j) : std::min(i, j);
  }
  if (name == "exp") return tile_unary(UnaryOp::kExp, *eval_tile(*a[0]));
  if (name == "sqrt") return tile_unary(UnaryOp::kSqrt, *eval_tile(*a[0]));
  if (name == "neg") return tile_unary(UnaryOp::kNeg, *eval_tile(*a[0]));
  if (name == "cast") return tile_cast(*eval_tile(*a[0]), a[1]->dtype);
  if (name == "row_sum") return tile_row_sum(*eval_tile(*a[0]));
  if (name == "row_max") return tile_row_max(*eval_tile(*a[0]));
  if (name == "matmul") {
    const TilePtr x = eval_tile(*a[0]);
    const TilePtr y = eval_tile(*a[1]);
    const TilePtr acc = a.size() == 3 ? eval_tile(*a[2]) : nullptr;
    return tile_matmul(*x, *y, acc.get());
  }
  if (name == "full" || name == "zeros") {
    const auto [rows, cols] = tile_shape(a[0]->type.shape);
    const Number value = name == "full" ? eval_number(*a[1]) : Number(int64_t{0});
    return tile_full(a[0]->dtype, rows, cols, value);
  }
  if (name == "load" || name == "remote_load") return builtin_load(call, name == "remote_load");
  if (name == "store" || name == "remote_store") {
    builtin_store(call, name == "remote_store");
    return std::monostate{};
  }
  if (name == "put" || name == "get") {
    builtin_put_get(call, name == "put");
    return std::monostate{};
  }
  if (name == "notify") {
    builtin_notify(call);
    return std::monostate{};
  }
  if (name == "wait") {
    builtin_wait(call);
    return std::monostate{};
  }
  if (name == "view") {
    TensorRef t = eval_tensor(*a[0]);
    const Shape offsets = eval_offsets(*a[1]);
    const Shape extents = constant_list(*a[2]);
    check_region(*a[1], offsets, extents, t.shape, describe(*a[0]));
    for (size_t d = 0; d < offsets.size(); ++d) t.offset += offsets[d] * t.strides[d];
    t.shape = extents;
    return t;
  }
  if (name == "tensor") return TensorRef::of(Tensor::empty(a[0]->dtype, a[0]->type.shape));
  if (name == "window_buffer") {
    if (!world_ || rank_ >= 0) internal(call.span, "window_buffer outside the host function");
    return world_->add_window(a[0]->dtype, a[0]->type.shape);
  }
  internal(call.span, "unknown builtin '" + name + "'");
}

TilePtr Evaluator::builtin_load(const Expr& call, bool remote) {
  const auto& a = call.args;
  const Place src = remote ? peer_place(*a[0], eval_peer(*a[1])) : place(*a[0]);
  const Expr& offsets_list = *a[remote ? 2 : 1];
  const Shape offsets = eval_offsets(offsets_list);
  const Shape extents = constant_list(*a[remote ? 3 : 2]);
  check_region(offsets_list, offsets, extents, src.ref.shape, src.name);
  const std::pair<int64_t, int64_t> rows_cols = tile_shape(extents);
  TilePtr tile;
  touch(src, false,
        [&] { tile = read_tile(src.ref, offsets, extents, rows_cols.first, rows_cols.second); });
  return tile;
}

void Evaluator::builtin_store(const Expr& call, bool remote) {
  const auto& a = call.args;
  const TilePtr tile = eval_tile(*a[0]);
  const Place dst = remote ? peer_place(*a[1], eval_peer(*a[2])) : place(*a[1]);
  const Expr& offsets_list = *a[remote ? 3 : 2];
  const Shape offsets = eval_offsets(offsets_list);
  const Shape extents = tile_extents(*tile, dst.ref.shape.size());
  check_region(offsets_list, offsets, extents, dst.ref.shape, dst.name);
  const bool add = remote && a.size() == 5 && a[4]->name == "add";
  touch(dst, true, [&] { write_tile(dst.ref, offsets, extents, *tile, add); });
}

void Evaluator::builtin_put_get(const Expr& call, bool put) {
  // put(src, w, peer, offsets): all of src into the peer's w at offsets.
  // get(dst, w, peer, offsets): all of dst from the peer's w at offsets.
  const auto& a = call.args;
  const Place local = place(*a[0]);
  const Place remote = peer_place(*a[1], eval_peer(*a[2]));
  const Shape offsets = eval_offsets(*a[3]);
  const Shape& extents = local.ref.shape;
  check_region(*a[3], offsets, extents, remote.ref.shape, remote.name);
  const Shape origin(extents.size(), 0);
  world_->access(put || local.window, [&] {
    if (put)
      copy_region(remote.ref, offsets, local.ref, origin, extents);
    else
      copy_region(local.ref, origin, remote.ref, offsets, extents);
  });
}

void Evaluator::builtin_notify(const Expr& call) {
  const auto& a = call.args;
  const Place cell = peer_place(*a[0], eval_peer(*a[1]));
  const Shape offsets = eval_offsets(*a[2]);
  check_region(*a[2], offsets, Shape(offsets.size(), 1), cell.ref.shape, cell.name);
  const int64_t value = eval_int(*a[3]);
  const bool add = a[4]->name == "add";
  world_->access(true, [&] {
    std::byte* p = cell.ref.element(offsets);
    const int64_t old = read_int(p, DType::kI32);
    // The cell is an int32: the value converts to it, an add wraps around.
    const int64_t next =
        add ? wrap_int(DType::kI32, static_cast<int64_t>(static_cast<uint64_t>(old) +
                                                         static_cast<uint64_t>(value)))
            : wrap_int(DType::kI32, value);
    write_int(p, DType::kI32, next);
  });
}

void Evaluator::builtin_wait(const Expr& call) {
  const auto& a = call.args;
  const WindowRef w = eval_window(*a[0]);
  const Shape offsets = eval_offsets(*a[1]);
  check_region(*a[1], offsets, Shape(offsets.size(), 1), world_->window(w).shape,
               "window " + window_name(*a[0], w));
  WaitSite site;
  site.where = program_.where(call.span);
  site.kernel = frames_.back().fn->name;
  site.cell = window_name(*a[0], w) + list_string(offsets);
  site.cmp = compare_of(a[2]->name);
  site.expected = wrap_int(DType::kI32, eval_int(*a[3]));  // compared as an int32, as the ABI does
  world_->wait(rank_, w, offsets, site);
}

// ------------------------------------------------------------ errors, progress

void Evaluator::fail(Span span, const std::string& message) const {
  std::string context;
  if (!frames_.empty()) {
    const Function& f = *frames_.back().fn;
    context = std::string(" [") +
              (rank_ >= 0 && program_.distributed ? "rank " + std::to_string(rank_) + ", " : "") +
              func_kind_name(f.kind) + " '" + f.name + "']";
  }
  throw ProgramError(program_.where(span) + ": " + message + context);
}

void Evaluator::internal(Span span, const std::string& what) const {
  throw ProgramError(program_.where(span) + ": internal error in the reference interpreter: " +
                     what + " (the checker should have rejected this program; please report it)");
}

void Evaluator::tick() {
  if (++ticks_ % kTicksPerCheck == 0 && world_) world_->check_progress();
}

}  // namespace pypto::compiler::interp
