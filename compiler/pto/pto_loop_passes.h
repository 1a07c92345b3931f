// Loop passes over a PTO unit, run by pto_emit_cpp before it emits C++ (the
// .pto listing stays as lowered; docs/pto-format.md, "Loop passes"). They
// straighten loops whose shape is known at compile time, so that the
// emitter's fused groups see one run of instructions: the mesh allreduce's
// `for k in 1 .. WORLD { if op == 0 { acc = add(acc, remote_load(...)) } ... }`
// becomes, per op, `acc = load; acc = add(acc, peer 1); ...; store; remote
// store to peer 1; ...`, which is one pass over every window.
#pragma once

#include "compiler/pto/pto_ir.h"

namespace pypto::compiler::pto {

// Loop unswitching: a `for` whose body holds, at its top level, an `if` on a
// condition the loop does not change (defined in the body by a pure_scalar
// instruction of parameters, constants and registers the loop never writes,
// and read only by that `if`) becomes `if cond { the loop with the then
// branch } else { the loop with the else branch }`. Returns how many loops it
// unswitched.
int unswitch_loops(Unit& unit);

// Loop unrolling: a `for` with constant bounds, at most 16 trips, no loop
// inside and at most 256 instructions once unrolled becomes its body once per
// trip, the loop variable replaced by its value. Returns how many loops it
// unrolled (a loop of no trips is removed).
int unroll_loops(Unit& unit);

// Both, unswitching first, within a bound on the unit's growth.
void run_loop_passes(Unit& unit);

}  // namespace pypto::compiler::pto
