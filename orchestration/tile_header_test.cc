// Numerics of the kernel tile header (pypto/tile.h) on every ISA this CPU
// has, and the matmul_256 fixture (which uses it) run through ChipWorker.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "orchestration/dispatch_record.h"
#include "pypto/chip_worker.h"
#include "pypto/compiled_program.h"
#include "pypto/npy.h"
#include "pypto/tile.h"
#include "tests/fixture_copy.h"

namespace pypto {
namespace {

namespace fs = std::filesystem;
using tile::Isa;

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (tile::isa_supported(isa)) out.push_back(isa);
  return out;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// ------------------------------------------------------------------- matmul

struct MatmulCase {
  int64_t m, n, k;
  int64_t pad;  // extra elements per row of A, B and C (strided views)
};

// C (+)= A * B with small-integer data: every result is exact in f32 whatever
// the summation order, so the check is equality. Padding elements of C hold
// NaN and must stay untouched; with accumulate off, C starts as NaN and must
// be fully overwritten (not read).
void check_exact_matmul(Isa isa, const MatmulCase& c, bool accumulate) {
  SCOPED_TRACE(std::string(tile::isa_name(isa)) + " " + std::to_string(c.m) + "x" +
               std::to_string(c.n) + "x" + std::to_string(c.k) + " pad " + std::to_string(c.pad) +
               (accumulate ? " accumulate" : ""));
  const int64_t lda = c.k + c.pad, ldb = c.n + c.pad, ldc = c.n + c.pad;
  std::vector<float> a(c.m * lda, kNaN), b(c.k * ldb, kNaN), out(c.m * ldc, kNaN);
  std::vector<double> ref(c.m * c.n, 0.0);
  std::mt19937 rng(static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k));
  std::uniform_int_distribution<int> small(-4, 4);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t kk = 0; kk < c.k; ++kk) a[i * lda + kk] = static_cast<float>(small(rng));
  for (int64_t kk = 0; kk < c.k; ++kk)
    for (int64_t j = 0; j < c.n; ++j) b[kk * ldb + j] = static_cast<float>(small(rng));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      if (accumulate) {
        out[i * ldc + j] = static_cast<float>(small(rng));
        ref[i * c.n + j] = out[i * ldc + j];
      }
      for (int64_t kk = 0; kk < c.k; ++kk) ref[i * c.n + j] += a[i * lda + kk] * b[kk * ldb + j];
    }
  }
  tile::matmul_f32(isa, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, out.data(), ldc, accumulate);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j)
      ASSERT_EQ(out[i * ldc + j], static_cast<float>(ref[i * c.n + j])) << "at " << i << "," << j;
    for (int64_t j = c.n; j < ldc; ++j)
      ASSERT_TRUE(std::isnan(out[i * ldc + j])) << "padding written at " << i << "," << j;
  }
}

TEST(TileMatmulTest, MatchesNaiveOnOddSizesStridesAndAccumulate) {
  const MatmulCase cases[] = {
      {1, 1, 1, 0},       {7, 13, 5, 0},    {7, 13, 5, 3},    {65, 97, 130, 0},
      {65, 97, 130, 7},   {14, 32, 256, 0}, {6, 16, 1, 0},    {169, 33, 257, 5},
      {128, 128, 512, 0}, {3, 2100, 5, 1},  {200, 3, 300, 2},
  };
  for (Isa isa : supported_isas())
    for (const MatmulCase& c : cases)
      for (bool accumulate : {false, true}) check_exact_matmul(isa, c, accumulate);
}

TEST(TileMatmulTest, RandomFloatsWithinRoundingOfDoubleReference) {
  const int64_t m = 45, n = 70, k = 300;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  for (Isa isa : supported_isas()) {
    tile::matmul_f32(isa, m, n, k, a.data(), k, b.data(), n, c.data(), n, false);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          ref += double(a[i * k + kk]) * b[kk * n + j];
          mag += std::fabs(double(a[i * k + kk]) * b[kk * n + j]);
        }
        // f32 accumulation error bound: about k * eps * sum |a_ik b_kj|, far looser in practice.
        ASSERT_NEAR(c[i * n + j], ref, 1e-6 * mag + 1e-6)
            << tile::isa_name(isa) << " " << i << "," << j;
      }
    }
  }
}

TEST(TileMatmulTest, EmptyKZeroesOrKeepsC) {
  std::vector<float> c(6, 5.0f);
  tile::matmul_f32(2, 3, 0, nullptr, 0, nullptr, 3, c.data(), 3, true);
  for (float x : c) EXPECT_EQ(x, 5.0f);
  tile::matmul_f32(2, 3, 0, nullptr, 0, nullptr, 3, c.data(), 3, false);
  for (float x : c) EXPECT_EQ(x, 0.0f);
  tile::matmul_f32(0, 3, 4, nullptr, 4, nullptr, 3, nullptr, 3, false);  // no rows: nothing
}

TEST(TileMatmulTest, TileOverloadChecksShapes) {
  std::vector<float> a(6, 1.0f), b(6, 2.0f), c(4, 0.0f);
  tile::Tile<float> ta{a.data(), 2, 3, 3}, tb{b.data(), 3, 2, 2}, tc{c.data(), 2, 2, 2};
  EXPECT_TRUE(tile::matmul_f32(ta, tb, tc, false));
  for (float x : c) EXPECT_EQ(x, 6.0f);
  EXPECT_FALSE(tile::matmul_f32(ta, ta, tc, false));
}

// -------------------------------------------------------------- elementwise

float ref_binary(tile::BinaryOp op, float a, float b) {
  switch (op) {
    case tile::BinaryOp::kAdd:
      return a + b;
    case tile::BinaryOp::kSub:
      return a - b;
    case tile::BinaryOp::kMul:
      return a * b;
    case tile::BinaryOp::kDiv:
      return a / b;
    case tile::BinaryOp::kMax:
      return a > b ? a : b;
    case tile::BinaryOp::kMin:
      return a < b ? a : b;
  }
  return 0;
}

const char* binary_name(tile::BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "max", "min"};
  return names[static_cast<int>(op)];
}

// Every result of these ops is correctly rounded, so every ISA agrees exactly.
TEST(TileElementwiseTest, BinaryOpsExactOnEveryIsaAndWidth) {
  const tile::BinaryOp ops[] = {tile::BinaryOp::kAdd, tile::BinaryOp::kSub, tile::BinaryOp::kMul,
                                tile::BinaryOp::kDiv, tile::BinaryOp::kMax, tile::BinaryOp::kMin};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  const int64_t rows = 3;
  for (int64_t cols : {1, 7, 8, 15, 16, 17, 37, 64}) {
    const int64_t ld = cols + 5;
    std::vector<float> a(rows * ld), b(rows * ld);
    for (auto& x : a) x = dist(rng);
    for (auto& x : b) x = dist(rng);
    for (Isa isa : supported_isas()) {
      for (tile::BinaryOp op : ops) {
        SCOPED_TRACE(std::string(tile::isa_name(isa)) + " " + binary_name(op) + " cols " +
                     std::to_string(cols));
        std::vector<float> c(rows * ld, kNaN), cs(rows * ld, kNaN);
        tile::binary_f32(isa, op, rows, cols, a.data(), ld, b.data(), ld, c.data(), ld);
        tile::binary_scalar_f32(isa, op, rows, cols, a.data(), ld, 2.5f, cs.data(), ld);
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            ASSERT_EQ(c[i * ld + j], ref_binary(op, a[i * ld + j], b[i * ld + j]));
            ASSERT_EQ(cs[i * ld + j], ref_binary(op, a[i * ld + j], 2.5f));
          }
          for (int64_t j = cols; j < ld; ++j) {
            ASSERT_TRUE(std::isnan(c[i * ld + j])) << "padding written";
            ASSERT_TRUE(std::isnan(cs[i * ld + j])) << "padding written";
          }
        }
      }
    }
  }
}

TEST(TileElementwiseTest, UnaryOpsOnEveryIsa) {
  const int64_t rows = 2, cols = 531, ld = 540;
  std::vector<float> a(rows * ld);
  for (int64_t i = 0; i < rows * ld; ++i) a[i] = -110.0f + 0.41f * static_cast<float>(i % 531);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(tile::isa_name(isa));
    std::vector<float> e(rows * ld), s(rows * ld), n(rows * ld);
    tile::unary_f32(isa, tile::UnaryOp::kExp, rows, cols, a.data(), ld, e.data(), ld);
    tile::unary_f32(isa, tile::UnaryOp::kNeg, rows, cols, a.data(), ld, n.data(), ld);
    std::vector<float> pos(a.size());
    for (size_t i = 0; i < a.size(); ++i) pos[i] = std::fabs(a[i]);
    tile::unary_f32(isa, tile::UnaryOp::kSqrt, rows, cols, pos.data(), ld, s.data(), ld);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t at = i * ld + j;
        ASSERT_EQ(n[at], -a[at]);
        ASSERT_EQ(s[at], std::sqrt(pos[at]));
        const double exact = std::exp(double(a[at]));
        const float rounded = static_cast<float>(exact);
        if (std::isinf(rounded)) {
          ASSERT_EQ(e[at], INFINITY) << "exp(" << a[at] << ")";
          continue;
        }
        const double ulp = double(std::nextafter(rounded, INFINITY)) - rounded;
        ASSERT_LE(std::fabs(e[at] - exact), 2 * ulp) << "exp(" << a[at] << ")";
      }
    }
  }
}

TEST(TileElementwiseTest, ExpSpecialValues) {
  const float in[] = {0.0f,     -0.0f, 1.0f,     88.72f,    89.0f,  1000.0f, -104.0f,
                      -1000.0f, kNaN,  INFINITY, -INFINITY, -87.0f, -100.0f};
  const int64_t count = sizeof in / sizeof in[0];
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(tile::isa_name(isa));
    float out[sizeof in / sizeof in[0]];
    tile::unary_f32(isa, tile::UnaryOp::kExp, 1, count, in, count, out, count);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], 1.0f);
    EXPECT_NEAR(out[2], 2.7182817f, 3e-7f);
    EXPECT_TRUE(std::isfinite(out[3]));
    EXPECT_EQ(out[4], INFINITY);
    EXPECT_EQ(out[5], INFINITY);
    EXPECT_EQ(out[6], 0.0f);
    EXPECT_EQ(out[7], 0.0f);
    EXPECT_TRUE(std::isnan(out[8]));
    EXPECT_EQ(out[9], INFINITY);
    EXPECT_EQ(out[10], 0.0f);
    EXPECT_NEAR(out[11], std::exp(-87.0), 1e-43);
    EXPECT_GT(out[12], 0.0f);  // subnormal, not flushed
    EXPECT_NEAR(out[12], std::exp(-100.0), 2e-44);
  }
}

TEST(TileElementwiseTest, NamedHelpersInPlaceAndTileShapes) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {6, 5, 4, 3, 2, 1};
  tile::Tile<float> ta{a.data(), 2, 3, 3}, tb{b.data(), 2, 3, 3};
  EXPECT_TRUE(tile::add(ta, tb, ta));  // in place
  for (float x : a) EXPECT_EQ(x, 7.0f);
  EXPECT_TRUE(tile::mul_scalar(ta, 0.5f, ta));
  for (float x : a) EXPECT_EQ(x, 3.5f);
  tile::sub(2, 3, a.data(), 3, b.data(), 3, a.data(), 3);
  EXPECT_EQ(a[0], -2.5f);
  EXPECT_EQ(a[5], 2.5f);
  EXPECT_TRUE(tile::max_scalar(ta, 0.0f, ta));
  EXPECT_EQ(a[0], 0.0f);
  EXPECT_TRUE(tile::neg(ta, ta));
  EXPECT_EQ(a[5], -2.5f);
  tile::Tile<float> wrong{b.data(), 3, 2, 2};
  EXPECT_FALSE(tile::add(ta, wrong, ta));
  EXPECT_FALSE(tile::exp(ta, wrong));
}

// -------------------------------------------------------------------- views

pypto_tensor view2d(float* data, int64_t rows, int64_t cols, int64_t ld, int64_t offset = 0) {
  pypto_tensor t{};
  t.data = data;
  t.dtype = PYPTO_F32;
  t.ndim = 2;
  t.offset = offset;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.strides[0] = ld;
  t.strides[1] = 1;
  return t;
}

TEST(TileViewTest, AsTileAcceptsStridedViewsAndNamesWhatIsWrong) {
  std::vector<float> buf(100);
  tile::Tile<float> t;
  ASSERT_EQ(tile::as_tile(view2d(buf.data(), 4, 5, 10, 3), &t), nullptr);
  EXPECT_EQ(t.data, buf.data() + 3);
  EXPECT_EQ(t.rows, 4);
  EXPECT_EQ(t.cols, 5);
  EXPECT_EQ(t.ld, 10);
  EXPECT_EQ(&t(1, 2), buf.data() + 3 + 12);
  EXPECT_EQ(t.sub(1, 1, 2, 2).data, buf.data() + 14);

  pypto_tensor one_d = view2d(buf.data(), 7, 0, 0);
  one_d.ndim = 1;
  one_d.shape[0] = 7;
  one_d.strides[0] = 1;
  ASSERT_EQ(tile::as_tile(one_d, &t), nullptr);
  EXPECT_EQ(t.rows, 1);
  EXPECT_EQ(t.cols, 7);

  pypto_tensor three_d{};
  three_d.data = buf.data();
  three_d.dtype = PYPTO_F32;
  three_d.ndim = 3;
  three_d.shape[0] = 1;
  three_d.shape[1] = 2;
  three_d.shape[2] = 3;
  three_d.strides[0] = 6;
  three_d.strides[1] = 3;
  three_d.strides[2] = 1;
  EXPECT_EQ(tile::as_tile(three_d, &t), nullptr);
  three_d.shape[0] = 2;
  EXPECT_STREQ(tile::as_tile(three_d, &t), "dimensions before the last two must have extent 1");

  pypto_tensor bad = view2d(buf.data(), 4, 5, 10);
  bad.strides[1] = 2;
  EXPECT_STREQ(tile::as_tile(bad, &t), "the last dimension must have stride 1");
  bad = view2d(buf.data(), 4, 5, 3);
  EXPECT_NE(tile::as_tile(bad, &t), nullptr);
  bad = view2d(buf.data(), 4, 5, 10);
  bad.dtype = PYPTO_I32;
  EXPECT_STREQ(tile::as_tile(bad, &t), "dtype does not match the element type");
  tile::Tile<int32_t> ti;
  EXPECT_EQ(tile::as_tile(bad, &ti), nullptr);
}

std::string g_reported;
void record_error(const pypto_kernel_ctx*, const char* message) { g_reported = message; }

TEST(TileViewTest, ArgTileReportsThroughTheHook) {
  std::vector<float> buf(20);
  pypto_tensor tensors[1] = {view2d(buf.data(), 2, 5, 5)};
  tensors[0].dtype = PYPTO_I8;
  pypto_kernel_hooks hooks{&record_error, nullptr};
  pypto_kernel_ctx ctx{};
  ctx.hooks = &hooks;
  pypto_kernel_args args{};
  args.num_tensors = 1;
  args.tensors = tensors;
  args.ctx = &ctx;
  tile::Tile<float> t;
  g_reported.clear();
  EXPECT_FALSE(tile::arg_tile(&args, 0, "mykernel", &t));
  EXPECT_EQ(g_reported, "mykernel: tensor argument 0: dtype does not match the element type");
  EXPECT_FALSE(tile::arg_tile(&args, 3, "mykernel", &t));
  EXPECT_EQ(g_reported, "mykernel: tensor argument 3: no such tensor argument");
  tensors[0].dtype = PYPTO_F32;
  EXPECT_TRUE(tile::arg_tile(&args, 0, "mykernel", &t));
}

// ---------------------------------------------------- matmul_256 fixture

TEST(TileFixtureTest, Matmul256RunsThroughChipWorkerAndMatchesGolden) {
  auto program = CompiledProgram::from_dir(
      testing_support::scratch_fixture_copy("l2/matmul_256", "matmul_256"));
  std::vector<Tensor> args = {read_npy(program.dir() / "golden/inputs/a.npy"),
                              read_npy(program.dir() / "golden/inputs/b.npy"),
                              Tensor::empty(DType::kF32, {256, 256})};
  RunConfig config;
  config.enable_dep_gen = true;
  ChipWorker worker(config, CoreCounts{2, 1});
  auto result = worker.run(program, args);
  EXPECT_EQ(result.num_tasks, 32);
  const Tensor expected = read_npy(program.dir() / "golden/expected/c.npy");
  ASSERT_EQ(expected.shape(), (Shape{256, 256}));
  for (int64_t i = 0; i < 256 * 256; ++i)
    ASSERT_EQ(args[2].data_as<float>()[i], expected.data_as<float>()[i]) << "index " << i;
  // Task 2t+1 (the second K half of tile t) depends on task 2t through c, and
  // tiles are independent of each other.
  std::vector<int> preds(32, 0);
  for (const auto& edge : result.record->edges) {
    EXPECT_EQ(edge.pred % 2, 0) << edge.pred << " -> " << edge.succ;
    EXPECT_EQ(edge.succ, edge.pred + 1) << edge.pred << " -> " << edge.succ;
    ++preds[edge.succ];
  }
  for (int t = 1; t < 32; t += 2) EXPECT_GE(preds[t], 1) << "task " << t;
}

}  // namespace
}  // namespace pypto
