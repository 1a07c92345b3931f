// What `pypto-ptoas` does, kept out of its thin main so tests run it in-process:
//     pypto-ptoas <unit>.pto -o <out>.cpp
// reads the listing, checks it, writes the C++ body (compiler/codegen/kernel_lowering.h)
// to <out>.cpp. This is the calling convention of the replay splice
// (artifact/splice.cc runs it in the ptoas/ directory with relative paths).
// Exit codes: 0 written; 1 the listing has errors or cannot be read
// (clang-style diagnostics on `err`); 2 usage; 3 the output cannot be written.
// --help and --version print to `out` and exit 0.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pypto::compiler {

int run_ptoas(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace pypto::compiler
