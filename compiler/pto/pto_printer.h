// Prints a PTO unit as its .pto listing (docs/pto-format.md). The output
// parses back (pto_parser.h) into the same unit, and printing that again
// gives the same text.
#pragma once

#include <string>

#include "compiler/pto/pto_ir.h"

namespace pypto::compiler::pto {

std::string print(const Unit& unit);
// One operand as the listing writes it: "%acc", "42", "0.5", "x[0, %i]", "add".
std::string print_operand(const Unit& unit, const Operand& operand);
// A float immediate that reads back as the same double ("0.5", "2.0", "1e-05").
std::string format_float(double value);

}  // namespace pypto::compiler::pto
