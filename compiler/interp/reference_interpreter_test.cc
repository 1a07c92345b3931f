#include "compiler/interp/reference_interpreter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "compiler/check/checker.h"
#include "compiler/frontend/loader.h"
#include "compiler/interp/interp_values.h"
#include "compiler/test_util.h"
#include "pypto/error.h"

namespace pypto::compiler {
namespace {

std::string testdata(const std::string& name) { return compiler::testing::read_testdata(name); }

// A checked program together with its sources (so run-time errors carry file:line:col).
struct Checked {
  std::unique_ptr<SourceManager> sources = std::make_unique<SourceManager>();
  std::unique_ptr<Program> program;
  CheckResult result;
  int64_t world = 1;

  const Function& entry() const { return *result.entry; }
  InterpretOptions options() const {
    InterpretOptions o;
    o.world = world;
    o.sources = sources.get();
    return o;
  }
  void run(std::vector<Tensor>& args) const { interpret(*program, entry(), args, options()); }
};

Checked check_files(const std::map<std::string, std::string>& files, std::optional<int64_t> world) {
  Checked c;
  DiagnosticEngine diags(*c.sources);
  LoadOptions load;
  load.lib_dirs = {"lib"};
  load.read = [&files](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  c.program = std::make_unique<Program>(load_program("t.ptl", load, *c.sources, diags));
  if (!diags.has_errors()) {
    CheckOptions options;
    options.world = world;
    c.result = check(*c.program, options, diags);
  }
  EXPECT_FALSE(diags.has_errors()) << diags.render();
  c.world = c.result.world;
  return c;
}

Checked check_text(const std::string& text, std::optional<int64_t> world) {
  return check_files({{"t.ptl", text}}, world);
}

// Element i (row-major) of a contiguous f32 / i32 tensor.
float f32_at(const Tensor& t, int64_t i) { return t.data_as<float>()[i]; }
int32_t i32_at(const Tensor& t, int64_t i) { return t.data_as<int32_t>()[i]; }
float f16_at(const Tensor& t, int64_t i) { return interp::f16_to_float(t.data_as<uint16_t>()[i]); }

// The ProgramError message of running `c` on seeded arguments; "" when it runs fine.
std::string run_error(const Checked& c) {
  std::vector<Tensor> args = seeded_arguments(c.entry(), 1);
  try {
    c.run(args);
  } catch (const ProgramError& e) {
    return e.what();
  }
  return "";
}

// ------------------------------------------------------------ values

TEST(ReferenceInterpreterTest, HalfPrecisionConversionsRoundToNearestEven) {
  using interp::bf16_to_float;
  using interp::f16_to_float;
  using interp::float_to_bf16;
  using interp::float_to_f16;
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);         // halfway to 2^16: rounds to even, infinity
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f), 0x3c00);  // tie: stays even
  EXPECT_EQ(float_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie: up to even
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // above the tie
  EXPECT_EQ(float_to_f16(0x1p-24f), 0x0001);                    // smallest subnormal
  EXPECT_EQ(float_to_f16(0x1p-25f), 0x0000);                    // tie with zero: even
  EXPECT_EQ(float_to_f16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(float_to_f16(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(NAN))));
  EXPECT_EQ(f16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_float(0xfc00), -INFINITY);
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {  // every finite f16 survives a round trip
    const auto h = static_cast<uint16_t>(bits);
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_f16(f16_to_float(h)), h) << bits;
  }
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);      // tie: even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie: up to even
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(ReferenceInterpreterTest, SeededArgumentsAreDeterministicAndExact) {
  const Checked c = check_text(
      "kernel aiv k(a: in f32[4, 8], b: in f16[4, 8], c: in i8[4, 8], d: in bf16[4, 8],\n"
      "             e: in u8[4, 8], y: out f32[4, 8]) { store(load(a, [0, 0], [4, 8]), y, [0, 0]) "
      "}\n"
      "chip main(a: in f32[4, 8], b: in f16[4, 8], c: in i8[4, 8], d: in bf16[4, 8],\n"
      "          e: in u8[4, 8], y: out f32[4, 8], n: i32) { k(a, b, c, d, e, y) }\n",
      std::nullopt);
  const std::vector<Tensor> x = seeded_arguments(c.entry(), 7);
  const std::vector<Tensor> again = seeded_arguments(c.entry(), 7);
  const std::vector<Tensor> other = seeded_arguments(c.entry(), 8);
  ASSERT_EQ(x.size(), 7u);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].dtype(), c.entry().params[i].dtype) << i;
    ASSERT_EQ(x[i].nbytes(), again[i].nbytes());
    EXPECT_EQ(std::memcmp(x[i].data(), again[i].data(), x[i].nbytes()), 0) << "param " << i;
  }
  EXPECT_EQ(x[0].shape(), (Shape{4, 8}));
  EXPECT_NE(std::memcmp(x[0].data(), other[0].data(), x[0].nbytes()), 0);
  EXPECT_NE(std::memcmp(x[0].data(), x[1].data(), 32), 0);  // parameters get their own streams
  bool varied = false;
  for (int64_t i = 0; i < 32; ++i) {
    const float a = f32_at(x[0], i);
    EXPECT_EQ(a * 8, std::round(a * 8)) << "f32 values are multiples of 1/8";
    EXPECT_LE(std::fabs(a), 2.0f);
    const float h = f16_at(x[1], i);
    EXPECT_EQ(h * 8, std::round(h * 8));
    const int8_t q = x[2].data_as<int8_t>()[i];
    EXPECT_GE(q, -8);
    EXPECT_LE(q, 8);
    const float b = interp::bf16_to_float(x[3].data_as<uint16_t>()[i]);
    EXPECT_EQ(b * 8, std::round(b * 8));
    EXPECT_LE(x[4].data_as<uint8_t>()[i], 16);
    EXPECT_EQ(f32_at(x[5], i), 0.0f) << "out parameters are zero";
    varied = varied || a != f32_at(x[0], 0);
  }
  EXPECT_TRUE(varied);
  EXPECT_EQ(x[6].numel(), 1);  // the scalar, as a one-element tensor
  EXPECT_GE(x[6].data_as<int32_t>()[0], 1);
}

// ------------------------------------------------------------ the example programs

TEST(ReferenceInterpreterTest, AllreduceExampleSumsEveryRanksRowAtWorld2And8) {
  for (int64_t world : {2, 8}) {
    const Checked c = check_text(testdata("reduce.ptl"), world);
    std::vector<Tensor> args = seeded_arguments(c.entry(), 42);
    const Tensor x = args[0].contiguous();
    c.run(args);
    const Tensor& y = args[1];
    ASSERT_EQ(y.shape(), (Shape{world, 1, 256}));
    for (int64_t r = 0; r < world; ++r) {
      for (int64_t j = 0; j < 256; ++j) {
        double sum = 0;
        for (int64_t s = 0; s < world; ++s) sum += f32_at(x, s * 256 + j);
        ASSERT_EQ(f32_at(y, r * 256 + j), sum)
            << "world " << world << " rank " << r << " col " << j;
      }
    }
  }
}

TEST(ReferenceInterpreterTest, SoftmaxRowsSumToOneAndMatchADirectComputation) {
  const Checked c = check_text(testdata("softmax.ptl"), std::nullopt);
  std::vector<Tensor> args = seeded_arguments(c.entry(), 3);
  c.run(args);
  const Tensor& x = args[0];
  const Tensor& y = args[1];
  constexpr int64_t kN = 1024, kD = 128;
  for (int64_t i = 0; i < kN; ++i) {
    double m = -std::numeric_limits<double>::infinity(), sum = 0, total = 0;
    for (int64_t j = 0; j < kD; ++j) m = std::max<double>(m, f32_at(x, i * kD + j));
    for (int64_t j = 0; j < kD; ++j) sum += std::exp(f32_at(x, i * kD + j) - m);
    for (int64_t j = 0; j < kD; ++j) {
      const double expected = std::exp(f32_at(x, i * kD + j) - m) / sum;
      const float got = f32_at(y, i * kD + j);
      ASSERT_NEAR(got, expected, 1e-6 + 1e-5 * expected) << "row " << i << " col " << j;
      total += got;
    }
    ASSERT_NEAR(total, 1.0, 1e-5) << "row " << i;
  }
}

TEST(ReferenceInterpreterTest, ColumnShardedMatmulEqualsATripleLoop) {
  constexpr int64_t kWorld = 2, kM = 256, kK = 512, kNL = 128;
  const Checked c = check_text(testdata("matmul_colshard.ptl"), kWorld);
  std::vector<Tensor> args = seeded_arguments(c.entry(), 5);
  c.run(args);
  const Tensor& a = args[0];
  const Tensor& b = args[1];
  const Tensor& out = args[2];
  ASSERT_EQ(out.shape(), (Shape{kWorld, kM, kNL}));
  for (int64_t r = 0; r < kWorld; ++r) {
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < kNL; ++j) {
        double sum = 0;  // exact: multiples of 1/64, far below 2^24 of them
        for (int64_t k = 0; k < kK; ++k)
          sum += static_cast<double>(f16_at(a, i * kK + k)) * f16_at(b, (r * kK + k) * kNL + j);
        ASSERT_EQ(f32_at(out, (r * kM + i) * kNL + j), sum) << r << " " << i << " " << j;
      }
    }
  }
}

// ------------------------------------------------------------ communication

TEST(ReferenceInterpreterTest, RingShiftWithPutAndNotify) {
  const std::string ring =
      "const N = 64\n"
      "kernel aiv ring_step(x: in f32[1, N], y: out f32[1, N], buf: window f32[1, N],\n"
      "                     sig: window i32[1, 1]) {\n"
      "  let next = (rank() + 1) % world()\n"
      "  put(x, buf, next, [0, 0])\n"
      "  notify(sig, next, [0, 0], 1, set)\n"
      "  wait(sig, [0, 0], eq, 1)\n"
      "  store(load(buf, [0, 0], [1, N]), y, [0, 0])\n"
      "}\n"
      "chip ring(x: in f32[1, N], y: out f32[1, N], buf: window f32[1, N],\n"
      "          sig: window i32[1, 1]) { ring_step(x, y, buf, sig) }\n"
      "host main(x: in f32[WORLD, 1, N], y: out f32[WORLD, 1, N]) {\n"
      "  let buf = window_buffer(f32[1, N]); let sig = window_buffer(i32[1, 1])\n"
      "  for r in 0 .. WORLD { ring(x[r], y[r], buf, sig) on r }\n"
      "}\n";
  for (int64_t world : {2, 3, 8}) {
    const Checked c = check_text(ring, world);
    for (uint64_t round = 0; round < 5; ++round) {  // thread interleavings differ run to run
      std::vector<Tensor> args = seeded_arguments(c.entry(), round);
      c.run(args);
      for (int64_t r = 0; r < world; ++r) {
        const int64_t prev = (r + world - 1) % world;
        for (int64_t j = 0; j < 64; ++j)
          ASSERT_EQ(f32_at(args[1], r * 64 + j), f32_at(args[0], prev * 64 + j))
              << "world " << world << " rank " << r;
      }
    }
  }
}

TEST(ReferenceInterpreterTest, AccumulateOnRankZeroWithRemoteAddThenGet) {
  // Every rank adds its row into rank 0's window (remote_store add) and counts
  // itself in rank 0's cell; rank 0 waits for all, then releases the others,
  // which fetch the total with get.
  const Checked c = check_text(
      "kernel aiv acc(x: in i32[2, 16], y: out i32[2, 16], total: window i32[2, 16],\n"
      "               sig: window i32[1, 1]) {\n"
      "  remote_store(load(x, [0, 0], [2, 16]), total, 0, [0, 0], add)\n"
      "  notify(sig, 0, [0, 0], 1, add)\n"
      "  if rank() == 0 {\n"
      "    wait(sig, [0, 0], eq, world())\n"
      "    for p in 1 .. world() { notify(sig, p, [0, 0], -1, set) }\n"
      "    store(load(total, [0, 0], [2, 16]), y, [0, 0])\n"
      "  } else {\n"
      "    wait(sig, [0, 0], lt, 0)\n"
      "    get(y, total, 0, [0, 0])\n"
      "  }\n"
      "}\n"
      "chip c(x: in i32[2, 16], y: out i32[2, 16], total: window i32[2, 16],\n"
      "       sig: window i32[1, 1]) { acc(x, y, total, sig) }\n"
      "host main(x: in i32[WORLD, 2, 16], y: out i32[WORLD, 2, 16]) {\n"
      "  let total = window_buffer(i32[2, 16]); let sig = window_buffer(i32[1, 1])\n"
      "  for r in 0 .. WORLD { c(x[r], y[r], total, sig) on r }\n"
      "}\n",
      4);
  std::vector<Tensor> args = seeded_arguments(c.entry(), 11);
  c.run(args);
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t j = 0; j < 32; ++j) {
      int32_t sum = 0;
      for (int64_t s = 0; s < 4; ++s) sum += i32_at(args[0], s * 32 + j);
      ASSERT_EQ(i32_at(args[1], r * 32 + j), sum) << "rank " << r << " element " << j;
    }
  }
}

TEST(ReferenceInterpreterTest, LibraryRingAllreduceThroughAnImport) {
  // Several runs: the ranks' interleaving differs from run to run, the result must not.
  for (int64_t world : {1, 2, 4}) {
    const Checked c = check_files({{"t.ptl", testdata("allreduce_prog.ptl")},
                                   {"lib/ring_demo.ptl", testdata("lib/ring_demo.ptl")}},
                                  world);
    for (uint64_t round = 0; round < 20; ++round) {
      std::vector<Tensor> args = seeded_arguments(c.entry(), round);
      c.run(args);
      for (int64_t r = 0; r < world; ++r) {
        for (int64_t j = 0; j < 1024; ++j) {
          float sum = 0;
          for (int64_t s = 0; s < world; ++s) sum += f32_at(args[0], s * 1024 + j);
          ASSERT_EQ(f32_at(args[1], r * 1024 + j), sum)
              << "world " << world << " round " << round << " rank " << r << " element " << j;
        }
      }
    }
  }
}

TEST(ReferenceInterpreterTest, EachRanksDispatchesRunInHostOrder) {
  const Checked c = check_text(
      "kernel aiv inc(x: inout f32[1, 4], k: i32) {\n"
      "  store(add(load(x, [0, 0], [1, 4]), k), x, [0, 0])\n"
      "}\n"
      "chip bump(x: inout f32[1, 4]) { inc(x, rank() + 1) }\n"
      "chip twice(x: inout f32[1, 4]) { inc(x, 10); bump(x) }\n"
      "host main(x: inout f32[WORLD, 1, 4]) {\n"
      "  for r in 0 .. WORLD { bump(x[r]) on r }\n"
      "  twice(x[WORLD - 1]) on WORLD - 1\n"
      "  for r in 0 .. WORLD { if r % 2 == 1 { bump(x[r]) on r } }\n"
      "}\n",
      4);
  std::vector<Tensor> args = seeded_arguments(c.entry(), 2);
  const Tensor before = args[0].contiguous();
  c.run(args);
  for (int64_t r = 0; r < 4; ++r) {
    const float bumps = r % 2 == 1 ? 2.0f : 1.0f;
    const float added = bumps * static_cast<float>(r + 1) + (r == 3 ? 14.0f : 0.0f);
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(f32_at(args[0], r * 4 + j), f32_at(before, r * 4 + j) + added) << r << " " << j;
  }
}

// ------------------------------------------------------------ failures

TEST(ReferenceInterpreterTest, AWaitNobodySatisfiesIsReportedAsADeadlockQuickly) {
  const Checked c = check_text(
      "kernel aiv k(sig: window i32[2, 1]) {\n"
      "  if rank() == 0 { notify(sig, 1, [1, 0], 2, set) }\n"
      "  wait(sig, [rank(), 0], eq, 1)\n"
      "}\n"
      "chip c(sig: window i32[2, 1]) { k(sig) }\n"
      "host main() {\n"
      "  let signal = window_buffer(i32[2, 1])\n"
      "  for r in 0 .. WORLD { c(signal) on r }\n"
      "}\n",
      2);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = run_error(c);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  EXPECT_NE(error.find("t.ptl:3:3: deadlock: rank 0 waits forever in kernel 'k' for 'sig' "
                       "(host window 'signal')[0, 0] eq 1 (last value 0)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("rank 1: t.ptl:3:3: waits for 'sig' (host window 'signal')[1, 0] eq 1 "
                       "(last value 2)"),
            std::string::npos)
      << error;
}

TEST(ReferenceInterpreterTest, AWaitLeftAloneByFinishedRanksIsADeadlock) {
  // Rank 1 notifies the wrong value and finishes; rank 0 can never be released.
  const Checked c = check_text(
      "kernel aiv k(sig: window i32[1, 1]) {\n"
      "  if rank() == 0 {\n"
      "    wait(sig, [0, 0], ge, 7)\n"
      "  } else {\n"
      "    notify(sig, 0, [0, 0], 3, add)\n"
      "  }\n"
      "}\n"
      "chip c(sig: window i32[1, 1]) { k(sig) }\n"
      "host main() {\n"
      "  let sig = window_buffer(i32[1, 1])\n"
      "  for r in 0 .. WORLD { c(sig) on r }\n"
      "}\n",
      3);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = run_error(c);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_NE(error.find("t.ptl:3:5: deadlock: rank 0 waits forever in kernel 'k' for 'sig'[0, 0] "
                       "ge 7 (last value 6)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("rank 1: finished"), std::string::npos) << error;
  EXPECT_NE(error.find("rank 2: finished"), std::string::npos) << error;
}

TEST(ReferenceInterpreterTest, TheDeadlineStopsAWaitThatOutlivesIt) {
  // Not a deadlock: rank 1 is busy (a long loop), so rank 0's wait could still be
  // satisfied. The total deadline ends the run, and the busy rank stops with it.
  const Checked c = check_text(
      "kernel aiv k(sig: window i32[1, 1]) {\n"
      "  if rank() == 0 { wait(sig, [0, 0], ne, 0) } else {\n"
      "    let n = 0\n"
      "    for i in 0 .. 1000000000 { n = n + 1 }\n"
      "  }\n"
      "}\n"
      "chip c(sig: window i32[1, 1]) { k(sig) }\n"
      "host main() {\n"
      "  let sig = window_buffer(i32[1, 1])\n"
      "  for r in 0 .. WORLD { c(sig) on r }\n"
      "}\n",
      2);
  InterpretOptions options = c.options();
  options.timeout = std::chrono::milliseconds(200);
  std::vector<Tensor> args;
  const auto start = std::chrono::steady_clock::now();
  try {
    interpret(*c.program, c.entry(), args, options);
    FAIL() << "expected a ProgramError";
  } catch (const ProgramError& e) {
    EXPECT_NE(std::string(e.what()).find("t.ptl:2:20: rank 0 still waits in kernel 'k' for "
                                         "'sig'[0, 0] ne 0 (last value 0) after the "
                                         "interpreter's deadline of 200 ms\n"
                                         "  rank 0: t.ptl:2:20: waits for 'sig'[0, 0] ne 0 "
                                         "(last value 0)\n"
                                         "  rank 1: running"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ReferenceInterpreterTest, ARuntimeOffsetOutOfBoundsNamesTheConstruct) {
  const Checked c = check_text(
      "kernel aiv k(x: in f32[1, 8], y: out f32[1, 4]) {\n"
      "  store(load(x, [0, rank() * 4 + 2], [1, 4]), y, [0, 0])\n"
      "}\n"
      "chip c(x: in f32[1, 8], y: out f32[1, 4]) { k(x, y) }\n"
      "host main(x: in f32[WORLD, 1, 8], y: out f32[WORLD, 1, 4]) {\n"
      "  for r in 0 .. WORLD { c(x[r], y[r]) on r }\n"
      "}\n",
      2);
  EXPECT_EQ(run_error(c),
            "t.ptl:2:21: the region [6, 10) of dimension 1 (offsets [0, 6]) exceeds 'x', whose "
            "extent there is 8 [rank 1, kernel 'k']");
}

TEST(ReferenceInterpreterTest, ARuntimeViewOutOfBoundsInAChipFunction) {
  const Checked c = check_text(
      "kernel aiv k(x: in f32[2, 4], y: out f32[2, 4]) {\n"
      "  store(load(x, [0, 0], [2, 4]), y, [0, 0])\n"
      "}\n"
      "chip main(x: in f32[8, 4], y: out f32[8, 4]) {\n"
      "  for i in 0 .. 5 { k(view(x, [i * 2, 0], [2, 4]), view(y, [i * 2, 0], [2, 4])) }\n"
      "}\n",
      std::nullopt);
  EXPECT_EQ(run_error(c),
            "t.ptl:5:32: the region [8, 10) of dimension 0 (offsets [8, 0]) exceeds 'x', whose "
            "extent there is 8 [chip function 'main']");
}

TEST(ReferenceInterpreterTest, APeerOutOfRangeNamesTheConstruct) {
  const Checked c = check_text(
      "kernel aiv k(w: window f32[1, 8], y: out f32[1, 8]) {\n"
      "  store(remote_load(w, rank() + 1, [0, 0], [1, 8]), y, [0, 0])\n"
      "}\n"
      "chip c(w: window f32[1, 8], y: out f32[1, 8]) { k(w, y) }\n"
      "host main(y: out f32[WORLD, 1, 8]) {\n"
      "  let w = window_buffer(f32[1, 8])\n"
      "  for r in 0 .. WORLD { c(w, y[r]) on r }\n"
      "}\n",
      2);
  EXPECT_EQ(run_error(c),
            "t.ptl:2:24: peer rank 2 is out of range: ranks are 0 .. 1 (WORLD is 2) "
            "[rank 1, kernel 'k']");
}

TEST(ReferenceInterpreterTest, ArgumentsMustMatchTheEntry) {
  const Checked c = check_text(testdata("softmax.ptl"), std::nullopt);
  std::vector<Tensor> args = {Tensor::empty(DType::kF32, {1024, 128}),
                              Tensor::empty(DType::kF16, {1024, 128})};
  try {
    c.run(args);
    FAIL() << "expected a ProgramError";
  } catch (const ProgramError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.ptl:15:6: argument 2 of 'main' (parameter 'y') must be f32[1024, 128], not "
              "f16[1024, 128]");
  }
}

// ------------------------------------------------------------ kernels

TEST(ReferenceInterpreterTest, VectorBuiltinsScalarsAndChipIntermediates) {
  const Checked c = check_text(
      "kernel aiv first(x: in f32[4, 8], tmp: out f32[4, 8], alpha: f32) {\n"
      "  let t = load(x, [0, 0], [4, 8])\n"
      "  let u = add(mul(t, alpha), load(x, [0, 0], [1, 8]))   // [1, 8]: along each column\n"
      "  let acc = zeros(f32[4, 8])\n"
      "  for i in 0 .. 3 {\n"
      "    if i % 2 == 0 { acc = add(acc, u) } else { acc = sub(acc, full(f32[4, 8], 0.5)) }\n"
      "  }\n"
      "  store(max(acc, 0), tmp, [0, 0])\n"
      "}\n"
      "kernel aiv second(tmp: in f32[4, 8], y: out f32[4, 8], z: out i32[4, 8],\n"
      "                  m: out f32[4, 1]) {\n"
      "  let t = load(tmp, [0, 0], [4, 8])\n"
      "  let s = 2.0 * 3 - 5\n"
      "  store(div(t, row_max(add(t, s))), y, [0, 0])\n"
      "  store(cast(neg(t), i32), z, [0, 0])\n"
      "  store(row_sum(t), m, [0, 0])\n"
      "}\n"
      "chip main(x: in f32[4, 8], y: out f32[4, 8], z: out i32[4, 8], m: out f32[4, 1],\n"
      "          alpha: f32) {\n"
      "  let tmp = tensor(f32[4, 8])\n"
      "  first(x, tmp, alpha)\n"
      "  second(tmp, y, z, m)\n"
      "}\n",
      std::nullopt);
  std::vector<Tensor> args = seeded_arguments(c.entry(), 21);
  args[4].data_as<float>()[0] = 0.5f;
  c.run(args);
  for (int64_t i = 0; i < 4; ++i) {
    float row_max = -INFINITY, row_sum = 0;
    std::vector<float> tmp(8);
    for (int64_t j = 0; j < 8; ++j) {
      const float u = f32_at(args[0], i * 8 + j) * 0.5f + f32_at(args[0], j);
      tmp[j] = std::max(u + u - 0.5f, 0.0f);
      row_max = std::max(row_max, tmp[j] + 1.0f);
      row_sum += tmp[j];
    }
    for (int64_t j = 0; j < 8; ++j) {
      EXPECT_EQ(f32_at(args[1], i * 8 + j), tmp[j] / row_max) << i << " " << j;
      EXPECT_EQ(i32_at(args[2], i * 8 + j), static_cast<int32_t>(-tmp[j])) << i << " " << j;
    }
    EXPECT_EQ(f32_at(args[3], i), row_sum) << i;
  }
}

TEST(ReferenceInterpreterTest, HalfPrecisionTilesRoundEveryResult) {
  // 2048 + 1 is a tie in f16 (spacing 2 there): it rounds to the even 2048,
  // while f32 keeps 2049; 1/3 rounds to f16's nearest value.
  const Checked c = check_text(
      "kernel aiv k(x: in f16[1, 4], y: out f16[1, 4], z: out f32[1, 4]) {\n"
      "  let big = add(full(f16[1, 4], 2048), load(x, [0, 0], [1, 4]))\n"
      "  store(big, y, [0, 0])\n"
      "  store(add(cast(full(f16[1, 4], 2048), f32), 1), z, [0, 0])\n"
      "}\n"
      "kernel aiv third(y: out bf16[1, 4]) { store(cast(div(full(f32[1, 4], 1), 3), bf16), y, [0, "
      "0]) }\n"
      "chip main(x: in f16[1, 4], y: out f16[1, 4], z: out f32[1, 4], w: out bf16[1, 4]) {\n"
      "  k(x, y, z)\n"
      "  third(w)\n"
      "}\n",
      std::nullopt);
  std::vector<Tensor> args = seeded_arguments(c.entry(), 1);
  for (int j = 0; j < 4; ++j) args[0].data_as<uint16_t>()[j] = interp::float_to_f16(1.0f);
  c.run(args);
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(f16_at(args[1], j), 2048.0f);
    EXPECT_EQ(f32_at(args[2], j), 2049.0f);
    EXPECT_EQ(interp::bf16_to_float(args[3].data_as<uint16_t>()[j]),
              interp::bf16_to_float(interp::float_to_bf16(1.0f / 3.0f)));
  }
}

TEST(ReferenceInterpreterTest, IntegerMatmulAccumulatesInI32) {
  const Checked c = check_text(
      "kernel aic mm(a: in i8[4, 32], b: in i8[32, 8], c: out i32[4, 8]) {\n"
      "  let acc = zeros(i32[4, 8])\n"
      "  for k in 0 .. 32 step 16 {\n"
      "    acc = matmul(load(a, [0, k], [4, 16]), load(b, [k, 0], [16, 8]), acc)\n"
      "  }\n"
      "  store(acc, c, [0, 0])\n"
      "}\n"
      "chip main(a: in i8[4, 32], b: in i8[32, 8], c: out i32[4, 8]) { mm(a, b, c) }\n",
      std::nullopt);
  std::vector<Tensor> args = seeded_arguments(c.entry(), 4);
  c.run(args);
  const auto* a = args[0].data_as<int8_t>();
  const auto* b = args[1].data_as<int8_t>();
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      int32_t sum = 0;
      for (int64_t k = 0; k < 32; ++k) sum += a[i * 32 + k] * b[k * 8 + j];
      EXPECT_EQ(i32_at(args[2], i * 8 + j), sum);
    }
  }
}

}  // namespace
}  // namespace pypto::compiler
