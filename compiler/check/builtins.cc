// The builtin operations: their table (where each may appear, its signature,
// the rule that checks a call) and the argument checks the rules share.
#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "compiler/check/checker_impl.h"

namespace pypto::compiler {

namespace {

std::string count(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

const char* context_name(const Function& f) {
  if (f.kind == FuncKind::kKernel)
    return f.core == CoreType::kAic ? "an aic (cube) kernel" : "an aiv (vector) kernel";
  return f.kind == FuncKind::kChip ? "a chip function" : "a host function";
}

std::string where_allowed(unsigned c) {
  std::vector<std::string> parts;
  if ((c & kInKernel) == kInKernel) {
    parts.push_back("kernels");
  } else if (c & kInAiv) {
    parts.push_back("aiv (vector) kernels");
  } else if (c & kInAic) {
    parts.push_back("aic (cube) kernels");
  }
  if (c & kInChip) parts.push_back("chip functions");
  if (c & kInHost) parts.push_back("host functions");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i)
    s += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return s;
}

}  // namespace

// One call of a builtin being checked: the call, its table entry, and the
// argument checks its rule is made of. Each check reports its own error and
// returns nothing (or false) when the argument is wrong.
class BuiltinCall {
 public:
  BuiltinCall(Checker& checker, Expr& call, const BuiltinInfo& info, unsigned here)
      : c(checker), e(call), f(*checker.current()), name(info.name), args(call.args),
        here(here), info_(info) {}

  Checker& c;
  Expr& e;
  const Function& f;
  const std::string name;
  std::vector<ExprPtr>& args;
  const unsigned here;  // the BuiltinContext of the calling function

  void error(Span span, std::string message) { c.error(span, std::move(message)); }

  // An argument read as an option name (add, ge, ...), not looked up as a variable.
  std::optional<std::string> symbol(Expr& a, std::initializer_list<const char*> allowed,
                                    const char* what) {
    std::string list;
    for (const char* s : allowed) list += std::string(list.empty() ? "" : ", ") + s;
    if (a.kind == ExprKind::kName)
      for (const char* s : allowed)
        if (a.name == s) {
          a.type = Type::of(TypeKind::kSymbol);
          return a.name;
        }
    error(a.span, std::string(what) + " must be one of " + list);
    return std::nullopt;
  }
  bool arity(size_t lo, size_t hi) {
    if (args.size() >= lo && args.size() <= hi) return true;
    const std::string n =
        lo == hi ? std::to_string(lo) : std::to_string(lo) + " or " + std::to_string(hi);
    error(e.span, "'" + name + "' takes " + n + " argument" + (hi == 1 ? "" : "s") + ", but " +
                      std::to_string(args.size()) + " " + (args.size() == 1 ? "was" : "were") +
                      " given; " + info_.signature);
    return false;
  }
  Type value(size_t i) { return c.check_expr(*args[i]); }
  std::optional<Type> need(size_t i, TypeKind kind, const char* what) {
    const Type t = value(i);
    if (t.is_error()) return std::nullopt;
    if (t.kind != kind) {
      error(args[i]->span, "argument " + std::to_string(i + 1) + " of '" + name + "' must be " +
                               what + ", but " + Checker::describe(*args[i]) + " is " +
                               with_article(to_string(t)));
      return std::nullopt;
    }
    return t;
  }
  // The local tensor or window of a copy: readable (source) or writable (destination).
  std::optional<Type> source(size_t i) { return local(i, false); }
  std::optional<Type> destination(size_t i) { return local(i, true); }
  std::optional<Type> local(size_t i, bool write) {
    const Type t = value(i);
    if (t.is_error()) return std::nullopt;
    if (t.kind != TypeKind::kTensor && t.kind != TypeKind::kWindow) {
      error(args[i]->span, "'" + name + (write ? "' writes" : "' reads") +
                               " a tensor or a window, but " + Checker::describe(*args[i]) +
                               " is " + with_article(to_string(t)));
      return std::nullopt;
    }
    if (t.kind == TypeKind::kTensor && t.dir == (write ? Direction::kIn : Direction::kOut)) {
      error(args[i]->span, write ? "cannot write 'in' tensor " + Checker::describe(*args[i]) +
                                       "; declare it 'out' or 'inout'"
                                 : "cannot read 'out' tensor " + Checker::describe(*args[i]) +
                                       "; declare it 'inout' to read and write it");
      return std::nullopt;
    }
    return t;
  }
  bool peer(size_t i) { return need(i, TypeKind::kInt, "a rank (int)").has_value(); }
  std::optional<Type> signal_window(size_t i) {
    auto w = need(i, TypeKind::kWindow, "a window");
    if (w && w->dtype != DType::kI32) {
      error(args[i]->span, "'" + name + "' works on i32 signal cells, but window " +
                               Checker::describe(*args[i]) + " holds " + dtype_name(w->dtype));
      return std::nullopt;
    }
    return w;
  }
  // offsets into `t` of a region of `extents`; bounds-checked where known.
  bool region(Expr& offsets, const Type& t, const std::vector<int64_t>& extents,
              const std::string& what, const std::string& of) {
    std::vector<std::optional<int64_t>> off;
    if (!c.check_offsets(offsets, t.shape.size(), what, off)) return false;
    return c.check_region(offsets.span, of, t.shape, off, extents);
  }
  // A tile's extents padded with leading 1s to `rank`; false when it has more dims than that.
  bool padded(const Type& tile, size_t rank, Span span, const std::string& of,
              std::vector<int64_t>& out) {
    if (rank == 1 && tile.shape[0] == 1) {
      out = {tile.shape[1]};
      return true;
    }
    if (rank < 2) {
      error(span, with_article(to_string(tile)) + " does not fit the 1-D " + of);
      return false;
    }
    out.assign(rank - 2, 1);
    out.push_back(tile.shape[0]);
    out.push_back(tile.shape[1]);
    return true;
  }
  bool dtype_match(Span span, DType a, DType b, const std::string& what) {
    if (a == b) return true;
    error(span, what + ": " + dtype_name(a) + " vs " + dtype_name(b) + "; convert with cast(...)");
    return false;
  }

 private:
  const BuiltinInfo& info_;
};

namespace {

// ---------------------------------------------------------------- the rules
// One per builtin (or family of builtins sharing a shape); the table below
// names each entry's rule. A rule sees only calls in an allowed context,
// with every argument present.

Type check_rank_or_world(BuiltinCall& b, bool world) {
  if (!b.arity(0, 0)) return Type::error();
  if (world) b.e.const_value = b.c.world();
  // rank() in a chip function or kernel is a run-time value: the same code runs on every rank.
  return Type::of(TypeKind::kInt);
}

Type check_load(BuiltinCall& b, bool remote) {
  auto& args = b.args;
  if (!b.arity(remote ? 4 : 3, remote ? 4 : 3)) return Type::error();
  auto src = remote ? b.need(0, TypeKind::kWindow, "a window") : b.source(0);
  if (remote && !b.peer(1)) src.reset();
  std::vector<int64_t> shape;
  const bool shape_ok = b.c.check_shape_list(*args[remote ? 3 : 2], "the tile shape", shape);
  if (!src || !shape_ok) return Type::error();
  if (shape.size() != src->shape.size()) {
    b.error(args[remote ? 3 : 2]->span, "the tile shape has " + count(shape.size(), "extent") +
                                            ", but " + Checker::describe(*args[0]) + " has " +
                                            count(src->shape.size(), "dimension"));
    return Type::error();
  }
  if (!b.region(*args[remote ? 2 : 1], *src, shape, "the offsets", Checker::describe(*args[0])))
    return Type::error();
  std::optional<Type> tile = b.c.tile_of_region(args[remote ? 3 : 2]->span, src->dtype, shape);
  if (!tile) return Type::error();
  b.c.check_tile_fits_core(b.e.span, *tile);
  return *tile;
}

Type check_store(BuiltinCall& b, bool remote) {
  auto& args = b.args;
  if (!b.arity(remote ? 4 : 3, remote ? 5 : 3)) return Type::error();
  auto tile = b.need(0, TypeKind::kTile, "a tile");
  auto dst = remote ? b.need(1, TypeKind::kWindow, "a window") : b.destination(1);
  bool ok = tile && dst;
  if (remote && !b.peer(2)) ok = false;
  if (remote && args.size() == 5 && !b.symbol(*args[4], {"set", "add"}, "the store operation"))
    ok = false;
  if (!ok) return Type::error();
  if (!b.dtype_match(args[0]->span, tile->dtype, dst->dtype,
                     "the tile and " + Checker::describe(*args[1]) + " have different dtypes"))
    return Type::error();
  std::vector<int64_t> extents;
  if (!b.padded(*tile, dst->shape.size(), args[0]->span, Checker::describe(*args[1]), extents))
    return Type::error();
  b.region(*args[remote ? 3 : 2], *dst, extents, "the offsets", Checker::describe(*args[1]));
  return Type::of(TypeKind::kVoid);
}

// add, sub, mul, div, max, min: tile op tile (equal shapes or a row/column
// broadcast) or tile op scalar; max and min also take two scalars (`fold`
// computes the result of two integer constants).
Type check_elementwise(BuiltinCall& b, int64_t (*fold)(int64_t, int64_t)) {
  auto& args = b.args;
  const std::string& name = b.name;
  if (!b.arity(2, 2)) return Type::error();
  const Type x = b.value(0);
  const Type y = b.value(1);
  if (x.is_error() || y.is_error()) return Type::error();
  if (x.is_scalar() && y.is_scalar() && fold) {
    if (x.kind == TypeKind::kInt && y.kind == TypeKind::kInt && args[0]->const_value &&
        args[1]->const_value) {
      b.e.const_value = fold(*args[0]->const_value, *args[1]->const_value);
    }
    return Type::of(x.kind == TypeKind::kInt && y.kind == TypeKind::kInt ? TypeKind::kInt
                                                                         : TypeKind::kFloat);
  }
  if (b.here != kInAiv) {
    b.error(b.e.name_span, "'" + name + "' on tiles is only available in aiv (vector) kernels; " +
                               "'" + b.f.name + "' is " + context_name(b.f));
    return Type::error();
  }
  if (x.kind != TypeKind::kTile) {
    b.error(args[0]->span, "the first argument of '" + name + "' must be a tile, not " +
                               to_string(x) +
                               (y.kind == TypeKind::kTile ? "; put the tile first" : ""));
    return Type::error();
  }
  if (y.is_scalar()) return x;
  if (y.kind != TypeKind::kTile) {
    b.error(args[1]->span, "the second argument of '" + name +
                               "' must be a tile or a scalar, "
                               "not " +
                               to_string(y));
    return Type::error();
  }
  if (!b.dtype_match(b.e.span, x.dtype, y.dtype, "'" + name + "' of tiles with different dtypes"))
    return Type::error();
  const bool same = x.shape == y.shape;
  const bool row_bcast = y.shape[0] == x.shape[0] && y.shape[1] == 1;
  const bool col_bcast = y.shape[0] == 1 && y.shape[1] == x.shape[1];
  if (!same && !row_bcast && !col_bcast) {
    b.error(b.e.span, "'" + name + "' of " + with_article(to_string(x)) + " and " +
                          with_article(to_string(y)) +
                          ": shapes must be equal, or the second [rows, 1] or [1, cols]");
    return Type::error();
  }
  return x;
}

// exp, sqrt, neg (same tile back) and row_sum, row_max (one column back).
Type check_unary(BuiltinCall& b, bool needs_float, bool row_reduction) {
  if (!b.arity(1, 1)) return Type::error();
  auto a = b.need(0, TypeKind::kTile, "a tile");
  if (!a) return Type::error();
  if (needs_float && !is_float_dtype(a->dtype)) {
    b.error(b.args[0]->span, "'" + b.name + "' needs a floating-point tile, not " +
                                 with_article(to_string(*a)) + "; cast it first");
    return Type::error();
  }
  if (row_reduction) return Type::tile(a->dtype, a->shape[0], 1);
  return *a;
}

Type check_cast(BuiltinCall& b) {
  if (!b.arity(2, 2)) return Type::error();
  auto a = b.need(0, TypeKind::kTile, "a tile");
  auto d = b.need(1, TypeKind::kDType, "a dtype, e.g. f16");
  if (!a || !d) return Type::error();
  Type t = Type::tile(d->dtype, a->shape[0], a->shape[1]);
  b.c.check_tile_fits_core(b.e.span, t);
  return t;
}

Type check_matmul(BuiltinCall& b) {
  auto& args = b.args;
  if (!b.arity(2, 3)) return Type::error();
  auto x = b.need(0, TypeKind::kTile, "a tile");
  auto y = b.need(1, TypeKind::kTile, "a tile");
  std::optional<Type> acc;
  if (args.size() == 3) acc = b.need(2, TypeKind::kTile, "a tile (the accumulator)");
  if (!x || !y || (args.size() == 3 && !acc)) return Type::error();
  if (x->shape[1] != y->shape[0]) {
    b.error(b.e.span, "matmul of " + with_article(to_string(*x)) + " and " +
                          with_article(to_string(*y)) + ": the columns of the first (" +
                          std::to_string(x->shape[1]) + ") must equal the rows of the second (" +
                          std::to_string(y->shape[0]) + ")");
    return Type::error();
  }
  if (!b.dtype_match(b.e.span, x->dtype, y->dtype, "matmul operands with different dtypes"))
    return Type::error();
  const DType out = x->dtype == DType::kI8 ? DType::kI32 : DType::kF32;
  const Type result = Type::tile(out, x->shape[0], y->shape[1]);
  if (acc && !(*acc == result)) {
    b.error(args[2]->span, "the accumulator must be " + with_article(to_string(result)) +
                               ", not " + with_article(to_string(*acc)));
    return Type::error();
  }
  const BufferLimits& limits = b.c.limits();
  b.c.check_tile_fits(args[0]->span, *x, "L0A", limits.l0a);
  b.c.check_tile_fits(args[1]->span, *y, "L0B", limits.l0b);
  b.c.check_tile_fits(b.e.span, result, "L0C", limits.l0c);
  return result;
}

// full(type, value) and zeros(type).
Type check_fill(BuiltinCall& b, bool full) {
  auto& args = b.args;
  if (!b.arity(full ? 2 : 1, full ? 2 : 1)) return Type::error();
  auto t = b.need(0, TypeKind::kTypeLit, "a type, e.g. f32[16, 64]");
  bool ok = t.has_value();
  if (full && !b.value(1).is_scalar()) {
    if (!args[1]->type.is_error())
      b.error(args[1]->span, "the fill value must be a scalar, not " + to_string(args[1]->type));
    ok = false;
  }
  if (!ok) return Type::error();
  if (t->shape.size() > 2) {
    b.error(args[0]->span,
            "a tile has 1 or 2 dimensions, not " + std::to_string(t->shape.size()));
    return Type::error();
  }
  std::optional<Type> tile = b.c.tile_of_region(args[0]->span, t->dtype, t->shape);
  if (!tile) return Type::error();
  b.c.check_tile_fits_core(b.e.span, *tile);
  return *tile;
}

// put(src, w, peer, offsets) and get(dst, w, peer, offsets): a whole local
// tensor or window to or from a region of a peer's window.
Type check_copy(BuiltinCall& b, bool is_put) {
  auto& args = b.args;
  if (!b.arity(4, 4)) return Type::error();
  auto local = is_put ? b.source(0) : b.destination(0);
  auto w = b.need(1, TypeKind::kWindow, "a window");
  const bool p = b.peer(2);
  if (!local || !w || !p) return Type::error();
  if (!b.dtype_match(b.e.span, local->dtype, w->dtype,
                     Checker::describe(*args[0]) + " and window " + Checker::describe(*args[1]) +
                         " have different dtypes"))
    return Type::error();
  if (local->shape.size() != w->shape.size()) {
    b.error(args[0]->span, "'" + b.name + "' copies a region of the same rank: " +
                               Checker::describe(*args[0]) + " has " +
                               count(local->shape.size(), "dimension") + ", window " +
                               Checker::describe(*args[1]) + " " +
                               std::to_string(w->shape.size()));
    return Type::error();
  }
  b.region(*args[3], *w, local->shape, "the offsets", "window " + Checker::describe(*args[1]));
  return Type::of(TypeKind::kVoid);
}

Type check_notify(BuiltinCall& b) {
  auto& args = b.args;
  if (!b.arity(5, 5)) return Type::error();
  auto w = b.signal_window(0);
  const bool p = b.peer(1);
  const bool v = b.need(3, TypeKind::kInt, "an integer").has_value();
  const bool op = b.symbol(*args[4], {"set", "add"}, "the notify operation").has_value();
  if (!w) {
    b.value(2);
    return Type::error();
  }
  b.region(*args[2], *w, std::vector<int64_t>(w->shape.size(), 1), "the offsets",
           "window " + Checker::describe(*args[0]));
  return p && v && op ? Type::of(TypeKind::kVoid) : Type::error();
}

Type check_wait(BuiltinCall& b) {
  auto& args = b.args;
  if (!b.arity(4, 4)) return Type::error();
  auto w = b.signal_window(0);
  const bool cmp =
      b.symbol(*args[2], {"eq", "ne", "gt", "ge", "lt", "le"}, "the comparison").has_value();
  const bool v = b.need(3, TypeKind::kInt, "an integer").has_value();
  if (!w) {
    b.value(1);
    return Type::error();
  }
  b.region(*args[1], *w, std::vector<int64_t>(w->shape.size(), 1), "the offsets",
           "window " + Checker::describe(*args[0]));
  return cmp && v ? Type::of(TypeKind::kVoid) : Type::error();
}

Type check_view(BuiltinCall& b) {
  auto& args = b.args;
  if (!b.arity(3, 3)) return Type::error();
  const Type t = b.value(0);
  std::vector<int64_t> shape;
  const bool shape_ok = b.c.check_shape_list(*args[2], "the view shape", shape);
  if (t.is_error() || !shape_ok) return Type::error();
  if (t.kind != TypeKind::kTensor) {
    b.error(args[0]->span, "'view' takes a tensor, but " + Checker::describe(*args[0]) + " is " +
                               with_article(to_string(t)) +
                               (t.kind == TypeKind::kWindow ? "; windows are passed whole" : ""));
    return Type::error();
  }
  if (shape.size() != t.shape.size()) {
    b.error(args[2]->span, "the view shape has " + count(shape.size(), "extent") + ", but " +
                               Checker::describe(*args[0]) + " has " +
                               count(t.shape.size(), "dimension"));
    return Type::error();
  }
  if (!b.region(*args[1], t, shape, "the offsets", Checker::describe(*args[0])))
    return Type::error();
  Type v = t;
  v.shape = shape;
  return v;
}

// tensor(type) and window_buffer(type): a new inout tensor or window.
Type check_allocation(BuiltinCall& b, TypeKind kind) {
  if (!b.arity(1, 1)) return Type::error();
  auto t = b.need(0, TypeKind::kTypeLit, "a type, e.g. f32[64, 64]");
  if (!t) return Type::error();
  Type r = *t;
  r.kind = kind;
  r.dir = Direction::kInOut;
  return r;
}

int64_t max_of(int64_t x, int64_t y) { return std::max(x, y); }
int64_t min_of(int64_t x, int64_t y) { return std::min(x, y); }

// The builtins: name, where each may appear, its signature, and its rule.
constexpr BuiltinInfo kBuiltins[] = {
    {"rank", kInKernel | kInChip, "rank() -> int",
     [](BuiltinCall& b) { return check_rank_or_world(b, false); }},
    {"world", kAnywhere, "world() -> int",
     [](BuiltinCall& b) { return check_rank_or_world(b, true); }},
    {"load", kInKernel, "load(src: tensor|window, offsets: [int...], shape: [const...]) -> tile",
     [](BuiltinCall& b) { return check_load(b, false); }},
    {"store", kInKernel, "store(t: tile, dst: out|inout tensor|window, offsets: [int...])",
     [](BuiltinCall& b) { return check_store(b, false); }},
    {"add", kInAiv, "add(a: tile, b: tile|scalar) -> tile",
     [](BuiltinCall& b) { return check_elementwise(b, nullptr); }},
    {"sub", kInAiv, "sub(a: tile, b: tile|scalar) -> tile",
     [](BuiltinCall& b) { return check_elementwise(b, nullptr); }},
    {"mul", kInAiv, "mul(a: tile, b: tile|scalar) -> tile",
     [](BuiltinCall& b) { return check_elementwise(b, nullptr); }},
    {"div", kInAiv, "div(a: tile, b: tile|scalar) -> tile",
     [](BuiltinCall& b) { return check_elementwise(b, nullptr); }},
    {"max", kAnywhere, "max(a: tile, b: tile|scalar) -> tile; max(a: int, b: int) -> int",
     [](BuiltinCall& b) { return check_elementwise(b, max_of); }},
    {"min", kAnywhere, "min(a: tile, b: tile|scalar) -> tile; min(a: int, b: int) -> int",
     [](BuiltinCall& b) { return check_elementwise(b, min_of); }},
    {"exp", kInAiv, "exp(a: tile) -> tile",
     [](BuiltinCall& b) { return check_unary(b, true, false); }},
    {"sqrt", kInAiv, "sqrt(a: tile) -> tile",
     [](BuiltinCall& b) { return check_unary(b, true, false); }},
    {"neg", kInAiv, "neg(a: tile) -> tile",
     [](BuiltinCall& b) { return check_unary(b, false, false); }},
    {"cast", kInAiv, "cast(a: tile, dtype) -> tile", check_cast},
    {"row_sum", kInAiv, "row_sum(a: tile[r, c]) -> tile[r, 1]",
     [](BuiltinCall& b) { return check_unary(b, false, true); }},
    {"row_max", kInAiv, "row_max(a: tile[r, c]) -> tile[r, 1]",
     [](BuiltinCall& b) { return check_unary(b, false, true); }},
    {"matmul", kInAic, "matmul(a: tile[m, k], b: tile[k, n] [, acc: tile[m, n]]) -> tile[m, n]",
     check_matmul},
    {"full", kInKernel, "full(type, value: scalar) -> tile",
     [](BuiltinCall& b) { return check_fill(b, true); }},
    {"zeros", kInKernel, "zeros(type) -> tile",
     [](BuiltinCall& b) { return check_fill(b, false); }},
    {"remote_load", kInKernel,
     "remote_load(w: window, peer: int, offsets: [int...], shape: [const...]) -> tile",
     [](BuiltinCall& b) { return check_load(b, true); }},
    {"remote_store", kInKernel,
     "remote_store(t: tile, w: window, peer: int, offsets: [int...] [, set|add])",
     [](BuiltinCall& b) { return check_store(b, true); }},
    {"put", kInKernel, "put(src: tensor|window, w: window, peer: int, offsets: [int...])",
     [](BuiltinCall& b) { return check_copy(b, true); }},
    {"get", kInKernel,
     "get(dst: out|inout tensor|window, w: window, peer: int, "
     "offsets: [int...])",
     [](BuiltinCall& b) { return check_copy(b, false); }},
    {"notify", kInKernel,
     "notify(w: i32 window, peer: int, offsets: [int...], value: int, set|add)", check_notify},
    {"wait", kInKernel, "wait(w: i32 window, offsets: [int...], eq|ne|gt|ge|lt|le, value: int)",
     check_wait},
    {"view", kAnywhere, "view(t: tensor, offsets: [int...], shape: [const...]) -> tensor",
     check_view},
    {"tensor", kInChip | kInHost, "tensor(type) -> inout tensor",
     [](BuiltinCall& b) { return check_allocation(b, TypeKind::kTensor); }},
    {"window_buffer", kInHost, "window_buffer(type) -> window",
     [](BuiltinCall& b) { return check_allocation(b, TypeKind::kWindow); }},
};

constexpr bool every_builtin_has_a_rule() {
  for (const BuiltinInfo& b : kBuiltins)
    if (b.check == nullptr) return false;
  return true;
}
static_assert(every_builtin_has_a_rule(), "a builtin of the table has no rule");

}  // namespace

const BuiltinInfo* find_builtin(const std::string& name) {
  for (const BuiltinInfo& b : kBuiltins)
    if (name == b.name) return &b;
  return nullptr;
}

// ---------------------------------------------------------------- shared helpers

bool Checker::check_offsets(Expr& list, size_t rank, const std::string& what,
                            std::vector<std::optional<int64_t>>& values) {
  if (list.kind != ExprKind::kList) {
    check_expr(list);
    error(list.span, what + " must be a list of " + std::to_string(rank) + " integer" +
                         (rank == 1 ? "" : "s") + ", e.g. [0, 0]");
    return false;
  }
  bool ok = true;
  for (ExprPtr& a : list.args) {
    const Type t = check_expr(*a);
    if (t.is_error()) {
      ok = false;
    } else if (t.kind != TypeKind::kInt) {
      error(a->span, "an offset must be an integer, not " + to_string(t));
      ok = false;
    } else if (a->const_value && *a->const_value < 0) {
      error(a->span, "an offset cannot be negative (" + std::to_string(*a->const_value) + ")");
      ok = false;
    }
    values.push_back(a->const_value);
  }
  list.type = Type::of(TypeKind::kList);
  if (ok && list.args.size() != rank) {
    error(list.span, "expected " + count(rank, "offset") + " (one per dimension), got " +
                         std::to_string(list.args.size()));
    return false;
  }
  return ok;
}

bool Checker::check_shape_list(Expr& list, const std::string& what, std::vector<int64_t>& shape) {
  if (list.kind != ExprKind::kList || list.args.empty()) {
    check_expr(list);
    error(list.span, what + " must be a non-empty list of compile-time extents, e.g. [16, 64]");
    return false;
  }
  bool ok = true;
  for (ExprPtr& a : list.args) {
    std::optional<int64_t> v = positive_constant(*a, "an extent of " + what);
    if (!v) ok = false;
    shape.push_back(v.value_or(1));
  }
  list.type = Type::of(TypeKind::kList);
  return ok;
}

bool Checker::check_region(Span span, const std::string& name, const std::vector<int64_t>& shape,
                           const std::vector<std::optional<int64_t>>& offsets,
                           const std::vector<int64_t>& extents) {
  for (size_t d = 0; d < shape.size() && d < offsets.size() && d < extents.size(); ++d) {
    const int64_t off = offsets[d].value_or(0);
    int64_t end = 0;
    if (__builtin_add_overflow(off, extents[d], &end) || end > shape[d]) {
      const std::string range = offsets[d] && end >= off
                                    ? "[" + std::to_string(off) + ", " + std::to_string(end) + ")"
                                    : "of extent " + std::to_string(extents[d]);
      error(span, "the region " + range + " of dimension " + std::to_string(d) + " exceeds " +
                      name + ", whose extent there is " + std::to_string(shape[d]));
      return false;
    }
  }
  return true;
}

std::optional<Type> Checker::tile_of_region(Span span, DType dtype,
                                            const std::vector<int64_t>& extents) {
  for (size_t d = 0; d + 2 < extents.size(); ++d) {
    if (extents[d] != 1) {
      error(span, "a tile is 2-D: every extent before the last two must be 1 (extent " +
                      std::to_string(d) + " is " + std::to_string(extents[d]) + ")");
      return std::nullopt;
    }
  }
  if (extents.empty()) return std::nullopt;
  const int64_t cols = extents.back();
  const int64_t rows = extents.size() >= 2 ? extents[extents.size() - 2] : 1;
  return Type::tile(dtype, rows, cols);
}

void Checker::check_tile_fits(Span span, const Type& tile, const char* buffer, int64_t limit) {
  const int64_t bytes = tile.bytes();
  if (bytes <= limit) return;
  error(span, "this " + to_string(tile) + " needs " + std::to_string(bytes) + " bytes, but " +
                  buffer + " of " + limits_.arch + " holds " + std::to_string(limit / 1024) +
                  " KiB; split it into smaller tiles");
}

void Checker::check_tile_fits_core(Span span, const Type& tile) {
  if (!fn_ || fn_->kind != FuncKind::kKernel) return;
  if (fn_->core == CoreType::kAiv)
    check_tile_fits(span, tile, "the Unified Buffer (UB)", limits_.ub);
  else
    check_tile_fits(span, tile, "L1", limits_.l1);
}

// ---------------------------------------------------------------- the builtins

Type Checker::check_builtin(Expr& e, const BuiltinInfo& info) {
  const Function& f = *fn_;
  const unsigned here = f.kind == FuncKind::kChip   ? kInChip
                        : f.kind == FuncKind::kHost ? kInHost
                        : f.core == CoreType::kAic  ? kInAic
                                                    : kInAiv;
  // Context first: an operation in the wrong kind of function is the whole story.
  if (!(info.contexts & here)) {
    error(e.name_span, "'" + std::string(info.name) + "' is not available in " + context_name(f) +
                           " '" + f.name + "'; it is for " + where_allowed(info.contexts));
    for (ExprPtr& a : e.args)
      if (a && a->kind != ExprKind::kName) check_expr(*a);
    return Type::error();
  }
  for (const ExprPtr& a : e.args)
    if (!a) return Type::error();
  BuiltinCall call(*this, e, info, here);
  return info.check(call);
}

}  // namespace pypto::compiler
