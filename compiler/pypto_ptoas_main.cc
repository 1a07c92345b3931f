#include <iostream>
#include <string>
#include <vector>

#include "compiler/pto/ptoas_tool.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return pypto::compiler::run_ptoas(args, std::cout, std::cerr);
}
