// Internal to the checker: the Checker class shared by checker.cc (declarations,
// statements, expressions, user calls), host_plan.cc (the dispatch checks) and
// builtins.cc (the builtin operations). Not part of the compiler's interface.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/check/arch_limits.h"
#include "compiler/check/checker.h"
#include "compiler/frontend/ast.h"

namespace pypto::compiler {

// Where a builtin may appear.
enum BuiltinContext : unsigned {
  kInAiv = 1,
  kInAic = 2,
  kInChip = 4,
  kInHost = 8,
  kInKernel = kInAiv | kInAic,
  kAnywhere = kInKernel | kInChip | kInHost,
};

class BuiltinCall;  // builtins.cc: one call being checked, with the shared argument checks

struct BuiltinInfo {
  const char* name;
  unsigned contexts;
  const char* signature;  // for messages and docs/language.md
  // Checks a call in an allowed context (every argument present): its type, or an error.
  Type (*check)(BuiltinCall& call);
};

// nullptr when `name` is not a builtin.
const BuiltinInfo* find_builtin(const std::string& name);

class Checker {
 public:
  Checker(Program& program, const CheckOptions& options, DiagnosticEngine& diags);
  CheckResult run();

  // ---- used by builtins.cc
  Type check_expr(Expr& e);
  Type check_builtin(Expr& call, const BuiltinInfo& info);
  void error(Span span, std::string message) { diags_.error(span, std::move(message)); }
  void note(Span span, std::string message) { diags_.note(span, std::move(message)); }

 private:
  struct Var {
    Type type;
    enum Kind { kParam, kLet, kLoop, kConst } kind = kLet;
    std::optional<int64_t> value;  // compile-time value (consts)
    Span span;
    std::optional<double> fvalue;  // compile-time value of a float const
  };
  struct HostLoop {
    std::string name;
    int64_t lo = 0, hi = 0, step = 1;
    Span span;
    bool dispatch_checked = false;
  };

  // declarations
  void collect_consts();
  void collect_functions();
  void check_params(Function& f);
  void check_function(Function& f);
  void choose_entry(CheckResult& result);
  void check_recursion();
  bool reserved_name(const std::string& name, Span span, const char* what);

  // statements
  void check_block(std::vector<StmtPtr>& body);
  void check_stmt(Stmt& s);
  void check_for(Stmt& s);
  void check_call_stmt(Stmt& s);
  void check_dispatch_target(Stmt& s, const Function& callee);
  void declare(const std::string& name, Var var);
  const Var* lookup(const std::string& name) const;

  // expressions
  Type check_name(Expr& e);
  Type check_index(Expr& e);
  Type check_unary(Expr& e);
  Type check_binary(Expr& e);
  Type check_call(Expr& e, bool statement, bool dispatched);
  Type check_user_call(Expr& e, Function& callee, bool dispatched);
  void check_argument(Expr& arg, const Param& param, const Function& callee, size_t index);

  // generics.cc: shape parameters, bound per call; one checked instance per binding.
  void check_generic_declaration(Function& f);
  Function* instantiate(Expr& call, Function& generic);
  std::optional<int64_t> shape_factor(Expr& e, const Function& generic, std::string& param);
  std::optional<int64_t> eval_host(const Expr& e, const std::map<std::string, int64_t>& env);

 public:
  // ---- shared helpers for builtins.cc
  // A compile-time integer > 0 (extents), else reports `what` and returns nullopt.
  std::optional<int64_t> positive_constant(Expr& e, const std::string& what);
  // Offsets: a list of ints as long as `rank`. Returns the per-dimension constant values.
  bool check_offsets(Expr& list, size_t rank, const std::string& what,
                     std::vector<std::optional<int64_t>>& values);
  // A shape list of positive constants.
  bool check_shape_list(Expr& list, const std::string& what, std::vector<int64_t>& shape);
  // Region [offset, offset + extent) inside `shape` wherever the offset is known.
  bool check_region(Span span, const std::string& name, const std::vector<int64_t>& shape,
                    const std::vector<std::optional<int64_t>>& offsets,
                    const std::vector<int64_t>& extents);
  // Extents of a region -> tile [rows, cols] (leading extents must be 1).
  std::optional<Type> tile_of_region(Span span, DType dtype, const std::vector<int64_t>& extents);
  // Reports a tile that does not fit in the buffer it will live in.
  void check_tile_fits(Span span, const Type& tile, const char* buffer, int64_t limit);
  void check_tile_fits_core(Span span, const Type& tile);
  const Function* current() const { return fn_; }
  int64_t world() const { return world_; }
  const BufferLimits& limits() const { return limits_; }
  // Name of an expression for messages: "'inp'" or "this argument".
  static std::string describe(const Expr& e);

 private:
  Program& program_;
  CheckOptions options_;
  DiagnosticEngine& diags_;
  const BufferLimits& limits_;
  int64_t world_ = 1;

  std::map<std::string, Var> globals_;
  std::map<std::string, Function*> functions_;
  std::set<std::string> host_windows_;  // window_buffer names bound in host functions
  std::vector<std::map<std::string, Var>> scopes_;
  std::vector<HostLoop> host_loops_;
  std::map<const Function*, std::set<const Function*>> calls_;
  std::map<const Function*, size_t> module_of_;           // generic -> its module
  std::map<std::string, Function*> instances_;            // "f<4,256>" -> instance
  std::set<const Function*> broken_generics_;             // declarations with errors
  int instantiation_depth_ = 0;
  Function* fn_ = nullptr;
};

}  // namespace pypto::compiler
