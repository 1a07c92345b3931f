// PTO IR: the tile-level instruction list of one kernel unit, the form behind
// a ptoas/<unit>.pto listing (docs/pto-format.md). Registers are typed,
// mutable variables of the unit (a tile `f32[16, 64]` or a scalar `i64`,
// `f32`, `bool`); parameters are tensors, windows and scalars; control flow
// is structured (`for`, `if`/`else`). lower_kernel builds it from a checked
// kernel, pto_printer prints it, pto_parser reads it back (checking it), and
// pto_emit_cpp turns it into the C++ body of the kernel.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"
#include "compiler/frontend/types.h"
#include "pypto/dtype.h"

namespace pypto::compiler::pto {

// The type of a register.
struct RegType {
  enum Kind { kTile, kInt, kFloat, kBool } kind = kInt;
  DType dtype = DType::kF32;  // kTile
  int64_t rows = 0, cols = 0;  // kTile

  static RegType tile(DType dtype, int64_t rows, int64_t cols) {
    return RegType{kTile, dtype, rows, cols};
  }
  static RegType scalar(Kind kind) { return RegType{kind, DType::kF32, 0, 0}; }
  bool is_tile() const { return kind == kTile; }
  bool is_scalar() const { return kind == kInt || kind == kFloat; }
  bool operator==(const RegType&) const = default;
};
// "f32[16, 64]", "i64", "f32", "bool"
std::string to_string(const RegType& type);

struct Register {
  std::string name;  // without '%'
  RegType type;
  // A copy the loop passes made of register `shares` for one unrolled trip or
  // unswitched loop (pto_loop_passes.h): the two are never live at once, so a
  // tile copy shares the original's buffer. -1 for the unit's own registers.
  int shares = -1;
};

enum class ParamKind { kTensor, kWindow, kScalar };

struct Param {
  std::string name;
  ParamKind kind = ParamKind::kTensor;
  Direction dir = Direction::kIn;  // kTensor
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // kTensor, kWindow
  Span span;
};

struct Operand {
  enum Kind {
    kReg,     // %name
    kInt,     // 42, -1
    kFloat,   // 0.5, 1e-3
    kParam,   // a parameter by name: a scalar's value, or a whole tensor/window (put, get)
    kRegion,  // name[off, ...]: a tensor or window region at offsets
    kOption,  // add set eq ne gt ge lt le
  } kind = kInt;
  int reg = -1;  // kReg
  int64_t int_value = 0;
  double float_value = 0.0;
  int param = -1;              // kParam, kRegion
  std::string option;          // kOption
  std::vector<Operand> index;  // kRegion: one offset per dimension (kReg, kInt or kParam)
  Span span;                   // in the .pto text (parsed listings only)

  static Operand of_reg(int r) {
    Operand o;
    o.kind = kReg;
    o.reg = r;
    return o;
  }
  static Operand of_int(int64_t v) {
    Operand o;
    o.kind = kInt;
    o.int_value = v;
    return o;
  }
  static Operand of_float(double v) {
    Operand o;
    o.kind = kFloat;
    o.float_value = v;
    return o;
  }
  static Operand of_param(int p) {
    Operand o;
    o.kind = kParam;
    o.param = p;
    return o;
  }
  static Operand of_option(std::string name) {
    Operand o;
    o.kind = kOption;
    o.option = std::move(name);
    return o;
  }
};

enum class Opcode {
  // scalars
  kMov, kAdd, kSub, kMul, kDiv, kRem, kMin, kMax, kNeg, kNot, kAnd, kOr,
  kEq, kNe, kLt, kLe, kGt, kGe, kItof, kRank, kWorld,
  // tiles
  kTLoad, kTStore, kTMov, kTAdd, kTSub, kTMul, kTDiv, kTMax, kTMin, kTExp, kTSqrt, kTNeg,
  kTCvt, kTRowSum, kTRowMax, kTMatmul, kTFull,
  // communication
  kTRemoteLoad, kTRemoteStore, kPut, kGet, kNotify, kWait,
  // structured control flow
  kFor, kIf,
};
const char* opcode_name(Opcode op);
std::optional<Opcode> opcode_from_name(const std::string& name);

struct Inst {
  Opcode op = Opcode::kMov;
  int dst = -1;  // the defined register (kFor: the loop variable), else -1
  std::vector<Operand> args;  // kFor: lo, hi, step; kIf: the condition
  std::vector<Inst> body;     // kFor, kIf (then)
  std::vector<Inst> else_body;
  bool has_else = false;
  Span span;  // the instruction (parsed listings), else invalid
  int line = 0;  // 1-based .pto line (parsed listings), else 0
  // The line of the unit's program source (.source) this came from, set by the last
  // `.loc N` before it; 0 when unknown.
  int source_line = 0;
};

struct Unit {
  std::string name;
  CoreType core = CoreType::kAiv;
  std::string source;  // .source: the program file the unit was lowered from, or ""
  std::vector<Param> params;
  std::vector<Register> regs;
  std::vector<Inst> body;

  int find_param(const std::string& name) const;
  int find_reg(const std::string& name) const;
};

// f(reg) for each register `inst` reads: its operands and their region
// offsets, not the instructions nested in it.
template <class F>
void for_each_read(const Inst& inst, F&& f) {
  for (const Operand& o : inst.args) {
    if (o.kind == Operand::kReg) f(o.reg);
    for (const Operand& x : o.index)
      if (x.kind == Operand::kReg) f(x.reg);
  }
}

// Adds how often each register occurs (read or defined) in `body`, nested
// instructions included.
void count_registers(const std::vector<Inst>& body, std::map<int, int>& occurrences);

// A scalar instruction whose only effect is its destination register and that
// cannot fail at run time (an integer div/rem only by a constant other than 0
// and -1): code may move it past tile instructions that do not read its
// destination (the emitter's fused groups and direct copies).
bool pure_scalar(const Inst& inst, const Unit& unit);

// Dtypes the emitter handles in tiles, tensors and windows: f32, f16, bf16,
// i8, i16, i32, i64, u8 (bool is not supported yet). f16 and bf16 tiles are
// only moved, converted (tcvt) and multiplied (tmatmul).
bool supported_dtype(DType dtype);
bool half_dtype(DType dtype);  // f16, bf16

}  // namespace pypto::compiler::pto
