// The builtin operations: their table (where each may appear, its signature)
// and the checks of a call to each.
#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "compiler/check/checker_impl.h"

namespace pypto::compiler {

namespace {

constexpr BuiltinInfo kBuiltins[] = {
    {"rank", kInKernel | kInChip, "rank() -> int"},
    {"world", kAnywhere, "world() -> int"},
    {"load", kInKernel, "load(src: tensor|window, offsets: [int...], shape: [const...]) -> tile"},
    {"store", kInKernel, "store(t: tile, dst: out|inout tensor|window, offsets: [int...])"},
    {"add", kInAiv, "add(a: tile, b: tile|scalar) -> tile"},
    {"sub", kInAiv, "sub(a: tile, b: tile|scalar) -> tile"},
    {"mul", kInAiv, "mul(a: tile, b: tile|scalar) -> tile"},
    {"div", kInAiv, "div(a: tile, b: tile|scalar) -> tile"},
    {"max", kAnywhere, "max(a: tile, b: tile|scalar) -> tile; max(a: int, b: int) -> int"},
    {"min", kAnywhere, "min(a: tile, b: tile|scalar) -> tile; min(a: int, b: int) -> int"},
    {"exp", kInAiv, "exp(a: tile) -> tile"},
    {"sqrt", kInAiv, "sqrt(a: tile) -> tile"},
    {"neg", kInAiv, "neg(a: tile) -> tile"},
    {"cast", kInAiv, "cast(a: tile, dtype) -> tile"},
    {"row_sum", kInAiv, "row_sum(a: tile[r, c]) -> tile[r, 1]"},
    {"row_max", kInAiv, "row_max(a: tile[r, c]) -> tile[r, 1]"},
    {"matmul", kInAic, "matmul(a: tile[m, k], b: tile[k, n] [, acc: tile[m, n]]) -> tile[m, n]"},
    {"full", kInKernel, "full(type, value: scalar) -> tile"},
    {"zeros", kInKernel, "zeros(type) -> tile"},
    {"remote_load", kInKernel,
     "remote_load(w: window, peer: int, offsets: [int...], shape: [const...]) -> tile"},
    {"remote_store", kInKernel,
     "remote_store(t: tile, w: window, peer: int, offsets: [int...] [, set|add])"},
    {"put", kInKernel, "put(src: tensor|window, w: window, peer: int, offsets: [int...])"},
    {"get", kInKernel,
     "get(dst: out|inout tensor|window, w: window, peer: int, "
     "offsets: [int...])"},
    {"notify", kInKernel,
     "notify(w: i32 window, peer: int, offsets: [int...], value: int, set|add)"},
    {"wait", kInKernel, "wait(w: i32 window, offsets: [int...], eq|ne|gt|ge|lt|le, value: int)"},
    {"view", kAnywhere, "view(t: tensor, offsets: [int...], shape: [const...]) -> tensor"},
    {"tensor", kInChip | kInHost, "tensor(type) -> inout tensor"},
    {"window_buffer", kInHost, "window_buffer(type) -> window"},
};

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
  const std::string name = info.name;
  auto& args = e.args;
  // Arguments read as option names (add, ge, ...) are not looked up as variables.
  auto symbol = [&](Expr& a, std::initializer_list<const char*> allowed,
                    const char* what) -> std::optional<std::string> {
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
  };
  auto arity = [&](size_t lo, size_t hi) {
    if (args.size() >= lo && args.size() <= hi) return true;
    const std::string n =
        lo == hi ? std::to_string(lo) : std::to_string(lo) + " or " + std::to_string(hi);
    error(e.span, "'" + name + "' takes " + n + " argument" + (hi == 1 ? "" : "s") + ", but " +
                      std::to_string(args.size()) + " " + (args.size() == 1 ? "was" : "were") +
                      " given; " + info.signature);
    return false;
  };
  auto value = [&](size_t i) -> Type { return check_expr(*args[i]); };
  auto need = [&](size_t i, TypeKind kind, const char* what) -> std::optional<Type> {
    const Type t = value(i);
    if (t.is_error()) return std::nullopt;
    if (t.kind != kind) {
      error(args[i]->span, "argument " + std::to_string(i + 1) + " of '" + name + "' must be " +
                               what + ", but " + describe(*args[i]) + " is " +
                               with_article(to_string(t)));
      return std::nullopt;
    }
    return t;
  };
  // A readable tensor or window (the local copy).
  auto source = [&](size_t i) -> std::optional<Type> {
    const Type t = value(i);
    if (t.is_error()) return std::nullopt;
    if (t.kind != TypeKind::kTensor && t.kind != TypeKind::kWindow) {
      error(args[i]->span, "'" + name + "' reads a tensor or a window, but " + describe(*args[i]) +
                               " is " + with_article(to_string(t)));
      return std::nullopt;
    }
    if (t.kind == TypeKind::kTensor && t.dir == Direction::kOut) {
      error(args[i]->span, "cannot read 'out' tensor " + describe(*args[i]) +
                               "; declare it 'inout' to read and write it");
      return std::nullopt;
    }
    return t;
  };
  auto destination = [&](size_t i) -> std::optional<Type> {
    const Type t = value(i);
    if (t.is_error()) return std::nullopt;
    if (t.kind != TypeKind::kTensor && t.kind != TypeKind::kWindow) {
      error(args[i]->span, "'" + name + "' writes a tensor or a window, but " + describe(*args[i]) +
                               " is " + with_article(to_string(t)));
      return std::nullopt;
    }
    if (t.kind == TypeKind::kTensor && t.dir == Direction::kIn) {
      error(args[i]->span,
            "cannot write 'in' tensor " + describe(*args[i]) + "; declare it 'out' or 'inout'");
      return std::nullopt;
    }
    return t;
  };
  auto peer = [&](size_t i) { return need(i, TypeKind::kInt, "a rank (int)").has_value(); };
  auto signal_window = [&](size_t i) -> std::optional<Type> {
    auto w = need(i, TypeKind::kWindow, "a window");
    if (w && w->dtype != DType::kI32) {
      error(args[i]->span, "'" + name + "' works on i32 signal cells, but window " +
                               describe(*args[i]) + " holds " + dtype_name(w->dtype));
      return std::nullopt;
    }
    return w;
  };
  // offsets into `t` of a region of `extents`; bounds-checked where known.
  auto region = [&](Expr& offsets, const Type& t, const std::vector<int64_t>& extents,
                    const std::string& what, const std::string& of) {
    std::vector<std::optional<int64_t>> off;
    if (!check_offsets(offsets, t.shape.size(), what, off)) return false;
    return check_region(offsets.span, of, t.shape, off, extents);
  };
  // A tile's extents padded with leading 1s to `rank`; false when it has more dims than that.
  auto padded = [&](const Type& tile, size_t rank, Span span, const std::string& of,
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
  };
  auto dtype_match = [&](Span span, DType a, DType b, const std::string& what) {
    if (a == b) return true;
    error(span, what + ": " + dtype_name(a) + " vs " + dtype_name(b) + "; convert with cast(...)");
    return false;
  };

  // Context first: an operation in the wrong kind of function is the whole story.
  if (!(info.contexts & here)) {
    error(e.name_span, "'" + name + "' is not available in " + context_name(f) + " '" + f.name +
                           "'; it is for " + where_allowed(info.contexts));
    for (ExprPtr& a : args)
      if (a && a->kind != ExprKind::kName) check_expr(*a);
    return Type::error();
  }
  for (const ExprPtr& a : args)
    if (!a) return Type::error();

  if (name == "rank" || name == "world") {
    if (!arity(0, 0)) return Type::error();
    if (name == "world") e.const_value = world_;
    // rank() in a chip function or kernel is a run-time value: the same code runs on every rank.
    return Type::of(TypeKind::kInt);
  }
  if (name == "load" || name == "remote_load") {
    const bool remote = name == "remote_load";
    if (!arity(remote ? 4 : 3, remote ? 4 : 3)) return Type::error();
    auto src = remote ? need(0, TypeKind::kWindow, "a window") : source(0);
    if (remote && !peer(1)) src.reset();
    std::vector<int64_t> shape;
    const bool shape_ok = check_shape_list(*args[remote ? 3 : 2], "the tile shape", shape);
    if (!src || !shape_ok) return Type::error();
    if (shape.size() != src->shape.size()) {
      error(args[remote ? 3 : 2]->span, "the tile shape has " + count(shape.size(), "extent") +
                                            ", but " + describe(*args[0]) + " has " +
                                            count(src->shape.size(), "dimension"));
      return Type::error();
    }
    if (!region(*args[remote ? 2 : 1], *src, shape, "the offsets", describe(*args[0])))
      return Type::error();
    std::optional<Type> tile = tile_of_region(args[remote ? 3 : 2]->span, src->dtype, shape);
    if (!tile) return Type::error();
    check_tile_fits_core(e.span, *tile);
    return *tile;
  }
  if (name == "store" || name == "remote_store") {
    const bool remote = name == "remote_store";
    if (!arity(remote ? 4 : 3, remote ? 5 : 3)) return Type::error();
    auto tile = need(0, TypeKind::kTile, "a tile");
    auto dst = remote ? need(1, TypeKind::kWindow, "a window") : destination(1);
    bool ok = tile && dst;
    if (remote && !peer(2)) ok = false;
    if (remote && args.size() == 5 && !symbol(*args[4], {"set", "add"}, "the store operation"))
      ok = false;
    if (!ok) return Type::error();
    if (!dtype_match(args[0]->span, tile->dtype, dst->dtype,
                     "the tile and " + describe(*args[1]) + " have different dtypes"))
      return Type::error();
    std::vector<int64_t> extents;
    if (!padded(*tile, dst->shape.size(), args[0]->span, describe(*args[1]), extents))
      return Type::error();
    region(*args[remote ? 3 : 2], *dst, extents, "the offsets", describe(*args[1]));
    return Type::of(TypeKind::kVoid);
  }
  if (name == "add" || name == "sub" || name == "mul" || name == "div" || name == "max" ||
      name == "min") {
    if (!arity(2, 2)) return Type::error();
    const Type a = value(0);
    const Type b = value(1);
    if (a.is_error() || b.is_error()) return Type::error();
    if (a.is_scalar() && b.is_scalar() && (name == "max" || name == "min")) {
      if (a.kind == TypeKind::kInt && b.kind == TypeKind::kInt && args[0]->const_value &&
          args[1]->const_value) {
        e.const_value = name == "max" ? std::max(*args[0]->const_value, *args[1]->const_value)
                                      : std::min(*args[0]->const_value, *args[1]->const_value);
      }
      return Type::of(a.kind == TypeKind::kInt && b.kind == TypeKind::kInt ? TypeKind::kInt
                                                                           : TypeKind::kFloat);
    }
    if (here != kInAiv) {
      error(e.name_span, "'" + name + "' on tiles is only available in aiv (vector) kernels; " +
                             "'" + f.name + "' is " + context_name(f));
      return Type::error();
    }
    if (a.kind != TypeKind::kTile) {
      error(args[0]->span, "the first argument of '" + name + "' must be a tile, not " +
                               to_string(a) +
                               (b.kind == TypeKind::kTile ? "; put the tile first" : ""));
      return Type::error();
    }
    if (b.is_scalar()) return a;
    if (b.kind != TypeKind::kTile) {
      error(args[1]->span, "the second argument of '" + name +
                               "' must be a tile or a scalar, "
                               "not " +
                               to_string(b));
      return Type::error();
    }
    if (!dtype_match(e.span, a.dtype, b.dtype, "'" + name + "' of tiles with different dtypes"))
      return Type::error();
    const bool same = a.shape == b.shape;
    const bool row_bcast = b.shape[0] == a.shape[0] && b.shape[1] == 1;
    const bool col_bcast = b.shape[0] == 1 && b.shape[1] == a.shape[1];
    if (!same && !row_bcast && !col_bcast) {
      error(e.span, "'" + name + "' of " + with_article(to_string(a)) + " and " +
                        with_article(to_string(b)) +
                        ": shapes must be equal, or the second [rows, 1] or [1, cols]");
      return Type::error();
    }
    return a;
  }
  if (name == "exp" || name == "sqrt" || name == "neg" || name == "row_sum" || name == "row_max") {
    if (!arity(1, 1)) return Type::error();
    auto a = need(0, TypeKind::kTile, "a tile");
    if (!a) return Type::error();
    if (name != "neg" && !is_float_dtype(a->dtype) && name != "row_sum" && name != "row_max") {
      error(args[0]->span, "'" + name + "' needs a floating-point tile, not " +
                               with_article(to_string(*a)) + "; cast it first");
      return Type::error();
    }
    if (name == "row_sum" || name == "row_max") return Type::tile(a->dtype, a->shape[0], 1);
    return *a;
  }
  if (name == "cast") {
    if (!arity(2, 2)) return Type::error();
    auto a = need(0, TypeKind::kTile, "a tile");
    auto d = need(1, TypeKind::kDType, "a dtype, e.g. f16");
    if (!a || !d) return Type::error();
    Type t = Type::tile(d->dtype, a->shape[0], a->shape[1]);
    check_tile_fits_core(e.span, t);
    return t;
  }
  if (name == "matmul") {
    if (!arity(2, 3)) return Type::error();
    auto a = need(0, TypeKind::kTile, "a tile");
    auto b = need(1, TypeKind::kTile, "a tile");
    std::optional<Type> acc;
    if (args.size() == 3) acc = need(2, TypeKind::kTile, "a tile (the accumulator)");
    if (!a || !b || (args.size() == 3 && !acc)) return Type::error();
    if (a->shape[1] != b->shape[0]) {
      error(e.span, "matmul of " + with_article(to_string(*a)) + " and " +
                        with_article(to_string(*b)) + ": the columns of the first (" +
                        std::to_string(a->shape[1]) + ") must equal the rows of the second (" +
                        std::to_string(b->shape[0]) + ")");
      return Type::error();
    }
    if (!dtype_match(e.span, a->dtype, b->dtype, "matmul operands with different dtypes"))
      return Type::error();
    const DType out = a->dtype == DType::kI8 ? DType::kI32 : DType::kF32;
    const Type result = Type::tile(out, a->shape[0], b->shape[1]);
    if (acc && !(*acc == result)) {
      error(args[2]->span, "the accumulator must be " + with_article(to_string(result)) + ", not " +
                               with_article(to_string(*acc)));
      return Type::error();
    }
    check_tile_fits(args[0]->span, *a, "L0A", limits_.l0a);
    check_tile_fits(args[1]->span, *b, "L0B", limits_.l0b);
    check_tile_fits(e.span, result, "L0C", limits_.l0c);
    return result;
  }
  if (name == "full" || name == "zeros") {
    const bool full = name == "full";
    if (!arity(full ? 2 : 1, full ? 2 : 1)) return Type::error();
    auto t = need(0, TypeKind::kTypeLit, "a type, e.g. f32[16, 64]");
    bool ok = t.has_value();
    if (full && !value(1).is_scalar()) {
      if (!args[1]->type.is_error())
        error(args[1]->span, "the fill value must be a scalar, not " + to_string(args[1]->type));
      ok = false;
    }
    if (!ok) return Type::error();
    if (t->shape.size() > 2) {
      error(args[0]->span, "a tile has 1 or 2 dimensions, not " + std::to_string(t->shape.size()));
      return Type::error();
    }
    std::optional<Type> tile = tile_of_region(args[0]->span, t->dtype, t->shape);
    if (!tile) return Type::error();
    check_tile_fits_core(e.span, *tile);
    return *tile;
  }
  if (name == "put" || name == "get") {
    if (!arity(4, 4)) return Type::error();
    const bool is_put = name == "put";
    auto local = is_put ? source(0) : destination(0);
    auto w = need(1, TypeKind::kWindow, "a window");
    const bool p = peer(2);
    if (!local || !w || !p) return Type::error();
    if (!dtype_match(
            e.span, local->dtype, w->dtype,
            describe(*args[0]) + " and window " + describe(*args[1]) + " have different dtypes"))
      return Type::error();
    if (local->shape.size() != w->shape.size()) {
      error(args[0]->span, "'" + name +
                               "' copies a region of the same rank: " + describe(*args[0]) +
                               " has " + count(local->shape.size(), "dimension") + ", window " +
                               describe(*args[1]) + " " + std::to_string(w->shape.size()));
      return Type::error();
    }
    region(*args[3], *w, local->shape, "the offsets", "window " + describe(*args[1]));
    return Type::of(TypeKind::kVoid);
  }
  if (name == "notify") {
    if (!arity(5, 5)) return Type::error();
    auto w = signal_window(0);
    const bool p = peer(1);
    const bool v = need(3, TypeKind::kInt, "an integer").has_value();
    const bool op = symbol(*args[4], {"set", "add"}, "the notify operation").has_value();
    if (!w) {
      value(2);
      return Type::error();
    }
    region(*args[2], *w, std::vector<int64_t>(w->shape.size(), 1), "the offsets",
           "window " + describe(*args[0]));
    return p && v && op ? Type::of(TypeKind::kVoid) : Type::error();
  }
  if (name == "wait") {
    if (!arity(4, 4)) return Type::error();
    auto w = signal_window(0);
    const bool cmp =
        symbol(*args[2], {"eq", "ne", "gt", "ge", "lt", "le"}, "the comparison").has_value();
    const bool v = need(3, TypeKind::kInt, "an integer").has_value();
    if (!w) {
      value(1);
      return Type::error();
    }
    region(*args[1], *w, std::vector<int64_t>(w->shape.size(), 1), "the offsets",
           "window " + describe(*args[0]));
    return cmp && v ? Type::of(TypeKind::kVoid) : Type::error();
  }
  if (name == "view") {
    if (!arity(3, 3)) return Type::error();
    const Type t = value(0);
    std::vector<int64_t> shape;
    const bool shape_ok = check_shape_list(*args[2], "the view shape", shape);
    if (t.is_error() || !shape_ok) return Type::error();
    if (t.kind != TypeKind::kTensor) {
      error(args[0]->span, "'view' takes a tensor, but " + describe(*args[0]) + " is " +
                               with_article(to_string(t)) +
                               (t.kind == TypeKind::kWindow ? "; windows are passed whole" : ""));
      return Type::error();
    }
    if (shape.size() != t.shape.size()) {
      error(args[2]->span, "the view shape has " + count(shape.size(), "extent") + ", but " +
                               describe(*args[0]) + " has " + count(t.shape.size(), "dimension"));
      return Type::error();
    }
    if (!region(*args[1], t, shape, "the offsets", describe(*args[0]))) return Type::error();
    Type v = t;
    v.shape = shape;
    return v;
  }
  if (name == "tensor" || name == "window_buffer") {
    if (!arity(1, 1)) return Type::error();
    auto t = need(0, TypeKind::kTypeLit, "a type, e.g. f32[64, 64]");
    if (!t) return Type::error();
    Type r = *t;
    r.kind = name == "tensor" ? TypeKind::kTensor : TypeKind::kWindow;
    r.dir = Direction::kInOut;
    return r;
  }
  // Every name of the builtin table has a rule above; reaching here is a bug.
  error(e.span, "internal error: builtin '" + name + "' has no type rule; please report it");
  return Type::error();
}

}  // namespace pypto::compiler
