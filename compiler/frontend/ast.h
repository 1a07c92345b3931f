// The syntax tree of a .ptl program. The parser builds it; the checker
// annotates every expression with its type (and its value when it is a
// compile-time constant) so that lowering reads a fully typed tree.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/lexer.h"
#include "compiler/frontend/source.h"
#include "compiler/frontend/types.h"

namespace pypto::compiler {

enum class ExprKind {
  kInt,      // 42
  kFloat,    // 0.5
  kBool,     // true
  kName,     // x
  kCall,     // f(a, b)         name = callee, args
  kIndex,    // t[i]            args = {t, i}
  kUnary,    // -x  !x          op, args = {x}
  kBinary,   // a + b           op, args = {a, b}
  kList,     // [a, b]          args
  kTypeLit,  // f32[16, 64]     dtype, args = extents
  kDType,    // f16             dtype
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kInt;
  Span span;
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  std::string name;
  Span name_span;
  Tok op = Tok::kEof;
  DType dtype = DType::kF32;
  std::vector<ExprPtr> args;

  // Filled by the checker.
  Type type;
  std::optional<int64_t> const_value;
  // A compile-time float: a float literal, a float constant, or arithmetic on
  // them (folded in double, as the reference interpreter computes).
  std::optional<double> const_float;
};

enum class StmtKind {
  kLet,     // let name = value
  kConst,   // const name = value      (a local compile-time constant)
  kAssign,  // name = value
  kCall,    // value [on target]       (value is a kCall expression)
  kFor,     // for name in lo .. hi [step step] { body }
  kIf,      // if value { body } else { else_body }
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Stmt {
  StmtKind kind = StmtKind::kCall;
  Span span;
  std::string name;
  Span name_span;
  ExprPtr value;
  ExprPtr on;                 // kCall: the rank of a host dispatch
  ExprPtr lo, hi, step;       // kFor
  std::vector<StmtPtr> body;  // kFor, kIf
  std::vector<StmtPtr> else_body;
};

enum class FuncKind { kKernel, kChip, kHost };
enum class CoreType { kAic, kAiv };
const char* func_kind_name(FuncKind kind);  // "kernel", "chip function", "host function"

enum class ParamKind { kTensor, kWindow, kScalar };

struct Param {
  std::string name;
  Span span;       // the name
  Span type_span;  // the type
  ParamKind kind = ParamKind::kTensor;
  Direction dir = Direction::kIn;
  DType dtype = DType::kF32;
  std::vector<ExprPtr> dims;
  Type type;  // filled by the checker
  // `x: inout f32[R, C] at w` (chip functions): the tensor lives in the first
  // bytes of window parameter `w` during a dispatch (in place); empty if not.
  std::string at;
  Span at_span;  // the window's name after `at`
};

// A shape parameter of a generic function: `f<R, C>(x: in f32[R, C])`.
struct ShapeParam {
  std::string name;
  Span span;
};

struct Function {
  FuncKind kind = FuncKind::kKernel;
  CoreType core = CoreType::kAiv;
  std::string name;
  Span name_span;
  Span span;  // the header, "kernel aiv name(...)"
  // Non-empty: a generic function, checked and generated only through its
  // instances (one per distinct binding of its shape parameters).
  std::vector<ShapeParam> shape_params;
  // An instance of a generic function: "f<R = 4, C = 256>" (else empty).
  std::string instance_of;
  std::vector<Param> params;
  std::vector<StmtPtr> body;
  bool generic() const { return !shape_params.empty(); }
};

struct ConstDecl {
  std::string name;
  Span name_span;
  ExprPtr value;
};

struct Import {
  std::string path;
  Span span;
};

// One parsed file.
struct Module {
  Module() = default;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;
  Module(const Module&) = delete;  // so vector<Module> moves (a deque's move may throw)
  Module& operator=(const Module&) = delete;

  int32_t file = -1;
  std::vector<Import> imports;
  std::vector<ConstDecl> consts;
  // A deque, so that functions added while checking (instances of generic
  // functions) leave references to the others valid.
  std::deque<Function> functions;
};

// A whole program: every module, each after the modules it imports.
struct Program {
  std::vector<Module> modules;
};

// Deep copies, checker annotations included (instances of generic functions,
// window specializations in code generation).
ExprPtr clone(const Expr& expr);
StmtPtr clone(const Stmt& stmt);
Function clone(const Function& function);

// Calls `visit` on an expression and every expression nested in it (parents
// before their arguments), or on every expression of a block; and on every
// name a block's statements declare (let, const, loop variables).
void for_each_expr(Expr& expr, const std::function<void(Expr&)>& visit);
void for_each_expr(std::vector<StmtPtr>& block, const std::function<void(Expr&)>& visit);
void for_each_declared_name(const std::vector<StmtPtr>& block,
                            const std::function<void(const std::string&, Span)>& visit);

// A compact S-expression of an expression or a module, for tests and debugging:
// "(call add (name a) (int 1))".
std::string dump(const Expr& expr);
std::string dump(const Stmt& stmt);
std::string dump(const Module& module);

}  // namespace pypto::compiler
