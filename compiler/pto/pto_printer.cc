#include "compiler/pto/pto_printer.h"

#include <charconv>
#include <cmath>

namespace pypto::compiler::pto {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The program-source line last announced by `.loc`, so each is written once.
struct Printer {
  const Unit& unit;
  std::string& out;
  int loc = 0;
};

void print_block(Printer& p, const std::vector<Inst>& body, int depth);

void print_inst(Printer& p, const Inst& inst, int depth) {
  const Unit& unit = p.unit;
  std::string& out = p.out;
  const std::string indent(static_cast<size_t>(2 * depth), ' ');
  if (inst.source_line > 0 && inst.source_line != p.loc) {
    out += indent + ".loc " + std::to_string(inst.source_line) + "\n";
    p.loc = inst.source_line;
  }
  auto reg = [&](int r) { return "%" + unit.regs[static_cast<size_t>(r)].name; };
  auto arg = [&](size_t i) { return print_operand(unit, inst.args[i]); };
  if (inst.op == Opcode::kFor) {
    out += indent + "for " + reg(inst.dst) + " = " + arg(0) + " to " + arg(1) + " step " + arg(2) +
           "\n";
    print_block(p, inst.body, depth + 1);
    out += indent + "end\n";
    return;
  }
  if (inst.op == Opcode::kIf) {
    out += indent + "if " + arg(0) + "\n";
    print_block(p, inst.body, depth + 1);
    if (inst.has_else) {
      out += indent + "else\n";
      print_block(p, inst.else_body, depth + 1);
    }
    out += indent + "end\n";
    return;
  }
  out += indent;
  if (inst.dst >= 0)
    out += reg(inst.dst) + ":" + to_string(unit.regs[static_cast<size_t>(inst.dst)].type) + " = ";
  out += opcode_name(inst.op);
  for (size_t i = 0; i < inst.args.size(); ++i) out += (i ? ", " : " ") + arg(i);
  out += "\n";
}

void print_block(Printer& p, const std::vector<Inst>& body, int depth) {
  for (const Inst& inst : body) print_inst(p, inst, depth);
}

}  // namespace

std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string print_operand(const Unit& unit, const Operand& o) {
  switch (o.kind) {
    case Operand::kReg:
      return o.reg >= 0 && o.reg < static_cast<int>(unit.regs.size())
                 ? "%" + unit.regs[static_cast<size_t>(o.reg)].name
                 : "%?";
    case Operand::kInt:
      return std::to_string(o.int_value);
    case Operand::kFloat:
      return format_float(o.float_value);
    case Operand::kParam:
    case Operand::kRegion: {
      std::string s = o.param >= 0 && o.param < static_cast<int>(unit.params.size())
                          ? unit.params[static_cast<size_t>(o.param)].name
                          : "?";
      if (o.kind == Operand::kRegion) {
        s += "[";
        for (size_t i = 0; i < o.index.size(); ++i)
          s += (i ? ", " : "") + print_operand(unit, o.index[i]);
        s += "]";
      }
      return s;
    }
    case Operand::kOption:
      return o.option;
  }
  return "?";
}

std::string print(const Unit& unit) {
  std::string out = ".kernel " + unit.name + (unit.core == CoreType::kAic ? " aic" : " aiv") + "\n";
  // A path the listing cannot quote is left out: its errors then name the .pto line only.
  if (!unit.source.empty() && unit.source.find_first_of("\"\n") == std::string::npos)
    out += ".source \"" + unit.source + "\"\n";
  for (const Param& p : unit.params) {
    switch (p.kind) {
      case ParamKind::kTensor:
        out += ".tensor " + p.name + " " + direction_name(p.dir) + " " + dtype_name(p.dtype) +
               shape_text(p.shape) + "\n";
        break;
      case ParamKind::kWindow:
        out += ".window " + p.name + " " + dtype_name(p.dtype) + shape_text(p.shape) + "\n";
        break;
      case ParamKind::kScalar:
        out += ".scalar " + p.name + " " + dtype_name(p.dtype) + "\n";
        break;
    }
  }
  Printer printer{unit, out};
  print_block(printer, unit.body, 1);
  out += ".end\n";
  return out;
}

}  // namespace pypto::compiler::pto
