// Internal to the reference interpreter: the tree walker. One Evaluator runs
// the host function (rank -1: it only builds the dispatch plan) or one rank's
// dispatches (chip functions, whose kernel calls run as tasks in program
// order, and the kernels themselves).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"
#include "compiler/interp/interp_values.h"
#include "compiler/interp/interp_world.h"

namespace pypto::compiler::interp {

// What every evaluator of one run reads and never changes.
struct ProgramInfo {
  std::map<std::string, const Function*> functions;
  std::map<std::string, Value> constants;  // top-level consts, WORLD
  const SourceManager* sources = nullptr;
  int64_t world = 1;
  bool distributed = false;  // L3: messages name the rank

  // "file:line:col" of a span; without sources "file #F, byte B".
  std::string where(Span span) const;
};

// Builds ProgramInfo: the functions by name and the value of every constant.
ProgramInfo describe_program(const Program& program, int64_t world, const SourceManager* sources);

// `f(...) on r` as the host function issued it.
struct Dispatch {
  int64_t rank = 0;
  const Function* chip = nullptr;
  std::vector<Value> args;
};

class Evaluator {
 public:
  // rank < 0: the host function. `world` may be null to evaluate constants only.
  Evaluator(const ProgramInfo& program, World* world, int64_t rank);

  // Runs `f` with its parameters bound to `args` (converted to scalar parameter dtypes).
  void run(const Function& f, const std::vector<Value>& args);

  // One expression, outside any function (a top-level constant).
  Value evaluate(const Expr& e);

  // The host function's dispatches, in host order.
  const std::vector<Dispatch>& dispatches() const { return dispatches_; }

 private:
  using Scope = std::map<std::string, Value>;
  struct Frame {
    const Function* fn = nullptr;
    std::vector<Scope> scopes;
  };

  // statements
  void exec_block(const std::vector<StmtPtr>& body);
  void exec(const Stmt& s);
  void exec_for(const Stmt& s);
  void exec_call(const Stmt& s);
  void call_function(const Expr& call, const Function& callee);
  void declare(const std::string& name, Value v);
  void assign(const Stmt& s, Value v);

  // expressions
  Value eval(const Expr& e);
  Value eval_name(const Expr& e);
  Value eval_index(const Expr& e);
  Value eval_unary(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_builtin(const Expr& call);
  Value eval_builtin_checked(const Expr& call);

  // typed evaluation; a wrong kind is an internal error (the checker prevents it)
  int64_t eval_int(const Expr& e);
  Number eval_number(const Expr& e);
  bool eval_bool(const Expr& e);
  TilePtr eval_tile(const Expr& e);
  TensorRef eval_tensor(const Expr& e);
  WindowRef eval_window(const Expr& e);
  Shape eval_offsets(const Expr& list);
  int64_t eval_peer(const Expr& e);

  // memory: a tensor, or this rank's (or a peer's) copy of a window
  struct Place {
    TensorRef ref;
    bool window = false;
    std::string name;  // for messages
  };
  std::string window_name(const Expr& e, WindowRef w) const;
  Place place(const Expr& e);  // a tensor, or a window's local copy
  Place peer_place(const Expr& window, int64_t peer);
  // Checks that [offsets, offsets + extents) lies inside `shape`.
  void check_region(const Expr& offsets_list, const Shape& offsets, const Shape& extents,
                    const Shape& shape, const std::string& name);
  template <class F>
  void touch(const Place& p, bool writes, F&& f);

  // builtins with effects
  void builtin_store(const Expr& call, bool remote);
  void builtin_put_get(const Expr& call, bool put);
  void builtin_notify(const Expr& call);
  void builtin_wait(const Expr& call);
  TilePtr builtin_load(const Expr& call, bool remote);

  [[noreturn]] void fail(Span span, const std::string& message) const;
  [[noreturn]] void internal(Span span, const std::string& what) const;
  void tick();

  const ProgramInfo& program_;
  World* world_;
  int64_t rank_;
  std::vector<Frame> frames_;
  std::vector<Dispatch> dispatches_;
  uint32_t ticks_ = 0;
};

}  // namespace pypto::compiler::interp
