// The reference interpreter of a checked program (docs/reference-interpreter.md): it
// runs the program's host function, its chip functions and kernels on host
// tensors directly from the typed tree — ranks as threads over shared window
// buffers — independent of the generated C++ and of the runtime, so that
// --validate checks code generation, the runtime and communication together.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"
#include "pypto/tensor.h"

namespace pypto::compiler {

struct InterpretOptions {
  int64_t world = 1;
  // The files the program was loaded from, so run-time errors read
  // "file:line:col"; without them a location reads "<file #F, byte B>".
  const SourceManager* sources = nullptr;
  // Safety net over the whole run (deadlocks are detected long before it).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// Runs `entry` (the host function of an L3 program, or the chip function of an
// L2 one) once. `args` holds one tensor per parameter of `entry`, in order, with
// its declared dtype and shape; Out/InOut tensors are written in place. Throws
// ProgramError naming the construct and its file:line:col for anything the
// program does wrong at run time (an out-of-bounds view with a runtime offset, a
// wait that can never be satisfied — detected as a deadlock of all ranks).
void interpret(const Program& program, const Function& entry, std::vector<Tensor>& args,
               const InterpretOptions& options);

// Seeded inputs for `entry`'s In/InOut parameters: small integers (or multiples of
// 1/8) that are exact in every dtype, so golden outputs do not depend on the order
// of floating-point sums. Out parameters come back zero-filled.
std::vector<Tensor> seeded_arguments(const Function& entry, uint64_t seed);

}  // namespace pypto::compiler
