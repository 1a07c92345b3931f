#include "compiler/driver.h"

int main(int argc, char** argv) { return pypto::compiler::pypto_compile_main(argc, argv); }
