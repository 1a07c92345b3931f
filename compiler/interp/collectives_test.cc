// The collectives library (compiler/lib/collectives.ptl) does what its header
// says. The reference interpreter runs every collective at several world
// sizes on seeded data; each result is compared with the same collective
// computed directly here. (The end-to-end tests then check that the generated
// code and the runtime agree with the interpreter.)
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "compiler/interp/reference_interpreter.h"
#include "compiler/test_util.h"

namespace pypto::compiler {
namespace {

std::string library_text() { return testing::read_library("collectives.ptl"); }

const char* const kProgram = R"(import "collectives.ptl"
const R = 2
const C = 8
host main(sum: inout f32[WORLD, R, C], mx: inout f32[WORLD, R, C], mn: inout f32[WORLD, R, C],
          ring_sum: inout f32[WORLD, WORLD * R, C], ring_max: inout f32[WORLD, WORLD * R, C],
          ring_min: inout f32[WORLD, WORLD * R, C], x: in f32[WORLD, R, C],
          gathered: out f32[WORLD, WORLD * R, C], gathered_cols: out f32[WORLD, R, WORLD * C],
          q: in f32[WORLD, WORLD * R, C], scattered: out f32[WORLD, R, C],
          exchanged: out f32[WORLD, WORLD * R, C], bcast: inout f32[WORLD, R, C]) {
  allreduce_sum(sum)
  allreduce_max(mx)
  allreduce_min(mn)
  allreduce_ring_sum(ring_sum)
  allreduce_ring_max(ring_max)
  allreduce_ring_min(ring_min)
  allgather(x, gathered)
  allgather_cols(x, gathered_cols)
  reduce_scatter(q, scattered)
  all_to_all(q, exchanged)
  barrier()
  broadcast(bcast, WORLD - 1)
}
)";

enum Arg {
  kSum, kMax, kMin, kRingSum, kRingMax, kRingMin, kX, kGathered, kGatheredCols, kQ, kScattered,
  kExchanged, kBroadcast
};

class CollectivesTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(CollectivesTest, EveryCollectiveComputesWhatItsHeaderSays) {
  const int64_t W = GetParam(), R = 2, C = 8;
  auto run = testing::run_front_end({{"t.ptl", kProgram}, {"lib/collectives.ptl", library_text()}},
                                    W);
  ASSERT_EQ(run.errors, 0) << run.diagnostics;
  std::vector<Tensor> args = seeded_arguments(*run.result.entry, 7);
  std::vector<Tensor> before;
  for (const Tensor& t : args) before.push_back(t.contiguous());
  InterpretOptions options;
  options.world = W;
  interpret(*run.program, *run.result.entry, args, options);

  // in(a, r, i, j): element [r, i, j] of argument a before the run; out(...) after.
  auto in = [&](Arg a, int64_t r, int64_t i, int64_t j) {
    const Tensor& t = before[a];
    return t.data_as<float>()[(r * t.shape()[1] + i) * t.shape()[2] + j];
  };
  auto out = [&](Arg a, int64_t r, int64_t i, int64_t j) {
    const Tensor& t = args[a];
    return t.data_as<float>()[(r * t.shape()[1] + i) * t.shape()[2] + j];
  };
  using Reduce = std::function<float(float, float)>;
  auto reduced = [&](Arg a, int64_t i, int64_t j, const Reduce& op) {
    float acc = in(a, 0, i, j);
    for (int64_t s = 1; s < W; ++s) acc = op(acc, in(a, s, i, j));
    return acc;
  };
  const Reduce plus = [](float x, float y) { return x + y; };
  const Reduce maxf = [](float x, float y) { return std::max(x, y); };
  const Reduce minf = [](float x, float y) { return std::min(x, y); };
  for (int64_t r = 0; r < W; ++r) {
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        EXPECT_EQ(out(kSum, r, i, j), reduced(kSum, i, j, plus)) << r << " " << i << " " << j;
        EXPECT_EQ(out(kMax, r, i, j), reduced(kMax, i, j, maxf));
        EXPECT_EQ(out(kMin, r, i, j), reduced(kMin, i, j, minf));
        EXPECT_EQ(out(kBroadcast, r, i, j), in(kBroadcast, W - 1, i, j));
        float rs = 0;
        for (int64_t s = 0; s < W; ++s) rs += in(kQ, s, r * R + i, j);
        EXPECT_EQ(out(kScattered, r, i, j), rs);
        for (int64_t s = 0; s < W; ++s) {
          EXPECT_EQ(out(kGathered, r, s * R + i, j), in(kX, s, i, j));
          EXPECT_EQ(out(kGatheredCols, r, i, s * C + j), in(kX, s, i, j));
          EXPECT_EQ(out(kExchanged, r, s * R + i, j), in(kQ, s, r * R + i, j));
        }
      }
    for (int64_t i = 0; i < W * R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        EXPECT_EQ(out(kRingSum, r, i, j), reduced(kRingSum, i, j, plus));
        EXPECT_EQ(out(kRingMax, r, i, j), reduced(kRingMax, i, j, maxf));
        EXPECT_EQ(out(kRingMin, r, i, j), reduced(kRingMin, i, j, minf));
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, CollectivesTest, ::testing::Values(1, 2, 3, 5),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return "World" + std::to_string(info.param);
                         });

TEST(CollectivesDiagnosticsTest, ShapesThatDoNotSplitIntoRingChunksAreReported) {
  auto run = testing::run_front_end(
      {{"t.ptl", "import \"collectives.ptl\"\nhost main(x: inout f32[WORLD, 5, 4]) {\n"
                 "  allreduce_ring_sum(x)\n}\n"},
       {"lib/collectives.ptl", library_text()}},
      2);
  EXPECT_NE(run.diagnostics.find("t.ptl:3:22: error: argument 1 of 'allreduce_ring_sum' has "
                                 "extent 5 in dimension 1, which is not a multiple of 2 as 'B' "
                                 "needs"),
            std::string::npos)
      << run.diagnostics;
}

}  // namespace
}  // namespace pypto::compiler
