#include "compiler/pto/pto_ir.h"

#include <iterator>

namespace pypto::compiler::pto {

namespace {

struct OpName {
  Opcode op;
  const char* name;
};

constexpr OpName kOpNames[] = {
    {Opcode::kMov, "mov"},
    {Opcode::kAdd, "add"},
    {Opcode::kSub, "sub"},
    {Opcode::kMul, "mul"},
    {Opcode::kDiv, "div"},
    {Opcode::kRem, "rem"},
    {Opcode::kMin, "min"},
    {Opcode::kMax, "max"},
    {Opcode::kNeg, "neg"},
    {Opcode::kNot, "not"},
    {Opcode::kAnd, "and"},
    {Opcode::kOr, "or"},
    {Opcode::kEq, "eq"},
    {Opcode::kNe, "ne"},
    {Opcode::kLt, "lt"},
    {Opcode::kLe, "le"},
    {Opcode::kGt, "gt"},
    {Opcode::kGe, "ge"},
    {Opcode::kItof, "itof"},
    {Opcode::kRank, "rank"},
    {Opcode::kWorld, "world"},
    {Opcode::kTLoad, "tload"},
    {Opcode::kTStore, "tstore"},
    {Opcode::kTMov, "tmov"},
    {Opcode::kTAdd, "tadd"},
    {Opcode::kTSub, "tsub"},
    {Opcode::kTMul, "tmul"},
    {Opcode::kTDiv, "tdiv"},
    {Opcode::kTMax, "tmax"},
    {Opcode::kTMin, "tmin"},
    {Opcode::kTExp, "texp"},
    {Opcode::kTSqrt, "tsqrt"},
    {Opcode::kTNeg, "tneg"},
    {Opcode::kTCvt, "tcvt"},
    {Opcode::kTRowSum, "trow_sum"},
    {Opcode::kTRowMax, "trow_max"},
    {Opcode::kTMatmul, "tmatmul"},
    {Opcode::kTFull, "tfull"},
    {Opcode::kTRemoteLoad, "tremote_load"},
    {Opcode::kTRemoteStore, "tremote_store"},
    {Opcode::kPut, "put"},
    {Opcode::kGet, "get"},
    {Opcode::kNotify, "notify"},
    {Opcode::kWait, "wait"},
    {Opcode::kFor, "for"},
    {Opcode::kIf, "if"},
};

}  // namespace

std::string to_string(const RegType& type) {
  switch (type.kind) {
    case RegType::kTile:
      return std::string(dtype_name(type.dtype)) + "[" + std::to_string(type.rows) + ", " +
             std::to_string(type.cols) + "]";
    case RegType::kInt:
      return "i64";
    case RegType::kFloat:
      return "f32";
    case RegType::kBool:
      return "bool";
  }
  return "?";
}

void count_registers(const std::vector<Inst>& body, std::map<int, int>& occurrences) {
  for (const Inst& inst : body) {
    for_each_read(inst, [&](int r) { ++occurrences[r]; });
    if (inst.dst >= 0) ++occurrences[inst.dst];
    count_registers(inst.body, occurrences);
    count_registers(inst.else_body, occurrences);
  }
}

bool pure_scalar(const Inst& inst, const Unit& unit) {
  switch (inst.op) {
    case Opcode::kMov: case Opcode::kAdd: case Opcode::kSub: case Opcode::kMul:
    case Opcode::kMin: case Opcode::kMax: case Opcode::kNeg: case Opcode::kNot:
    case Opcode::kAnd: case Opcode::kOr: case Opcode::kEq: case Opcode::kNe:
    case Opcode::kLt: case Opcode::kLe: case Opcode::kGt: case Opcode::kGe:
    case Opcode::kItof: case Opcode::kRank: case Opcode::kWorld:
      return true;
    case Opcode::kDiv:
    case Opcode::kRem: {
      if (unit.regs[static_cast<size_t>(inst.dst)].type.kind == RegType::kFloat) return true;
      const Operand& d = inst.args[1];
      return d.kind == Operand::kInt && d.int_value != 0 && d.int_value != -1;
    }
    default:
      return false;
  }
}

const char* opcode_name(Opcode op) {
  for (const OpName& n : kOpNames)
    if (n.op == op) return n.name;
  return "?";
}

std::optional<Opcode> opcode_from_name(const std::string& name) {
  for (const OpName& n : kOpNames)
    if (name == n.name) return n.op;
  return std::nullopt;
}

int Unit::find_param(const std::string& n) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == n) return static_cast<int>(i);
  return -1;
}

int Unit::find_reg(const std::string& n) const {
  for (size_t i = 0; i < regs.size(); ++i)
    if (regs[i].name == n) return static_cast<int>(i);
  return -1;
}

bool half_dtype(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

bool supported_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kI8:
    case DType::kI16:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
      return true;
    default:
      return false;
  }
}

}  // namespace pypto::compiler::pto
