#include "compiler/pto/pto_loop_passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace pypto::compiler::pto {

namespace {

constexpr int64_t kMaxTrips = 16;
constexpr size_t kMaxUnrolled = 256;  // instructions of one unrolled loop
// A unit grows to at most kGrowth times its size or kMinBudget instructions,
// whichever is more: unswitching copies loops, and nested ones multiply.
constexpr size_t kGrowth = 8;
constexpr size_t kMinBudget = 2048;

size_t size_of(const std::vector<Inst>& body) {
  size_t n = 0;
  for (const Inst& inst : body) n += 1 + size_of(inst.body) + size_of(inst.else_body);
  return n;
}

void defined(const std::vector<Inst>& body, std::set<int>& regs) {
  for (const Inst& inst : body) {
    if (inst.dst >= 0) regs.insert(inst.dst);
    defined(inst.body, regs);
    defined(inst.else_body, regs);
  }
}

bool contains_for(const std::vector<Inst>& body) {
  for (const Inst& inst : body)
    if (inst.op == Opcode::kFor || contains_for(inst.body) || contains_for(inst.else_body))
      return true;
  return false;
}

void replace_reads(std::vector<Inst>& body, int reg, const Operand& with) {
  for (Inst& inst : body) {
    for (Operand& o : inst.args) {
      if (o.kind == Operand::kReg && o.reg == reg) o = with;
      for (Operand& x : o.index)
        if (x.kind == Operand::kReg && x.reg == reg) x = with;
    }
    replace_reads(inst.body, reg, with);
    replace_reads(inst.else_body, reg, with);
  }
}

void rename(std::vector<Inst>& body, int from, int to) {
  replace_reads(body, from, Operand::of_reg(to));
  for (Inst& inst : body) {
    if (inst.dst == from) inst.dst = to;
    rename(inst.body, from, to);
    rename(inst.else_body, from, to);
  }
}

// A new register of `reg`'s type, named after it.
int fresh(Unit& unit, int reg) {
  const Register original = unit.regs[static_cast<size_t>(reg)];
  for (int n = 1;; ++n) {
    const std::string name = original.name + "_u" + std::to_string(n);
    if (unit.find_reg(name) < 0) {
      unit.regs.push_back({name, original.type, original.shares >= 0 ? original.shares : reg});
      return static_cast<int>(unit.regs.size() - 1);
    }
  }
}

// The registers of `body` that each trip defines afresh: every occurrence in
// the unit is in `body`, and the first, in execution order, is the
// definition by a top-level instruction that does not read it. A copy of the
// body may give them registers of its own.
std::vector<int> locals(const std::vector<Inst>& body, const std::map<int, int>& unit_counts) {
  std::map<int, int> in_body;
  count_registers(body, in_body);
  std::set<int> seen;
  std::vector<int> out;
  auto scan = [&](auto&& self, const std::vector<Inst>& insts, bool top) -> void {
    for (const Inst& inst : insts) {
      for_each_read(inst, [&](int r) { seen.insert(r); });
      if (inst.dst >= 0 && seen.insert(inst.dst).second && top &&
          in_body[inst.dst] == unit_counts.at(inst.dst))
        out.push_back(inst.dst);
      self(self, inst.body, false);
      self(self, inst.else_body, false);
    }
  };
  scan(scan, body, true);
  return out;
}

void rename_locals(std::vector<Inst>& copy, const std::vector<int>& regs, Unit& unit) {
  std::map<int, int> present;
  count_registers(copy, present);
  for (int r : regs)
    if (present.count(r)) rename(copy, r, fresh(unit, r));
}

// ------------------------------------------------------------ unswitching

// Unswitches body[i] (a `for`) on the first `if` of its body it can.
bool unswitch_at(std::vector<Inst>& body, size_t i, Unit& unit, size_t budget) {
  const Inst& loop = body[i];
  std::map<int, int> unit_counts;
  count_registers(unit.body, unit_counts);
  std::set<int> written;
  defined(loop.body, written);
  written.insert(loop.dst);
  for (size_t j = 0; j < loop.body.size(); ++j) {
    const Inst& branch = loop.body[j];
    if (branch.op != Opcode::kIf || branch.args[0].kind != Operand::kReg) continue;
    const int cond = branch.args[0].reg;
    if (unit_counts[cond] != 2) continue;  // defined once, read by this `if` only
    size_t d = j;
    for (size_t e = 0; e < j; ++e)
      if (loop.body[e].dst == cond) d = e;
    if (d == j || !pure_scalar(loop.body[d], unit)) continue;
    bool invariant = true;
    for_each_read(loop.body[d], [&](int r) { invariant = invariant && !written.count(r); });
    if (!invariant) continue;
    if (size_of(unit.body) + size_of(loop.body) + 1 > budget) return false;

    Inst def = loop.body[d];
    Inst then_loop = loop, else_loop = loop;
    auto splice = [&](Inst& copy, const std::vector<Inst>& with) {
      copy.body.erase(copy.body.begin() + static_cast<ptrdiff_t>(j));
      copy.body.insert(copy.body.begin() + static_cast<ptrdiff_t>(j), with.begin(), with.end());
      copy.body.erase(copy.body.begin() + static_cast<ptrdiff_t>(d));
    };
    splice(then_loop, branch.body);
    splice(else_loop, branch.else_body);
    // The else copy gets registers of its own where that is safe, so each
    // register keeps one definition and one use where it had them (the
    // emitter's direct copies count on it).
    std::vector<int> own = locals(loop.body, unit_counts);
    std::map<int, int> in_loop;
    count_registers(loop.body, in_loop);
    if (unit_counts[loop.dst] == in_loop[loop.dst] + 1) own.push_back(loop.dst);
    std::vector<Inst> wrapped{std::move(else_loop)};
    rename_locals(wrapped, own, unit);

    Inst choice;
    choice.op = Opcode::kIf;
    choice.args = {Operand::of_reg(cond)};
    choice.body = {std::move(then_loop)};
    choice.else_body = std::move(wrapped);
    choice.has_else = true;
    choice.span = branch.span;
    choice.line = branch.line;
    choice.source_line = branch.source_line;
    body[i] = std::move(choice);
    body.insert(body.begin() + static_cast<ptrdiff_t>(i), std::move(def));
    return true;
  }
  return false;
}

// ------------------------------------------------------------ unrolling

bool unroll_at(std::vector<Inst>& body, size_t i, Unit& unit, size_t budget) {
  const Inst& loop = body[i];
  for (const Operand& o : loop.args)
    if (o.kind != Operand::kInt) return false;
  const int64_t lo = loop.args[0].int_value, hi = loop.args[1].int_value,
                step = loop.args[2].int_value;
  if (step <= 0) return false;
  const __int128 span = static_cast<__int128>(hi) - lo;
  const int64_t trips = span <= 0 ? 0 : static_cast<int64_t>((span + step - 1) / step);
  if (trips > kMaxTrips || contains_for(loop.body)) return false;
  const size_t n = size_of(loop.body);
  if (n * static_cast<size_t>(trips) > kMaxUnrolled) return false;
  if (size_of(unit.body) + n * static_cast<size_t>(trips) > budget + n + 1) return false;
  std::map<int, int> unit_counts, in_loop;
  count_registers(unit.body, unit_counts);
  count_registers(loop.body, in_loop);
  if (unit_counts[loop.dst] != in_loop[loop.dst] + 1) return false;  // read after the loop
  std::set<int> written;
  defined(loop.body, written);
  if (written.count(loop.dst)) return false;

  const std::vector<int> own = locals(loop.body, unit_counts);
  std::vector<Inst> out;
  for (int64_t t = 0; t < trips; ++t) {
    std::vector<Inst> copy = loop.body;
    replace_reads(copy, loop.dst, Operand::of_int(lo + t * step));
    if (t > 0) rename_locals(copy, own, unit);
    out.insert(out.end(), copy.begin(), copy.end());
  }
  body.erase(body.begin() + static_cast<ptrdiff_t>(i));
  body.insert(body.begin() + static_cast<ptrdiff_t>(i), out.begin(), out.end());
  return true;
}

size_t budget_of(const Unit& unit) { return std::max(kMinBudget, kGrowth * size_of(unit.body)); }

// Rewrites body[i], a `for`, or returns false.
using LoopRewrite = bool (*)(std::vector<Inst>& body, size_t i, Unit& unit, size_t budget);

// Rewrites the first loop `at` can, inner loops first.
bool rewrite_one(std::vector<Inst>& body, Unit& unit, size_t budget, LoopRewrite at) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (rewrite_one(body[i].body, unit, budget, at) ||
        rewrite_one(body[i].else_body, unit, budget, at))
      return true;
    if (body[i].op == Opcode::kFor && at(body, i, unit, budget)) return true;
  }
  return false;
}

int repeat(Unit& unit, size_t budget, LoopRewrite at) {
  int n = 0;
  while (rewrite_one(unit.body, unit, budget, at)) ++n;
  return n;
}

}  // namespace

int unswitch_loops(Unit& unit) { return repeat(unit, budget_of(unit), unswitch_at); }

int unroll_loops(Unit& unit) { return repeat(unit, budget_of(unit), unroll_at); }

void run_loop_passes(Unit& unit) {
  const size_t budget = budget_of(unit);
  repeat(unit, budget, unswitch_at);
  repeat(unit, budget, unroll_at);
}

}  // namespace pypto::compiler::pto
