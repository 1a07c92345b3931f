// The host plan: a host function is evaluated at compile time (its loops
// have constant bounds), so the checker can see every rank a dispatch goes
// to. A dispatch loop must hand every rank its dispatch; any other target
// must be a valid rank for every iteration.
#include <cstdint>
#include <functional>
#include <map>

#include "compiler/check/checker_impl.h"

namespace pypto::compiler {

namespace {
// Beyond this many combinations of loop values a dispatch target is not
// enumerated (it is still checked when it is a plain loop variable).
constexpr int64_t kMaxHostEnumeration = 1 << 16;
}  // namespace

std::optional<int64_t> Checker::eval_host(const Expr& e,
                                          const std::map<std::string, int64_t>& env) {
  if (e.const_value) return e.const_value;
  switch (e.kind) {
    case ExprKind::kName: {
      auto it = env.find(e.name);
      if (it != env.end()) return it->second;
      return std::nullopt;
    }
    case ExprKind::kUnary: {
      if (e.op != Tok::kMinus || e.args.empty() || !e.args[0]) return std::nullopt;
      auto v = eval_host(*e.args[0], env);
      if (!v || *v == INT64_MIN) return std::nullopt;
      return -*v;
    }
    case ExprKind::kBinary: {
      if (e.args.size() != 2 || !e.args[0] || !e.args[1]) return std::nullopt;
      auto a = eval_host(*e.args[0], env);
      auto b = eval_host(*e.args[1], env);
      if (!a || !b) return std::nullopt;
      int64_t r = 0;
      switch (e.op) {
        case Tok::kPlus:
          return __builtin_add_overflow(*a, *b, &r) ? std::nullopt : std::optional(r);
        case Tok::kMinus:
          return __builtin_sub_overflow(*a, *b, &r) ? std::nullopt : std::optional(r);
        case Tok::kStar:
          return __builtin_mul_overflow(*a, *b, &r) ? std::nullopt : std::optional(r);
        case Tok::kSlash:
          if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
          return *a / *b;
        case Tok::kPercent:
          if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
          return *a % *b;
        default:
          return std::nullopt;
      }
    }
    default:
      return std::nullopt;
  }
}

void Checker::check_dispatch_target(Stmt& s, const Function& callee) {
  const Expr& on = *s.on;
  // `on r` for a host loop variable r: that loop must hand every rank its dispatch.
  if (on.kind == ExprKind::kName) {
    for (auto it = host_loops_.rbegin(); it != host_loops_.rend(); ++it) {
      if (it->name != on.name) continue;
      if (it->dispatch_checked) return;
      it->dispatch_checked = true;
      if (it->lo != 0 || it->hi != world_ || it->step != 1) {
        error(it->span, "this loop dispatches '" + callee.name + "' to ranks " +
                            std::to_string(it->lo) + " .. " + std::to_string(it->hi) +
                            (it->step != 1 ? " step " + std::to_string(it->step) : "") +
                            ", but WORLD is " + std::to_string(world_) +
                            "; a dispatch loop must cover 0 .. WORLD");
        note(on.span, "the dispatch target is here");
      }
      return;
    }
  }
  // Otherwise enumerate the enclosing host loops and range-check every target.
  int64_t combos = 1;
  for (const HostLoop& l : host_loops_) {
    const int64_t n = l.hi > l.lo ? (l.hi - l.lo + l.step - 1) / l.step : 0;
    if (__builtin_mul_overflow(combos, n, &combos) || combos > kMaxHostEnumeration) return;
  }
  std::map<std::string, int64_t> env;
  std::function<bool(size_t)> walk = [&](size_t depth) {
    if (depth == host_loops_.size()) {
      std::optional<int64_t> r = eval_host(on, env);
      if (r && (*r < 0 || *r >= world_)) {
        error(on.span, "dispatch of '" + callee.name + "' to rank " + std::to_string(*r) +
                           ", but ranks are 0 .. " + std::to_string(world_ - 1) + " (WORLD is " +
                           std::to_string(world_) + ")");
        return false;
      }
      return true;
    }
    const HostLoop& l = host_loops_[depth];
    for (int64_t v = l.lo; v < l.hi; v += l.step) {
      env[l.name] = v;
      if (!walk(depth + 1)) return false;
      if (v > INT64_MAX - l.step) break;
    }
    return true;
  };
  walk(0);
}

}  // namespace pypto::compiler
