#include "compiler/check/checker.h"

#include <gtest/gtest.h>


#include "compiler/test_util.h"

namespace pypto::compiler {
namespace {

using testing::diagnose;
using testing::run_front_end;

std::string testdata(const std::string& name) { return testing::read_testdata(name); }

TEST(CheckerTest, AllreduceExampleChecksCleanAtWorld2And8) {
  for (int64_t world : {2, 8}) {
    auto run = run_front_end({{"t.ptl", testdata("reduce.ptl")}}, world);
    EXPECT_EQ(run.diagnostics, "") << "world " << world;
    EXPECT_TRUE(run.result.ok);
    EXPECT_TRUE(run.result.distributed);
    ASSERT_NE(run.result.entry, nullptr);
    EXPECT_EQ(run.result.entry->name, "main");
    EXPECT_EQ(run.result.world, world);
  }
}

TEST(CheckerTest, SoftmaxIsAnL2Program) {
  auto run = run_front_end({{"t.ptl", testdata("softmax.ptl")}}, std::nullopt);
  EXPECT_EQ(run.diagnostics, "");
  EXPECT_FALSE(run.result.distributed);
  ASSERT_NE(run.result.entry, nullptr);
  EXPECT_EQ(run.result.entry->name, "main");
  EXPECT_EQ(run.result.entry->kind, FuncKind::kChip);
}

TEST(CheckerTest, ColumnShardedMatmulChecksCleanOnBothArchs) {
  for (Arch arch : {Arch::kA2A3, Arch::kA5}) {
    for (int64_t world : {1, 4}) {
      EXPECT_EQ(
          run_front_end({{"t.ptl", testdata("matmul_colshard.ptl")}}, world, arch).diagnostics, "");
    }
  }
}

TEST(CheckerTest, ReduceWithWrongWorldShapes) {
  // WORLD is folded into shapes: the host's windows must match the chip's parameters.
  const std::string text =
      "const SIZE = 16\n"
      "kernel aiv k(s: window i32[WORLD, 1]) { notify(s, 0, [rank(), 0], 1, add) }\n"
      "chip c(s: window i32[WORLD, 1]) { k(s) }\n"
      "host main() {\n"
      "  let s = window_buffer(i32[4, 1])\n"
      "  for r in 0 .. WORLD { c(s) on r }\n"
      "}\n";
  EXPECT_EQ(diagnose(text, 4), "");
  EXPECT_EQ(diagnose(text, 8),
            "t.ptl:6:27: error: argument 1 of 'c' (parameter 's'): expected i32[8, 1], got "
            "i32[4, 1]\n"
            "  for r in 0 .. WORLD { c(s) on r }\n"
            "                          ^\n"
            "t.ptl:3:8: note: 's' is declared here\n"
            "chip c(s: window i32[WORLD, 1]) { k(s) }\n"
            "       ^\n");
}

TEST(CheckerTest, AnnotatesTypesAndConstants) {
  SourceManager sm;
  DiagnosticEngine d(sm);
  LoadOptions load;
  load.read = [](const std::string&) -> std::optional<std::string> {
    return std::string(
        "const T = 4 * 4\n"
        "kernel aiv k(x: in f32[T, 64], y: out f32[T, 1]) {\n"
        "  let m = row_max(load(x, [0, 0], [T, 64]))\n"
        "  store(m, y, [0, 0])\n"
        "}\n"
        "chip main(x: in f32[T, 64], y: out f32[T, 1]) { k(x, y) }\n");
  };
  Program p = load_program("t.ptl", load, sm, d);
  CheckOptions o;
  const CheckResult r = check(p, o, d);
  ASSERT_TRUE(r.ok) << d.render();
  const Module& m = p.modules.front();
  EXPECT_EQ(m.consts[0].value->const_value, 16);
  const Function& k = m.functions[0];
  EXPECT_EQ(to_string(k.params[0].type), "in tensor f32[16, 64]");
  const Stmt& let = *k.body[0];
  EXPECT_EQ(to_string(let.value->type), "f32 tile[16, 1]");
  EXPECT_EQ(to_string(let.value->args[0]->type), "f32 tile[16, 64]");
}

TEST(CheckerTest, BroadcastsAndScalarForms) {
  EXPECT_EQ(diagnose("kernel aiv k(x: in f32[8, 32], y: out f32[8, 32]) {\n"
                     "  let t = load(x, [0, 0], [8, 32])\n"
                     "  let r = sub(t, row_max(t))\n"
                     "  let c = mul(r, load(x, [0, 0], [1, 32]))\n"
                     "  let s = add(div(c, 2.0), 1)\n"
                     "  store(max(neg(sqrt(exp(s))), 0.0), y, [0, 0])\n"
                     "}\n"
                     "chip main(x: in f32[8, 32], y: out f32[8, 32]) { k(x, y) }\n",
                     std::nullopt),
            "");
}

TEST(CheckerTest, CommunicationBuiltins) {
  EXPECT_EQ(
      diagnose("kernel aiv k(x: inout f32[2, 64], w: window f32[2, 64],\n"
               "             s: window i32[WORLD, 1]) {\n"
               "  let me = rank()\n"
               "  let peer = (me + 1) % world()\n"
               "  put(x, w, peer, [0, 0])\n"
               "  notify(s, peer, [me, 0], 1, set)\n"
               "  wait(s, [me, 0], eq, 1)\n"
               "  get(x, w, peer, [0, 0])\n"
               "  remote_store(load(x, [0, 0], [2, 64]), w, peer, [0, 0], add)\n"
               "  remote_store(remote_load(w, peer, [1, 0], [1, 64]), w, peer, [0, 0])\n"
               "}\n"
               "chip c(x: inout f32[2, 64], w: window f32[2, 64], s: window i32[WORLD, 1]) {\n"
               "  k(x, w, s)\n"
               "}\n"
               "host main(x: inout f32[WORLD, 2, 64]) {\n"
               "  let w = window_buffer(f32[2, 64])\n"
               "  let s = window_buffer(i32[WORLD, 1])\n"
               "  for r in 0 .. WORLD { c(x[r], w, s) on r }\n"
               "}\n",
               4),
      "");
}

TEST(CheckerTest, ChipIntermediatesAndOutToInDependencies) {
  // An `out` tensor of one task feeds the next: the runtime orders them.
  EXPECT_EQ(diagnose("kernel aiv twice(x: in f32[4, 16], y: out f32[4, 16]) {\n"
                     "  store(mul(load(x, [0, 0], [4, 16]), 2.0), y, [0, 0])\n"
                     "}\n"
                     "chip main(x: in f32[4, 16], y: out f32[4, 16]) {\n"
                     "  let tmp = tensor(f32[4, 16])\n"
                     "  twice(x, tmp)\n"
                     "  twice(tmp, y)\n"
                     "}\n",
                     std::nullopt),
            "");
}

TEST(CheckerTest, HostDispatchToOneRankAndHostHelpers) {
  EXPECT_EQ(diagnose("chip c() {}\n"
                     "host helper() { c() on 0 }\n"
                     "host main() {\n"
                     "  helper()\n"
                     "  for r in 0 .. WORLD { c() on (r + 1) % WORLD }\n"
                     "}\n",
                     8),
            "");
}

TEST(CheckerTest, LimitsFollowTheArchitecture) {
  // 224 x 256 f32 = 224 KiB: over a2a3's 192 KiB UB, within a5's 256 KiB.
  const std::string text =
      "kernel aiv k(x: in f32[224, 256]) { let t = load(x, [0, 0], [224, 256]) }\n"
      "chip main(x: in f32[224, 256]) { k(x) }\n";
  EXPECT_NE(diagnose(text, std::nullopt, Arch::kA2A3), "");
  EXPECT_EQ(diagnose(text, std::nullopt, Arch::kA5), "");
}

}  // namespace
}  // namespace pypto::compiler
