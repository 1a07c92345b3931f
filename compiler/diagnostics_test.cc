// Every diagnostic of the lexer, the parser and the checker, with its exact
// text: file:line:col, message, source line and caret. One program per case;
// a case with an empty expectation must check clean.
#include <gtest/gtest.h>

#include <string>

#include "compiler/test_util.h"

namespace pypto::compiler {
namespace {

// The cases (generated once from the front end and reviewed by hand): every lexer,
// parser and checker message with its exact text (loader messages: loader_test.cc).
struct DiagCase {
  const char* name;
  const char* program;
  int64_t world;  // 0: no --world
  Arch arch;
  const char* expected;
};

const DiagCase kDiagnosticCases[] = {
    {"WorldConstant",
     R"ptl(const WORLD = 3
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:7: error: 'WORLD' is the world size (set by --world); it cannot name a constant
const WORLD = 3
      ^~~~~
)diag"},
    {"BuiltinNameForFunction",
     R"ptl(kernel aiv load(x: in f32[4]) {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:12: error: 'load' is a builtin operation; it cannot name a kernel
kernel aiv load(x: in f32[4]) {}
           ^~~~
)diag"},
    {"ConstantRedefined",
     R"ptl(const A = 1
const A = 2
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:7: error: redefinition of constant 'A'
const A = 2
      ^
t.ptl:1:7: note: previous definition is here
const A = 1
      ^
)diag"},
    {"ConstantNotCompileTime",
     R"ptl(const A = true
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:11: error: the value of constant 'A' must be a compile-time integer or number
const A = true
          ^~~~
)diag"},
    {"FunctionRedefined",
     R"ptl(chip f() {}
chip f() {}
chip main() {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:6: error: redefinition of 'f'
chip f() {}
     ^
t.ptl:1:6: note: previous definition is here
chip f() {}
     ^
)diag"},
    {"FunctionNamedLikeConstant",
     R"ptl(const f = 1
chip f() {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:6: error: 'f' is already defined as a constant
chip f() {}
     ^
t.ptl:1:7: note: the constant is defined here
const f = 1
      ^
)diag"},
    {"DuplicateParameter",
     R"ptl(kernel aiv k(x: in f32[4], x: in f32[4]) {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:28: error: duplicate parameter 'x'
kernel aiv k(x: in f32[4], x: in f32[4]) {}
                           ^
)diag"},
    {"WorldParameter",
     R"ptl(kernel aiv k(WORLD: i32) {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:14: error: 'WORLD' is the world size; it cannot name a parameter
kernel aiv k(WORLD: i32) {}
             ^~~~~
)diag"},
    {"HostWindowParameter",
     R"ptl(host main(w: window f32[4]) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:14: error: a host function cannot take a window parameter; create windows with window_buffer(...) in the host function
host main(w: window f32[4]) {}
             ^~~~~~~~~~~~~
)diag"},
    {"NoEntry",
     R"ptl(kernel aiv k() {})ptl",
     2, Arch::kA2A3,
     R"diag(pypto-compile: error: the program has no chip or host function to run (an L2 program needs a chip function, an L3 program a host function)
)diag"},
    {"SeveralChipsNoMain",
     R"ptl(chip a() {}
chip b() {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:6: error: the program has several chip functions and none is named 'main'; name the entry point 'main'
chip a() {}
     ^
)diag"},
    {"L3NeedsWorld",
     R"ptl(host main() {})ptl",
     0, Arch::kA2A3,
     R"diag(t.ptl:1:6: error: 'main' is a host function, so this is an L3 program: pass the world size with --world N
host main() {}
     ^~~~
)diag"},
    {"L2EntryWindow",
     R"ptl(chip main(w: window f32[4]) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:14: error: window parameter 'w' of the entry 'main' needs an L3 program: windows are created by a host function
chip main(w: window f32[4]) {}
             ^~~~~~~~~~~~~
)diag"},
    {"Recursion",
     R"ptl(chip a() { b() }
chip b() { a() }
chip main() { a() })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:6: error: recursive call: a -> b -> a; functions are inlined, so recursion is not allowed
chip a() { b() }
     ^
)diag"},
    {"LetWorld",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let WORLD = 1
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:5: error: 'WORLD' is the world size; it cannot be redefined
let WORLD = 1
    ^~~~~
)diag"},
    {"RedefinitionInBlock",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = 1
let a = 2
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:5: error: redefinition of 'a' in the same block
let a = 2
    ^
t.ptl:2:5: note: previous definition is here
let a = 1
    ^
)diag"},
    {"LetOfNothing",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = store(load(x, [0, 0], [16, 64]), y, [0, 0])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: 'store' returns nothing; there is no value to bind to 'a'
let a = store(load(x, [0, 0], [16, 64]), y, [0, 0])
        ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"LetOfList",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = [1, 2]
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: a list is not a value; it can only be an argument of a builtin
let a = [1, 2]
        ^~~~~~
)diag"},
    {"LocalConstNotConstant",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
const C = rank()
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:11: error: the value of constant 'C' must be a compile-time integer
const C = rank()
          ^~~~~~
)diag"},
    {"AssignUndefined",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
b = 1
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:1: error: assignment to undefined name 'b'; declare it with 'let'
b = 1
^
)diag"},
    {"AssignParameter",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
x = 1
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:1: error: cannot assign to parameter 'x'; only 'let' variables can be assigned
x = 1
^
)diag"},
    {"AssignLoopVariable",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
for i in 0 .. 4 { i = 2 }
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:19: error: cannot assign to loop variable 'i'; only 'let' variables can be assigned
for i in 0 .. 4 { i = 2 }
                  ^
)diag"},
    {"AssignConstant",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
const C = 4
C = 5
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:1: error: cannot assign to constant 'C'; only 'let' variables can be assigned
C = 5
^
)diag"},
    {"AssignTypeMismatch",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], [16, 64])
t = load(x, [0, 0], [8, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:5: error: cannot assign an f32 tile[8, 64] to 't', which holds an f32 tile[16, 64]
t = load(x, [0, 0], [8, 64])
    ^~~~~~~~~~~~~~~~~~~~~~~~
t.ptl:2:5: note: 't' is declared here
let t = load(x, [0, 0], [16, 64])
    ^
)diag"},
    {"ConditionNotBool",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
if rank() { }
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:4: error: the condition must be a bool, not int; compare explicitly, e.g. 'x != 0'
if rank() { }
   ^~~~~~
)diag"},
    {"LoopBoundNotInt",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
for i in 0 .. 2.5 { }
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:15: error: a loop bound must be an integer, not float
for i in 0 .. 2.5 { }
              ^~~
)diag"},
    {"LoopStepNotConstant",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
for i in 0 .. 8 step rank() { }
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:22: error: the loop step must be a positive compile-time integer
for i in 0 .. 8 step rank() { }
                     ^~~~~~
)diag"},
    {"HostLoopNotConstant",
     R"ptl(chip c() {}
host main(n: i32) { for r in 0 .. n { c() on r } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:35: error: a host loop needs compile-time bounds: the host plan is fixed when the program is compiled
host main(n: i32) { for r in 0 .. n { c() on r } }
                                  ^
)diag"},
    {"OnTargetNotInt",
     R"ptl(chip c() {}
host main() { c() on 1.5 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:22: error: the target of 'on' must be a rank (an integer), not float
host main() { c() on 1.5 }
                     ^~~
)diag"},
    {"ResultUnused",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
load(x, [0, 0], [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:1: error: the result of 'load' is unused; bind it with 'let'
load(x, [0, 0], [16, 64])
^~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"DispatchLoopShort",
     R"ptl(chip c() {}
host main() {
  for r in 0 .. 1 { c() on r }
})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:12: error: this loop dispatches 'c' to ranks 0 .. 1, but WORLD is 2; a dispatch loop must cover 0 .. WORLD
  for r in 0 .. 1 { c() on r }
           ^~~~~~
t.ptl:3:28: note: the dispatch target is here
  for r in 0 .. 1 { c() on r }
                           ^
)diag"},
    {"DispatchLoopStep",
     R"ptl(chip c() {}
host main() {
  for r in 0 .. WORLD step 2 { c() on r }
})ptl",
     4, Arch::kA2A3,
     R"diag(t.ptl:3:12: error: this loop dispatches 'c' to ranks 0 .. 4 step 2, but WORLD is 4; a dispatch loop must cover 0 .. WORLD
  for r in 0 .. WORLD step 2 { c() on r }
           ^~~~~~~~~~
t.ptl:3:39: note: the dispatch target is here
  for r in 0 .. WORLD step 2 { c() on r }
                                      ^
)diag"},
    {"DispatchRankOutOfRange",
     R"ptl(chip c() {}
host main() {
  c() on 0
  c() on WORLD
})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:4:10: error: dispatch of 'c' to rank 2, but ranks are 0 .. 1 (WORLD is 2)
  c() on WORLD
         ^~~~~
)diag"},
    {"DispatchExpressionOutOfRange",
     R"ptl(chip c() {}
host main() {
  for r in 0 .. WORLD { c() on r + 1 }
})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:32: error: dispatch of 'c' to rank 2, but ranks are 0 .. 1 (WORLD is 2)
  for r in 0 .. WORLD { c() on r + 1 }
                               ^~~~~
)diag"},
    {"NameIsFunction",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = load
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: 'load' is a function; call it with 'load(...)'
let a = load
        ^~~~
)diag"},
    {"WindowNotPassed",
     R"ptl(kernel aiv k() { notify(signal, 0, [0, 0], 1, set) }
chip c() { k() }
host main() {
  let signal = window_buffer(i32[WORLD, 1])
  for r in 0 .. WORLD { c() on r }
})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:25: error: window 'signal' is not a parameter of kernel 'k'; pass it in as a 'window' parameter
kernel aiv k() { notify(signal, 0, [0, 0], 1, set) }
                        ^~~~~~
)diag"},
    {"UndefinedName",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = b
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: use of undefined name 'b'
let a = b
        ^
)diag"},
    {"IndexNotInt",
     R"ptl(chip main(x: in f32[4, 4]) { let a = x[1.5] })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:40: error: an index must be an integer, not float
chip main(x: in f32[4, 4]) { let a = x[1.5] }
                                       ^~~
)diag"},
    {"IndexWindow",
     R"ptl(kernel aiv k(w: window f32[2, 4]) { let a = w[0] }
chip c(w: window f32[2, 4]) { k(w) }
host main() { let w = window_buffer(f32[2, 4])
 for r in 0 .. WORLD { c(w) on r } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:45: error: a window cannot be indexed; pass the whole window, or address its cells with offsets in a kernel
kernel aiv k(w: window f32[2, 4]) { let a = w[0] }
                                            ^~~~
)diag"},
    {"IndexScalar",
     R"ptl(chip main(n: i32) { let a = n[0] })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:29: error: only tensors can be indexed; 'n' is an int
chip main(n: i32) { let a = n[0] }
                            ^~~~
)diag"},
    {"IndexLastDimension",
     R"ptl(chip main(x: in f32[4]) { let a = x[0] })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:35: error: indexing 'x' (in tensor f32[4]) would leave no dimensions; use view(...) for a 1-element region
chip main(x: in f32[4]) { let a = x[0] }
                                  ^~~~
)diag"},
    {"IndexOutOfRange",
     R"ptl(chip main(x: in f32[4, 4]) { let a = x[4] })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:40: error: index 4 is out of range for 'x', whose first extent is 4
chip main(x: in f32[4, 4]) { let a = x[4] }
                                       ^
)diag"},
    {"NotOnInt",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = !1
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: '!' needs a bool, not int
let a = !1
        ^~
)diag"},
    {"NegateTile",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = -load(x, [0, 0], [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: negate a tile with neg(x), not '-'
let a = -load(x, [0, 0], [16, 64])
        ^~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"AndOnInts",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
if 1 && 2 { }
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:4: error: '&&' needs bool operands, not int and int
if 1 && 2 { }
   ^~~~~~
)diag"},
    {"PlusOnTiles",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], [16, 64])
let u = t + t
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:9: error: tiles are combined with the builtins add, sub, mul, div, max, min, not '+'
let u = t + t
        ^~~~~
)diag"},
    {"CompareBools",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
if true < false { }
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:4: error: '<' needs numbers, not bool and bool
if true < false { }
   ^~~~~~~~~~~~
)diag"},
    {"ModuloFloat",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = 2.5 % 2
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: '%' needs integers, not float and int
let a = 2.5 % 2
        ^~~~~~~
)diag"},
    {"DivisionByZero",
     R"ptl(const A = 4 / (2 - 2)
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:11: error: division by zero in a constant expression
const A = 4 / (2 - 2)
          ^~~~~~~~~~
)diag"},
    {"ConstantOverflow",
     R"ptl(const A = 9223372036854775807 + 1
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:11: error: integer overflow in a constant expression
const A = 9223372036854775807 + 1
          ^~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"ConstantCall",
     R"ptl(const A = world()
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:11: error: a constant cannot call 'world'; constants are computed at compile time
const A = world()
          ^~~~~~~
)diag"},
    {"OnBuiltin",
     R"ptl(host main() { window_buffer(f32[4]) on 0 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:15: error: 'on' dispatches a chip function to a rank; 'window_buffer' is a builtin
host main() { window_buffer(f32[4]) on 0 }
              ^~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"UndefinedFunction",
     R"ptl(chip main() { frobnicate(1) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:15: error: call to undefined function 'frobnicate'
chip main() { frobnicate(1) }
              ^~~~~~~~~~
)diag"},
    {"UndefinedCollective",
     R"ptl(host main(x: inout f32[4]) { allreduce(x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:30: error: call to undefined function 'allreduce'
host main(x: inout f32[4]) { allreduce(x) }
                             ^~~~~~~~~
t.ptl:1:30: note: the collectives library has allreduce_sum, allreduce_max and allreduce_min (and allreduce_ring_* over a ring); add 'import "collectives.ptl"'
host main(x: inout f32[4]) { allreduce(x) }
                             ^~~~~~~~~
)diag"},
    {"UndefinedLibraryCollective",
     R"ptl(host main(x: inout f32[WORLD, 4]) { all_to_all(x, x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:37: error: call to undefined function 'all_to_all'
host main(x: inout f32[WORLD, 4]) { all_to_all(x, x) }
                                    ^~~~~~~~~~
t.ptl:1:37: note: 'all_to_all' is a collective of the library shipped with the compiler; add 'import "collectives.ptl"'
host main(x: inout f32[WORLD, 4]) { all_to_all(x, x) }
                                    ^~~~~~~~~~
)diag"},
    {"CallReturnsNothing",
     R"ptl(chip c() {}
chip main() { let a = c() })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:23: error: 'c' returns nothing; call it as a statement
chip main() { let a = c() }
                      ^~~
)diag"},
    {"KernelCallsKernel",
     R"ptl(kernel aiv a() {}
kernel aiv b() { a() }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:18: error: a kernel cannot call kernel 'a'; kernels use builtin operations only
kernel aiv b() { a() }
                 ^
t.ptl:1:12: note: 'a' is defined here
kernel aiv a() {}
           ^
)diag"},
    {"ChipCallsHost",
     R"ptl(host h() {}
chip c() { h() }
host main() { for r in 0 .. WORLD { c() on r } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:12: error: a chip function cannot call host function 'h'
chip c() { h() }
           ^
t.ptl:1:6: note: 'h' is defined here
host h() {}
     ^
)diag"},
    {"HostLaunchesKernel",
     R"ptl(kernel aiv k() {}
host main() { k() })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:15: error: a host function cannot launch kernel 'k' directly; call it from a chip function and dispatch that
host main() { k() }
              ^
t.ptl:1:12: note: 'k' is defined here
kernel aiv k() {}
           ^
)diag"},
    {"DispatchWithoutOn",
     R"ptl(chip c() {}
host main() { c() })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:15: error: dispatching chip function 'c' needs a target rank: 'c(...) on r'
host main() { c() }
              ^~~
t.ptl:1:6: note: 'c' is defined here
chip c() {}
     ^
)diag"},
    {"OnFromChip",
     R"ptl(kernel aiv k() {}
chip main() { k() on 0 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:15: error: 'on' dispatches a chip function from a host function; it cannot be used to call kernel 'k'
chip main() { k() on 0 }
              ^~~
t.ptl:1:12: note: 'k' is defined here
kernel aiv k() {}
           ^
)diag"},
    {"ArgumentCount",
     R"ptl(kernel aiv k(a: in f32[4], b: out f32[4]) {}
chip main(x: in f32[4]) { k(x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:27: error: 'k' takes 2 arguments, but 1 was given
chip main(x: in f32[4]) { k(x) }
                          ^~~~
t.ptl:1:1: note: 'k' is defined here
kernel aiv k(a: in f32[4], b: out f32[4]) {}
^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"ScalarArgumentIsTensor",
     R"ptl(kernel aiv k(n: i32) {}
chip main(x: in f32[4]) { k(x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:29: error: argument 1 of 'k' (parameter 'n'): expected an i32 scalar, got in tensor f32[4]
chip main(x: in f32[4]) { k(x) }
                            ^
t.ptl:1:14: note: 'n' is declared here
kernel aiv k(n: i32) {}
             ^
)diag"},
    {"IntArgumentIsFloat",
     R"ptl(kernel aiv k(n: i32) {}
chip main() { k(0.5) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:17: error: argument 1 of 'k' (parameter 'n'): expected an integer (i32), got a float
chip main() { k(0.5) }
                ^~~
t.ptl:1:14: note: 'n' is declared here
kernel aiv k(n: i32) {}
             ^
)diag"},
    {"WindowParamGetsTensor",
     R"ptl(kernel aiv k(w: window f32[4]) {}
chip main(x: in f32[4]) { k(x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:29: error: argument 1 of 'k' (parameter 'w'): expected a window, but 'x' is an in tensor f32[4]; windows come from window_buffer(...)
chip main(x: in f32[4]) { k(x) }
                            ^
t.ptl:1:14: note: 'w' is declared here
kernel aiv k(w: window f32[4]) {}
             ^
)diag"},
    {"TensorParamGetsWindow",
     R"ptl(kernel aiv k(x: in f32[4]) {}
chip c(w: window f32[4]) { k(w) }
host main() { let w = window_buffer(f32[4])
 for r in 0 .. WORLD { c(w) on r } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:30: error: argument 1 of 'k' (parameter 'x'): expected an in tensor f32[4], but 'w' is a window f32[4]
chip c(w: window f32[4]) { k(w) }
                             ^
t.ptl:1:14: note: 'x' is declared here
kernel aiv k(x: in f32[4]) {}
             ^
)diag"},
    {"InTensorAsOut",
     R"ptl(kernel aiv k(y: out f32[4]) {}
chip main(x: in f32[4]) { k(x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:29: error: argument 1 of 'k' (parameter 'y'): cannot pass 'in' tensor 'x' as an 'out' parameter: the callee writes it
chip main(x: in f32[4]) { k(x) }
                            ^
t.ptl:1:14: note: 'y' is declared here
kernel aiv k(y: out f32[4]) {}
             ^
)diag"},
    {"ArgumentShapeMismatch",
     R"ptl(kernel aiv k(y: in f32[4, 8]) {}
chip main(x: in f32[4, 16]) { k(x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:33: error: argument 1 of 'k' (parameter 'y'): expected f32[4, 8], got f32[4, 16]
chip main(x: in f32[4, 16]) { k(x) }
                                ^
t.ptl:1:14: note: 'y' is declared here
kernel aiv k(y: in f32[4, 8]) {}
             ^
)diag"},
    {"ArgumentDtypeMismatch",
     R"ptl(kernel aiv k(y: in f16[4]) {}
chip main(x: in f32[4]) { k(x) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:29: error: argument 1 of 'k' (parameter 'y'): expected f16[4], got f32[4]
chip main(x: in f32[4]) { k(x) }
                            ^
t.ptl:1:14: note: 'y' is declared here
kernel aiv k(y: in f16[4]) {}
             ^
)diag"},
    {"ExtentNotConstant",
     R"ptl(kernel aiv k(n: i32) { let t = zeros(f32[n, 4]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:42: error: an extent of the type must be a compile-time integer (shapes are static); this value is known only at run time
kernel aiv k(n: i32) { let t = zeros(f32[n, 4]) }
                                         ^
)diag"},
    {"ExtentNotPositive",
     R"ptl(kernel aiv k(x: in f32[0, 4]) {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:24: error: an extent of 'x' must be positive, not 0
kernel aiv k(x: in f32[0, 4]) {}
                       ^
)diag"},
    {"ShapeRuntime",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let n = rank()
let t = load(x, [0, 0], [n, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:26: error: an extent of the tile shape must be a compile-time integer (shapes are static); this value is known only at run time
let t = load(x, [0, 0], [n, 64])
                         ^
)diag"},
    {"OffsetsNotList",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, 0, [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:17: error: the offsets must be a list of 2 integers, e.g. [0, 0]
let t = load(x, 0, [16, 64])
                ^
)diag"},
    {"OffsetNotInt",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0.5, 0], [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:18: error: an offset must be an integer, not float
let t = load(x, [0.5, 0], [16, 64])
                 ^~~
)diag"},
    {"OffsetNegative",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [-1, 0], [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:18: error: an offset cannot be negative (-1)
let t = load(x, [-1, 0], [16, 64])
                 ^~
)diag"},
    {"OffsetCount",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0], [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:17: error: expected 2 offsets (one per dimension), got 1
let t = load(x, [0], [16, 64])
                ^~~
)diag"},
    {"ShapeNotList",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], 16)
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:25: error: the tile shape must be a non-empty list of compile-time extents, e.g. [16, 64]
let t = load(x, [0, 0], 16)
                        ^~
)diag"},
    {"ShapeRankMismatch",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], [64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:25: error: the tile shape has 1 extent, but 'x' has 2 dimensions
let t = load(x, [0, 0], [64])
                        ^~~~
)diag"},
    {"RegionOutOfBounds",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [8, 0], [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:17: error: the region [8, 24) of dimension 0 exceeds 'x', whose extent there is 16
let t = load(x, [8, 0], [16, 64])
                ^~~~~~
)diag"},
    {"RegionTooBigRuntimeOffset",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [rank(), 0], [32, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:17: error: the region of extent 32 of dimension 0 exceeds 'x', whose extent there is 16
let t = load(x, [rank(), 0], [32, 64])
                ^~~~~~~~~~~
)diag"},
    {"TileNot2D",
     R"ptl(kernel aiv k(x: in f32[4, 16, 64]) { let t = load(x, [0, 0, 0], [2, 16, 64]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:65: error: a tile is 2-D: every extent before the last two must be 1 (extent 0 is 2)
kernel aiv k(x: in f32[4, 16, 64]) { let t = load(x, [0, 0, 0], [2, 16, 64]) }
                                                                ^~~~~~~~~~~
)diag"},
    {"TileExceedsUB",
     R"ptl(kernel aiv k(x: in f32[256, 256]) { let t = load(x, [0, 0], [256, 256]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:45: error: this f32 tile[256, 256] needs 262144 bytes, but the Unified Buffer (UB) of a2a3 holds 192 KiB; split it into smaller tiles
kernel aiv k(x: in f32[256, 256]) { let t = load(x, [0, 0], [256, 256]) }
                                            ^~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"TileExceedsUBa5",
     R"ptl(kernel aiv k(x: in f32[256, 512]) { let t = load(x, [0, 0], [256, 512]) }
chip main() {}
)ptl",
     2, Arch::kA5,
     R"diag(t.ptl:1:45: error: this f32 tile[256, 512] needs 524288 bytes, but the Unified Buffer (UB) of a5 holds 256 KiB; split it into smaller tiles
kernel aiv k(x: in f32[256, 512]) { let t = load(x, [0, 0], [256, 512]) }
                                            ^~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"TileFitsUBa5",
     R"ptl(kernel aiv k(x: in f32[256, 256]) { let t = load(x, [0, 0], [256, 256]) }
chip main() {}
)ptl",
     2, Arch::kA5,
     R"diag()diag"},
    {"TileExceedsL1",
     R"ptl(kernel aic k(x: in f32[512, 512]) { let t = load(x, [0, 0], [512, 512]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:45: error: this f32 tile[512, 512] needs 1048576 bytes, but L1 of a2a3 holds 512 KiB; split it into smaller tiles
kernel aic k(x: in f32[512, 512]) { let t = load(x, [0, 0], [512, 512]) }
                                            ^~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"MatmulExceedsL0",
     R"ptl(kernel aic k(a: in f32[128, 256], b: in f32[256, 256]) {
  let c = matmul(load(a, [0, 0], [128, 256]), load(b, [0, 0], [256, 256]))
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:18: error: this f32 tile[128, 256] needs 131072 bytes, but L0A of a2a3 holds 64 KiB; split it into smaller tiles
  let c = matmul(load(a, [0, 0], [128, 256]), load(b, [0, 0], [256, 256]))
                 ^~~~~~~~~~~~~~~~~~~~~~~~~~~
t.ptl:2:47: error: this f32 tile[256, 256] needs 262144 bytes, but L0B of a2a3 holds 64 KiB; split it into smaller tiles
  let c = matmul(load(a, [0, 0], [128, 256]), load(b, [0, 0], [256, 256]))
                                              ^~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"StoreOperationSymbol",
     R"ptl(kernel aiv k(w: window f32[16, 64]) { remote_store(zeros(f32[16, 64]), w, 0, [0, 0], mul) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:86: error: the store operation must be one of set, add
kernel aiv k(w: window f32[16, 64]) { remote_store(zeros(f32[16, 64]), w, 0, [0, 0], mul) }
                                                                                     ^~~
)diag"},
    {"BuiltinArity",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: 'load' takes 3 arguments, but 2 were given; load(src: tensor|window, offsets: [int...], shape: [const...]) -> tile
let t = load(x, [0, 0])
        ^~~~~~~~~~~~~~~
)diag"},
    {"BuiltinWrongKind",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
store(x, y, [0, 0])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:7: error: argument 1 of 'store' must be a tile, but 'x' is an in tensor f32[16, 64]
store(x, y, [0, 0])
      ^
)diag"},
    {"LoadFromScalar",
     R"ptl(kernel aiv k(n: i32) { let t = load(n, [0], [4]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:37: error: 'load' reads a tensor or a window, but 'n' is an int
kernel aiv k(n: i32) { let t = load(n, [0], [4]) }
                                    ^
)diag"},
    {"LoadFromOut",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(y, [0, 0], [16, 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:14: error: cannot read 'out' tensor 'y'; declare it 'inout' to read and write it
let t = load(y, [0, 0], [16, 64])
             ^
)diag"},
    {"StoreIntoIn",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
store(load(x, [0, 0], [16, 64]), x, [0, 0])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:34: error: cannot write 'in' tensor 'x'; declare it 'out' or 'inout'
store(load(x, [0, 0], [16, 64]), x, [0, 0])
                                 ^
)diag"},
    {"NotifyNonSignalWindow",
     R"ptl(kernel aiv k(w: window f32[4, 1]) { notify(w, 0, [0, 0], 1, add) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:44: error: 'notify' works on i32 signal cells, but window 'w' holds f32
kernel aiv k(w: window f32[4, 1]) { notify(w, 0, [0, 0], 1, add) }
                                           ^
)diag"},
    {"WaitBadComparison",
     R"ptl(kernel aiv k(w: window i32[4, 1]) { wait(w, [0, 0], above, 1) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:53: error: the comparison must be one of eq, ne, gt, ge, lt, le
kernel aiv k(w: window i32[4, 1]) { wait(w, [0, 0], above, 1) }
                                                    ^~~~~
)diag"},
    {"StoreTileInto1D",
     R"ptl(kernel aiv k(y: out f32[64]) { store(zeros(f32[2, 64]), y, [0]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:38: error: an f32 tile[2, 64] does not fit the 1-D 'y'
kernel aiv k(y: out f32[64]) { store(zeros(f32[2, 64]), y, [0]) }
                                     ^~~~~~~~~~~~~~~~~
)diag"},
    {"StoreDtypeMismatch",
     R"ptl(kernel aiv k(y: out f16[16, 64]) { store(zeros(f32[16, 64]), y, [0, 0]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:42: error: the tile and 'y' have different dtypes: f32 vs f16; convert with cast(...)
kernel aiv k(y: out f16[16, 64]) { store(zeros(f32[16, 64]), y, [0, 0]) }
                                         ^~~~~~~~~~~~~~~~~~
)diag"},
    {"BuiltinWrongContext",
     R"ptl(chip main(x: in f32[4]) { let t = load(x, [0], [4]) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:35: error: 'load' is not available in a chip function 'main'; it is for kernels
chip main(x: in f32[4]) { let t = load(x, [0], [4]) }
                                  ^~~~
)diag"},
    {"VectorOpInCube",
     R"ptl(kernel aic k(x: in f32[16, 64]) { let t = load(x, [0, 0], [16, 64])
 let u = exp(t) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:10: error: 'exp' is not available in an aic (cube) kernel 'k'; it is for aiv (vector) kernels
 let u = exp(t) }
         ^~~
)diag"},
    {"TileMaxInCube",
     R"ptl(kernel aic k(x: in f32[16, 64]) { let t = load(x, [0, 0], [16, 64])
 let u = max(t, 0.0) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:10: error: 'max' on tiles is only available in aiv (vector) kernels; 'k' is an aic (cube) kernel
 let u = max(t, 0.0) }
         ^~~
)diag"},
    {"ScalarFirst",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], [16, 64])
let u = sub(1.0, t)
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:13: error: the first argument of 'sub' must be a tile, not float; put the tile first
let u = sub(1.0, t)
            ^~~
)diag"},
    {"SecondNotTileOrScalar",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], [16, 64])
let u = add(t, x)
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:16: error: the second argument of 'add' must be a tile or a scalar, not in tensor f32[16, 64]
let u = add(t, x)
               ^
)diag"},
    {"TileDtypeMismatch",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], [16, 64])
let u = add(t, zeros(f16[16, 64]))
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:9: error: 'add' of tiles with different dtypes: f32 vs f16; convert with cast(...)
let u = add(t, zeros(f16[16, 64]))
        ^~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"TileShapeMismatch",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let t = load(x, [0, 0], [16, 64])
let u = add(t, zeros(f32[16, 32]))
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:9: error: 'add' of an f32 tile[16, 64] and an f32 tile[16, 32]: shapes must be equal, or the second [rows, 1] or [1, cols]
let u = add(t, zeros(f32[16, 32]))
        ^~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"ExpOfIntTile",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let u = exp(zeros(i32[16, 64]))
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:13: error: 'exp' needs a floating-point tile, not an i32 tile[16, 64]; cast it first
let u = exp(zeros(i32[16, 64]))
            ^~~~~~~~~~~~~~~~~~
)diag"},
    {"CastNeedsDtype",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let u = cast(zeros(i32[16, 64]), 3)
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:34: error: argument 2 of 'cast' must be a dtype, e.g. f16, but this argument is an int
let u = cast(zeros(i32[16, 64]), 3)
                                 ^
)diag"},
    {"MatmulInnerMismatch",
     R"ptl(kernel aic k() { let c = matmul(zeros(f16[16, 32]), zeros(f16[16, 32])) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:26: error: matmul of an f16 tile[16, 32] and an f16 tile[16, 32]: the columns of the first (32) must equal the rows of the second (16)
kernel aic k() { let c = matmul(zeros(f16[16, 32]), zeros(f16[16, 32])) }
                         ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"MatmulDtypeMismatch",
     R"ptl(kernel aic k() { let c = matmul(zeros(f16[16, 32]), zeros(bf16[32, 16])) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:26: error: matmul operands with different dtypes: f16 vs bf16; convert with cast(...)
kernel aic k() { let c = matmul(zeros(f16[16, 32]), zeros(bf16[32, 16])) }
                         ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"MatmulAccumulatorMismatch",
     R"ptl(kernel aic k() { let c = matmul(zeros(f16[16, 32]), zeros(f16[32, 16]), zeros(f16[16, 16])) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:73: error: the accumulator must be an f32 tile[16, 16], not an f16 tile[16, 16]
kernel aic k() { let c = matmul(zeros(f16[16, 32]), zeros(f16[32, 16]), zeros(f16[16, 16])) }
                                                                        ^~~~~~~~~~~~~~~~~~
)diag"},
    {"FullValueNotScalar",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let u = full(f32[16, 64], x)
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:27: error: the fill value must be a scalar, not in tensor f32[16, 64]
let u = full(f32[16, 64], x)
                          ^
)diag"},
    {"FullThreeDims",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let u = full(f32[2, 16, 64], 1.0)
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:14: error: a tile has 1 or 2 dimensions, not 3
let u = full(f32[2, 16, 64], 1.0)
             ^~~~~~~~~~~~~~
)diag"},
    {"PutRankMismatch",
     R"ptl(kernel aiv k(x: in f32[64], w: window f32[2, 64]) { put(x, w, 0, [0, 0]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:57: error: 'put' copies a region of the same rank: 'x' has 1 dimension, window 'w' 2
kernel aiv k(x: in f32[64], w: window f32[2, 64]) { put(x, w, 0, [0, 0]) }
                                                        ^
)diag"},
    {"GetIntoIn",
     R"ptl(kernel aiv k(x: in f32[2, 64], w: window f32[2, 64]) { get(x, w, 0, [0, 0]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:60: error: cannot write 'in' tensor 'x'; declare it 'out' or 'inout'
kernel aiv k(x: in f32[2, 64], w: window f32[2, 64]) { get(x, w, 0, [0, 0]) }
                                                           ^
)diag"},
    {"ViewOfWindow",
     R"ptl(kernel aiv k(w: window f32[2, 64]) {}
chip c(w: window f32[2, 64]) { k(view(w, [0, 0], [1, 64])) }
host main() { let w = window_buffer(f32[2, 64])
 for r in 0 .. WORLD { c(w) on r } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:39: error: 'view' takes a tensor, but 'w' is a window f32[2, 64]; windows are passed whole
chip c(w: window f32[2, 64]) { k(view(w, [0, 0], [1, 64])) }
                                      ^
)diag"},
    {"ViewRankMismatch",
     R"ptl(chip main(x: in f32[4, 4]) { let v = view(x, [0, 0], [4]) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:54: error: the view shape has 1 extent, but 'x' has 2 dimensions
chip main(x: in f32[4, 4]) { let v = view(x, [0, 0], [4]) }
                                                     ^~~
)diag"},
    {"ViewOutOfBounds",
     R"ptl(chip main(x: in f32[4, 4]) { let v = view(x, [2, 0], [4, 4]) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:46: error: the region [2, 6) of dimension 0 exceeds 'x', whose extent there is 4
chip main(x: in f32[4, 4]) { let v = view(x, [2, 0], [4, 4]) }
                                             ^~~~~~
)diag"},
    {"TypeExtentNotConstant",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let u = zeros(f32[rank(), 64])
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:19: error: an extent of the type must be a compile-time integer (shapes are static); this value is known only at run time
let u = zeros(f32[rank(), 64])
                  ^~~~~~
)diag"},
    {"PeerNotInt",
     R"ptl(kernel aiv k(w: window f32[16, 64]) { let t = remote_load(w, 0.5, [0, 0], [16, 64]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:62: error: argument 2 of 'remote_load' must be a rank (int), but this argument is a float
kernel aiv k(w: window f32[16, 64]) { let t = remote_load(w, 0.5, [0, 0], [16, 64]) }
                                                             ^~~
)diag"},
    {"LexUnterminatedComment",
     R"ptl(chip main() {} /* never closed)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:16: error: unterminated '/*' comment
chip main() {} /* never closed
               ^~
)diag"},
    {"LexSingleDot",
     R"ptl(chip main() { for i in 0 . 4 { } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:26: error: unexpected '.'; a range is written 'a .. b'
chip main() { for i in 0 . 4 { } }
                         ^
t.ptl:1:28: error: expected '..' in the loop range 'lo .. hi', found '4'
chip main() { for i in 0 . 4 { } }
                           ^
)diag"},
    {"LexSingleAmpersand",
     R"ptl(chip main() { if true & false { } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:23: error: unexpected '&'; did you mean '&&'?
chip main() { if true & false { } }
                      ^
t.ptl:1:25: error: expected '{' after the condition, found 'false'
chip main() { if true & false { } }
                        ^~~~~
)diag"},
    {"LexSinglePipe",
     R"ptl(chip main() { if true | false { } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:23: error: unexpected '|'; did you mean '||'?
chip main() { if true | false { } }
                      ^
t.ptl:1:25: error: expected '{' after the condition, found 'false'
chip main() { if true | false { } }
                        ^~~~~
)diag"},
    {"LexUnexpectedCharacter",
     R"ptl(chip main() { let a = 1 @ 2 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:25: error: unexpected character '@'
chip main() { let a = 1 @ 2 }
                        ^
t.ptl:1:27: error: expected ';' or a line break after the statement, found '2'
chip main() { let a = 1 @ 2 }
                          ^
)diag"},
    {"LexUnexpectedByte",
     "chip main() { let a = \x01"" }",
     2, Arch::kA2A3,
     "t.ptl:1:23: error: unexpected byte 0x01\nchip main() { let a = \x01"" }\n                      ^\nt.ptl:1:25: error: expected an expression, found '}'\nchip main() { let a = \x01"" }\n                        ^\n"},
    {"LexUnicode",
     R"ptl(chip main() { let α = 1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:19: error: unexpected byte 0xce
chip main() { let α = 1 }
                  ^~
t.ptl:1:22: error: expected a name after 'let', found '='
chip main() { let α = 1 }
                     ^
)diag"},
    {"LexInvalidNumber",
     R"ptl(chip main() { let a = 12abc })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:23: error: invalid number '12abc'
chip main() { let a = 12abc }
                      ^~~~~
t.ptl:1:29: error: expected an expression, found '}'
chip main() { let a = 12abc }
                            ^
)diag"},
    {"LexIntegerTooLarge",
     R"ptl(const A = 99999999999999999999
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:11: error: integer literal '99999999999999999999' does not fit in 64 bits
const A = 99999999999999999999
          ^~~~~~~~~~~~~~~~~~~~
)diag"},
    {"LexUnterminatedString",
     R"ptl(import "lib.ptl
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:8: error: unterminated string literal
import "lib.ptl
       ^
t.ptl:2:1: error: expected a file name in quotes after 'import', found 'chip'
chip main() {}
^~~~
)diag"},
    {"ParseImportNeedsString",
     R"ptl(import lib
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:8: error: expected a file name in quotes after 'import', found 'lib'
import lib
       ^~~
)diag"},
    {"ParseConstNeedsName",
     R"ptl(const = 3
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:7: error: expected a name after 'const', found '='
const = 3
      ^
)diag"},
    {"ParseConstNeedsAssign",
     R"ptl(const A 3
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:9: error: expected '=' after the constant's name, found '3'
const A 3
        ^
)diag"},
    {"ParseTopLevelJunk",
     R"ptl(let a = 1
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:1: error: expected 'kernel', 'chip', 'host', 'const' or 'import' at top level, found 'let'
let a = 1
^~~
)diag"},
    {"ParseKernelNeedsCore",
     R"ptl(kernel vec k() {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:8: error: expected the core type 'aic' (cube) or 'aiv' (vector) after 'kernel', found 'vec'
kernel vec k() {}
       ^~~
)diag"},
    {"ParseFunctionNeedsName",
     R"ptl(chip (x: in f32[4]) {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:6: error: expected the chip function's name, found '('
chip (x: in f32[4]) {}
     ^
)diag"},
    {"ParseFunctionNeedsParen",
     R"ptl(chip main {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:11: error: expected '(' to open the parameter list, found '{'
chip main {}
          ^
)diag"},
    {"ParseParamNeedsName",
     R"ptl(chip main(: in f32[4]) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:11: error: expected a parameter name, found ':'
chip main(: in f32[4]) {}
          ^
)diag"},
    {"ParseParamNeedsColon",
     R"ptl(chip main(x in f32[4]) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:13: error: expected ':' after the parameter name, found 'in'
chip main(x in f32[4]) {}
            ^~
)diag"},
    {"ParseParamNeedsDtype",
     R"ptl(chip main(x: in float[4]) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:17: error: expected a dtype (f32, f16, bf16, i8, i16, i32, i64, u8, bool) in the type of 'x', found 'float'
chip main(x: in float[4]) {}
                ^~~~~
)diag"},
    {"ParseTensorNeedsDirection",
     R"ptl(chip main(x: f32[4]) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:14: error: tensor parameter 'x' needs a direction: 'in', 'out' or 'inout' (or 'window')
chip main(x: f32[4]) {}
             ^~~~
)diag"},
    {"ParseWindowNeedsShape",
     R"ptl(chip c(w: window f32) {}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:21: error: expected '[' and the shape of 'w', found ')'
chip c(w: window f32) {}
                    ^
)diag"},
    {"ParseEmptyShape",
     R"ptl(chip main(x: in f32[]) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:21: error: expected at least one extent in the shape of 'x', found ']'
chip main(x: in f32[]) {}
                    ^
)diag"},
    {"ParseShapeNeedsBracket",
     R"ptl(chip main(x: in f32[4, 4) {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:25: error: expected ']' to close the shape of 'x', found ')'
chip main(x: in f32[4, 4) {}
                        ^
)diag"},
    {"ParseParamListNeedsParen",
     R"ptl(chip main(x: in f32[4] {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:24: error: expected ')' to close the parameter list, found '{'
chip main(x: in f32[4] {}
                       ^
)diag"},
    {"ParseBodyNeedsBrace",
     R"ptl(chip main() let a = 1)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:13: error: expected '{' to open the body of 'main', found 'let'
chip main() let a = 1
            ^~~
)diag"},
    {"ParseBlockAtEof",
     R"ptl(chip main() {
  let a = 1
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:1: error: expected '}' to close the block, found end of file

^
t.ptl:1:13: note: the block opened here
chip main() {
            ^
)diag"},
    {"ParseBlockBeforeDeclaration",
     R"ptl(chip c() {
  let a = 1
chip main() {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:3:1: error: expected '}' to close the block before 'chip'
chip main() {}
^~~~
t.ptl:1:10: note: the block opened here
chip c() {
         ^
)diag"},
    {"ParseStatementSeparator",
     R"ptl(chip main() { let a = 1 let b = 2 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:25: error: expected ';' or a line break after the statement, found 'let'
chip main() { let a = 1 let b = 2 }
                        ^~~
)diag"},
    {"ParseLetNeedsName",
     R"ptl(chip main() { let = 1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:19: error: expected a name after 'let', found '='
chip main() { let = 1 }
                  ^
)diag"},
    {"ParseLetNeedsAssign",
     R"ptl(chip main() { let a 1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:21: error: expected '=' after 'a', found '1'
chip main() { let a 1 }
                    ^
)diag"},
    {"ParseForNeedsVariable",
     R"ptl(chip main() { for in 0 .. 4 { } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:19: error: expected the loop variable after 'for', found 'in'
chip main() { for in 0 .. 4 { } }
                  ^~
)diag"},
    {"ParseForNeedsIn",
     R"ptl(chip main() { for i 0 .. 4 { } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:21: error: expected 'in' after the loop variable, found '0'
chip main() { for i 0 .. 4 { } }
                    ^
)diag"},
    {"ParseForNeedsRange",
     R"ptl(chip main() { for i in 0, 4 { } })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:25: error: expected '..' in the loop range 'lo .. hi', found ','
chip main() { for i in 0, 4 { } }
                        ^
)diag"},
    {"ParseForNeedsBody",
     R"ptl(chip main() { for i in 0 .. 4 let a = 1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:31: error: expected '{' to open the loop body, found 'let'
chip main() { for i in 0 .. 4 let a = 1 }
                              ^~~
)diag"},
    {"ParseStatementExpected",
     R"ptl(chip main() { 42 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:15: error: expected a statement, found '42'
chip main() { 42 }
              ^~
)diag"},
    {"ParseExpressionDoesNothing",
     R"ptl(chip main() { a + 1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:15: error: this expression does nothing; only calls can stand alone as statements
chip main() { a + 1 }
              ^~~~~
)diag"},
    {"ParseIfNeedsBrace",
     R"ptl(chip main() { if true let a = 1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:23: error: expected '{' after the condition, found 'let'
chip main() { if true let a = 1 }
                      ^~~
)diag"},
    {"ParseElseNeedsBrace",
     R"ptl(chip main() { if true { } else let a = 1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:32: error: expected '{' or 'if' after 'else', found 'let'
chip main() { if true { } else let a = 1 }
                               ^~~
)diag"},
    {"ParseExpressionExpected",
     R"ptl(chip main() { let a = * 2 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:23: error: expected an expression, found '*'
chip main() { let a = * 2 }
                      ^
)diag"},
    {"ParseCallNeedsParen",
     R"ptl(chip main() { let a = max(1, 2 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:32: error: expected ')' to close the argument list, found '}'
chip main() { let a = max(1, 2 }
                               ^
)diag"},
    {"ParseIndexNeedsBracket",
     R"ptl(chip main(x: in f32[4, 4]) { let a = x[1 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:42: error: expected ']' to close the index, found '}'
chip main(x: in f32[4, 4]) { let a = x[1 }
                                         ^
)diag"},
    {"ParseListNeedsBracket",
     R"ptl(chip main() { let a = [1, 2 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:29: error: expected ']' to close the list, found '}'
chip main() { let a = [1, 2 }
                            ^
)diag"},
    {"ParseParenNeedsParen",
     R"ptl(chip main() { let a = (1 + 2 })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:30: error: expected ')' to close the parenthesis, found '}'
chip main() { let a = (1 + 2 }
                             ^
)diag"},
    {"ParseTooDeep",
     R"ptl(chip main() { let a = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:222: error: nesting is too deep (more than 200 levels)
chip main() { let a = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) }
                                                                                                                                                                                                                             ^
)diag"},
    {"ParseSeveralErrors",
     R"ptl(chip main() {
  let = 1
  let b 2
  for in 0 .. 4 { }
  let c = b
})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:7: error: expected a name after 'let', found '='
  let = 1
      ^
t.ptl:3:9: error: expected '=' after 'b', found '2'
  let b 2
        ^
t.ptl:4:7: error: expected the loop variable after 'for', found 'in'
  for in 0 .. 4 { }
      ^~
)diag"},
    {"NegateBool",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let a = -true
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: '-' needs a number, not bool
let a = -true
        ^~~~~
)diag"},
    {"StoreIntoScalar",
     R"ptl(kernel aiv k(n: i32) { store(zeros(f32[1, 4]), n, [0]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:48: error: 'store' writes a tensor or a window, but 'n' is an int
kernel aiv k(n: i32) { store(zeros(f32[1, 4]), n, [0]) }
                                               ^
)diag"},
    {"PutDtypeMismatch",
     R"ptl(kernel aiv k(x: in f16[2, 64], w: window f32[2, 64]) { put(x, w, 0, [0, 0]) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:56: error: 'x' and window 'w' have different dtypes: f16 vs f32; convert with cast(...)
kernel aiv k(x: in f16[2, 64], w: window f32[2, 64]) { put(x, w, 0, [0, 0]) }
                                                       ^~~~~~~~~~~~~~~~~~~~
)diag"},
    {"RankTakesNoArguments",
     R"ptl(kernel aiv k(x: in f32[16, 64], y: out f32[16, 64]) {
let r = rank(0)
}
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:9: error: 'rank' takes 0 arguments, but 1 was given; rank() -> int
let r = rank(0)
        ^~~~~~~
)diag"},
    {"MatmulExceedsL0C",
     R"ptl(kernel aic k() { let c = matmul(zeros(f16[256, 64]), zeros(f16[64, 256])) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:26: error: this f32 tile[256, 256] needs 262144 bytes, but L0C of a2a3 holds 128 KiB; split it into smaller tiles
kernel aic k() { let c = matmul(zeros(f16[256, 64]), zeros(f16[64, 256])) }
                         ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"SeveralHostsNoMain",
     R"ptl(chip c() {}
host a() {}
host b() {})ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:6: error: the program has several host functions and none is named 'main'; name the entry point 'main'
host a() {}
     ^
)diag"},
    {"RankInHost",
     R"ptl(host main() { let r = rank() })ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:23: error: 'rank' is not available in a host function 'main'; it is for kernels and chip functions
host main() { let r = rank() }
                      ^~~~
)diag"},
    {"WaitOffsetOutOfWindow",
     R"ptl(kernel aiv k(s: window i32[4, 1]) { wait(s, [4, 0], eq, 1) }
chip main() {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:45: error: the region [4, 5) of dimension 0 exceeds window 's', whose extent there is 4
kernel aiv k(s: window i32[4, 1]) { wait(s, [4, 0], eq, 1) }
                                            ^~~~~~
)diag"},
    {"GenericUnbindable",
     R"ptl(kernel aiv k<N>(a: in f32[4, 8]) {}
chip main(a: in f32[4, 8]) { k(a) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:14: error: shape parameter 'N' of 'k' is in no parameter's extents, so no call can bind it
kernel aiv k<N>(a: in f32[4, 8]) {}
             ^
t.ptl:1:1: note: write it as an extent of a tensor or window parameter, alone ('N') or times a constant ('2 * N')
kernel aiv k<N>(a: in f32[4, 8]) {}
^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
)diag"},
    {"GenericConflict",
     R"ptl(kernel aiv k<N>(a: in f32[N, 8], b: out f32[N, 8]) {}
chip main(a: in f32[4, 8], b: out f32[2, 8]) { k(a, b) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:53: error: argument 2 of 'k' makes shape parameter 'N' 2, but argument 1 made it 4
chip main(a: in f32[4, 8], b: out f32[2, 8]) { k(a, b) }
                                                    ^
t.ptl:1:37: note: 'b' is declared here
kernel aiv k<N>(a: in f32[N, 8], b: out f32[N, 8]) {}
                                    ^~~~~~~~~~~~~
)diag"},
    {"GenericNotMultiple",
     R"ptl(kernel aiv k<N>(a: in f32[2 * N, 8]) {}
chip main(a: in f32[3, 8]) { k(a) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:32: error: argument 1 of 'k' has extent 3 in dimension 0, which is not a multiple of 2 as 'N' needs
chip main(a: in f32[3, 8]) { k(a) }
                               ^
t.ptl:1:20: note: 'a' is declared here
kernel aiv k<N>(a: in f32[2 * N, 8]) {}
                   ^~~~~~~~~~~~~~~~
)diag"},
    {"GenericRedeclared",
     R"ptl(kernel aiv k<N>(a: in f32[N, 8]) { let N = 3 }
chip main(a: in f32[3, 8]) { k(a) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:40: error: 'N' is a shape parameter of 'k'; it cannot be redeclared in its body
kernel aiv k<N>(a: in f32[N, 8]) { let N = 3 }
                                       ^
)diag"},
    {"GenericMain",
     R"ptl(chip main<N>(a: in f32[N, 8]) {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:6: error: the entry 'main' cannot be generic: its shapes are the program's and must be written out
chip main<N>(a: in f32[N, 8]) {}
     ^~~~
)diag"},
    {"GenericErrorInInstance",
     R"ptl(kernel aiv k<N>(a: in f32[N, 8], b: out f32[N, 8]) { store(load(a, [0, 0], [4, 8]), b, [0, 0]) }
chip main(a: in f32[2, 8], b: out f32[2, 8]) { k(a, b) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:68: error: the region [0, 4) of dimension 0 exceeds 'a', whose extent there is 2
kernel aiv k<N>(a: in f32[N, 8], b: out f32[N, 8]) { store(load(a, [0, 0], [4, 8]), b, [0, 0]) }
                                                                   ^~~~~~
t.ptl:2:48: note: in k<N = 2>, instantiated by this call
chip main(a: in f32[2, 8], b: out f32[2, 8]) { k(a, b) }
                                               ^~~~~~~
)diag"},
    {"GenericOptionWord",
     R"ptl(kernel aiv k<ge, N>(a: in f32[N, 8]) {}
chip main(a: in f32[3, 8]) { k(a) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:14: error: 'ge' is an option word (set add eq ne gt ge lt le); it cannot name a shape parameter
kernel aiv k<ge, N>(a: in f32[N, 8]) {}
             ^~
)diag"},
    {"GenericDuplicate",
     R"ptl(kernel aiv k<N, N>(a: in f32[N, 8]) {}
chip main(a: in f32[3, 8]) { k(a) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:17: error: duplicate shape parameter 'N'
kernel aiv k<N, N>(a: in f32[N, 8]) {}
                ^
)diag"},
    {"GenericParamName",
     R"ptl(kernel aiv k<N>(N: i32, a: in f32[N, 8]) {}
chip main(a: in f32[3, 8]) { k(1, a) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:17: error: 'N' is a shape parameter of 'k'; it cannot also name a parameter
kernel aiv k<N>(N: i32, a: in f32[N, 8]) {}
                ^
)diag"},
    {"GenericShapeSyntax",
     R"ptl(kernel aiv k<4>(a: in f32[4, 8]) {}
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:1:14: error: expected the name of a shape parameter, found '4'
kernel aiv k<4>(a: in f32[4, 8]) {}
             ^
)diag"},
    {"GenericWrongRank",
     R"ptl(kernel aiv k<N>(a: in f32[N, 8]) {}
chip main(a: in f32[3, 8, 2]) { k(a) }
)ptl",
     2, Arch::kA2A3,
     R"diag(t.ptl:2:33: error: cannot infer shape parameter 'N' of 'k' from the arguments of this call
chip main(a: in f32[3, 8, 2]) { k(a) }
                                ^~~~
t.ptl:1:14: note: 'N' is bound by a tensor or window argument whose extent is written 'N' or a constant times it ('2 * N')
kernel aiv k<N>(a: in f32[N, 8]) {}
             ^
)diag"},
};

class DiagnosticsTest : public ::testing::TestWithParam<DiagCase> {};

TEST_P(DiagnosticsTest, ExactText) {
  const DiagCase& c = GetParam();
  std::optional<int64_t> world;
  if (c.world > 0) world = c.world;
  EXPECT_EQ(testing::diagnose(c.program, world, c.arch), c.expected) << "program:\n"
                                                                      << c.program;
}

INSTANTIATE_TEST_SUITE_P(All, DiagnosticsTest, ::testing::ValuesIn(kDiagnosticCases),
                         [](const ::testing::TestParamInfo<DiagCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace pypto::compiler
