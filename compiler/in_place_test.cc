// In-place parameters (`x: inout f32[R, C] at w`, docs/language.md): what the
// checker refuses, what the host plan records, and that the reference
// interpreter runs the tensor in the window's memory, as a rank agent does.
#include <gtest/gtest.h>

#include "artifact/host_orch.h"
#include "compiler/codegen/codegen_host_plan.h"
#include "compiler/interp/reference_interpreter.h"
#include "compiler/test_util.h"

namespace pypto::compiler {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A kernel that only sees the window: it doubles it (x's data) and adds the
// peer's copy; `total` (out, in window acc) returns what acc holds after
// adding x into it.
const char* const kProgram = R"(
kernel aiv twice_plus_peer(w: window f32[2, 8], flag: window i32[WORLD, 1]) {
  let me = rank()
  let next = (me + 1) % WORLD
  let prev = (me + WORLD - 1) % WORLD
  notify(flag, next, [me, 0], 1, set)  // my w holds my x
  wait(flag, [prev, 0], ge, 1)
  let other = remote_load(w, prev, [0, 0], [2, 8])
  notify(flag, prev, [me, 0], 2, set)  // done reading prev's w
  wait(flag, [next, 0], ge, 2)
  store(add(mul(load(w, [0, 0], [2, 8]), 2.0), other), w, [0, 0])
}
kernel aiv accumulate(x: in f32[2, 8], acc: window f32[2, 8]) {
  store(add(load(acc, [0, 0], [2, 8]), load(x, [0, 0], [2, 8])), acc, [0, 0])
}
chip step(x: inout f32[2, 8] at w, w: window f32[2, 8], flag: window i32[WORLD, 1]) {
  twice_plus_peer(w, flag)
}
chip sum_into(x: in f32[2, 8], total: out f32[2, 8] at acc, acc: window f32[2, 8]) {
  accumulate(x, acc)
}
host main(x: inout f32[WORLD, 2, 8], y: in f32[WORLD, 2, 8], total: out f32[WORLD, 2, 8]) {
  let w = window_buffer(f32[2, 8])
  let flag = window_buffer(i32[WORLD, 1])
  let acc = window_buffer(f32[2, 8])
  for r in 0 .. WORLD { step(x[r], w, flag) on r }
  for r in 0 .. WORLD { sum_into(y[r], total[r], acc) on r }
}
)";

TEST(InPlaceTest, TheHostPlanPlacesTheArgumentInTheBoundWindow) {
  auto run = testing::run_front_end({{"t.ptl", kProgram}}, 2);
  ASSERT_EQ(run.errors, 0) << run.diagnostics;
  const HostPlan plan = plan_host(*run.result.entry, FunctionTable(*run.program), 2);
  ASSERT_EQ(plan.orch.dispatches.size(), 4u);
  EXPECT_EQ(plan.orch.dispatches[1].args[0], HostArg::host("x", {1, 0, 0}, {1, 2, 8}, "w"));
  EXPECT_EQ(plan.orch.dispatches[3].args[0], HostArg::host("y", {1, 0, 0}, {1, 2, 8}));
  EXPECT_EQ(plan.orch.dispatches[3].args[1], HostArg::host("total", {1, 0, 0}, {1, 2, 8}, "acc"));
}

TEST(InPlaceTest, TheInterpreterRunsThePlacedTensorInTheWindow) {
  for (int64_t world : {1, 3}) {
    auto run = testing::run_front_end({{"t.ptl", kProgram}}, world);
    ASSERT_EQ(run.errors, 0) << run.diagnostics;
    std::vector<Tensor> args = seeded_arguments(*run.result.entry, 3);
    const Tensor x = args[0].contiguous();
    InterpretOptions options;
    options.world = world;
    interpret(*run.program, *run.result.entry, args, options);
    const float* before = x.data_as<float>();
    const float* after = args[0].data_as<float>();
    const float* y = args[1].data_as<float>();
    const float* total = args[2].data_as<float>();
    for (int64_t r = 0; r < world; ++r) {
      const int64_t prev = (r + world - 1) % world;
      for (int64_t k = 0; k < 16; ++k) {
        // x went into w, the kernel worked on w, x came back from w.
        EXPECT_EQ(after[r * 16 + k], 2 * before[r * 16 + k] + before[prev * 16 + k]) << world;
        // total is acc: zeroed, then y added into it.
        EXPECT_EQ(total[r * 16 + k], y[r * 16 + k]) << world;
      }
    }
  }
}

TEST(InPlaceTest, PlacementsTheCheckerRefuses) {
  const std::string head =
      "kernel aiv k(w: window f32[2, 8]) {}\n"
      "host main(x: inout f32[WORLD, 2, 8]) {\n"
      "  let w = window_buffer(f32[2, 8])\n"
      "  for r in 0 .. WORLD { c(x[r], w) on r }\n"
      "}\n";
  EXPECT_TRUE(has(testing::diagnose(head + "chip c(x: inout f32[2, 8] at v, w: window f32[2, 8]) "
                                           "{ k(w) }\n"),
                  "'v' is not a window parameter of 'c'"));
  EXPECT_TRUE(has(testing::diagnose(head + "chip c(x: inout f32[2, 8] at w, w: window i32[2, 8]) "
                                           "{}\n"),
                  "a tensor placed in a window needs the window's dtype"));
  EXPECT_TRUE(has(testing::diagnose(head + "chip c(x: inout f32[2, 8] at w, w: window f32[1, 8]) "
                                           "{}\n"),
                  "'x' (f32[2, 8], 64 bytes) does not fit window 'w' (f32[1, 8], 32 bytes)"));
  EXPECT_TRUE(has(testing::diagnose("kernel aiv k(x: in f32[2, 8] at w, w: window f32[2, 8]) {}\n"
                                    "chip main() {}\n"),
                  "only a tensor parameter of a chip function can be placed in a window"));
  EXPECT_TRUE(has(testing::diagnose(
                      "chip c(x: in f32[2, 8] at w, y: in f32[2, 8] at w, w: window f32[4, 8]) {}\n"
                      "chip main() {}\n"),
                  "window 'w' already holds parameter 'x'"));
  EXPECT_TRUE(has(testing::diagnose(
                      head + "chip c(x: inout f32[2, 8], w: window f32[2, 8]) { d(x, w) }\n"
                             "chip d(x: inout f32[2, 8] at w, w: window f32[2, 8]) {}\n"),
                  "so it must be dispatched from a host function"));
  EXPECT_TRUE(has(testing::diagnose(head + "chip c(x: inout f32[2, 8] at, w: window f32[2, 8]) "
                                           "{}\n"),
                  "expected the name of a window parameter after 'at'"));
}

}  // namespace
}  // namespace pypto::compiler
