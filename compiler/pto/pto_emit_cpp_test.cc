// The C++ emitter and pypto-ptoas: emitted bodies compile with the host
// compiler (-Wall -Wextra -Werror) together with a minimal kernel_entry
// wrapper, load with dlopen and compute the right values on real tensors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/version.h"
#include "compiler/interp/interp_values.h"
#include "compiler/pto/pto_emit_cpp.h"
#include "compiler/pto/pto_printer.h"
#include "compiler/pto/pto_test_util.h"
#include "compiler/pto/ptoas_tool.h"
#include "pypto/kernel_abi.h"
#include "pypto/tile.h"

namespace pypto::compiler {
namespace {

namespace fs = std::filesystem;
using testing::build_kernel;
using testing::lower_file;
using testing::lower_source;
using testing::parse_pto;

std::string& last_error() {
  static std::string e;
  return e;
}
void record_error(const pypto_kernel_ctx*, const char* message) { last_error() = message; }
void no_tag(const pypto_kernel_ctx*, int32_t, const char*) {}

// L2: every comm call fails.
int no_remote_load(const pypto_kernel_ctx*, int32_t, int32_t, uint64_t, void*, uint64_t) { return -1; }
int no_remote_store(const pypto_kernel_ctx*, int32_t, int32_t, uint64_t, const void*, uint64_t,
                    int32_t, int32_t) {
  return -1;
}
int no_put(const pypto_kernel_ctx*, int32_t, int32_t, uint64_t, const void*, uint64_t) { return -1; }
int no_get(const pypto_kernel_ctx*, int32_t, int32_t, uint64_t, void*, uint64_t) { return -1; }
int no_notify(const pypto_kernel_ctx*, int32_t, int32_t, uint64_t, int32_t, int32_t) { return -1; }
int no_wait(const pypto_kernel_ctx*, int32_t, uint64_t, int32_t, int32_t) { return -1; }
int no_barrier(const pypto_kernel_ctx*) { return -1; }
void* no_peer(const pypto_kernel_ctx*, int32_t, int32_t) { return nullptr; }
void no_call_site(const pypto_kernel_ctx*, const char*, int32_t) {}

const pypto_kernel_hooks kHooks = {record_error, no_tag};
const pypto_comm_api kNoComm = {no_remote_load, no_remote_store, no_put,     no_get,
                                no_notify,      no_wait,         no_barrier, no_peer,
                                no_call_site};

pypto_tensor tensor(void* data, pypto_dtype dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides = {}, int64_t offset = 0) {
  pypto_tensor t;
  std::memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(shape.size());
  t.offset = offset;
  int64_t s = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[static_cast<size_t>(d)];
    t.strides[d] = strides.empty() ? s : strides[static_cast<size_t>(d)];
    s *= shape[static_cast<size_t>(d)];
  }
  return t;
}

class Kernel {
 public:
  Kernel(const std::string& unit, const std::string& body) {
    char tmpl[] = "/tmp/pto_emit_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    so_ = build_kernel(dir_, unit, body);
    handle_ = dlopen(so_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error(dlerror());
    entry_ = reinterpret_cast<pypto_kernel_entry_fn>(dlsym(handle_, "kernel_entry"));
    if (!entry_) throw std::runtime_error("no kernel_entry");
  }
  ~Kernel() {
    if (handle_) dlclose(handle_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Runs the kernel with a ready context (comm tests); returns nothing.
  void run_in(std::vector<pypto_tensor> tensors, const pypto_kernel_ctx* ctx,
              std::vector<int64_t> scalars = {}) {
    pypto_kernel_args args;
    args.abi_version = PYPTO_KERNEL_ABI_VERSION;
    args.num_tensors = static_cast<int32_t>(tensors.size());
    args.tensors = tensors.data();
    args.num_scalars = static_cast<int32_t>(scalars.size());
    args.scalars = scalars.data();
    args.ctx = ctx;
    entry_(&args);
  }
  // Runs the kernel; returns the error it reported ("" if none).
  std::string run(std::vector<pypto_tensor> tensors, std::vector<int64_t> scalars = {},
                  int32_t rank = 0, int32_t world = 1) {
    pypto_kernel_ctx ctx;
    std::memset(&ctx, 0, sizeof ctx);
    ctx.rank = rank;
    ctx.world = world;
    ctx.hooks = &kHooks;
    ctx.comm = &kNoComm;
    pypto_kernel_args args;
    args.abi_version = PYPTO_KERNEL_ABI_VERSION;
    args.num_tensors = static_cast<int32_t>(tensors.size());
    args.tensors = tensors.data();
    args.num_scalars = static_cast<int32_t>(scalars.size());
    args.scalars = scalars.data();
    args.ctx = &ctx;
    last_error().clear();
    entry_(&args);
    return last_error();
  }

 private:
  std::string dir_, so_;
  void* handle_ = nullptr;
  pypto_kernel_entry_fn entry_ = nullptr;
};

std::vector<float> iota(size_t n, float scale = 0.01f, float shift = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i * 7919 % 1000)) * scale + shift;
  return v;
}

TEST(PtoEmitCppTest, VectorAddRunsOnStridedViews) {
  const LoweredKernel k = lower_source(
      "kernel aiv vadd(a: in f32[4, 64], b: in f32[4, 64], c: out f32[4, 64]) {\n"
      "  store(add(load(a, [0, 0], [4, 64]), load(b, [0, 0], [4, 64])), c, [0, 0])\n"
      "}\n"
      "chip main(a: in f32[4, 64], b: in f32[4, 64], c: out f32[4, 64]) { vadd(a, b, c) }\n",
      "vadd");
  Kernel kernel("vadd", k.cpp_body);
  std::vector<float> a = iota(4 * 100), b = iota(4 * 64, 0.5f), c(4 * 80, -1.0f);
  // a: rows of 100 starting at column 3; c: rows of 80.
  EXPECT_EQ(kernel.run({tensor(a.data(), PYPTO_F32, {4, 64}, {100, 1}, 3),
                        tensor(b.data(), PYPTO_F32, {4, 64}), tensor(c.data(), PYPTO_F32, {4, 64}, {80, 1})}),
            "");
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 80; ++j)
      EXPECT_EQ(c[r * 80 + j], j < 64 ? a[r * 100 + 3 + j] + b[r * 64 + j] : -1.0f) << r << "," << j;
  // A tensor of the wrong shape is reported, naming the kernel and the argument.
  const std::string err = kernel.run({tensor(a.data(), PYPTO_F32, {4, 32}),
                                      tensor(b.data(), PYPTO_F32, {4, 64}),
                                      tensor(c.data(), PYPTO_F32, {4, 64})});
  EXPECT_NE(err.find("vadd: tensor argument 0 ('a') must be dtype 0 [4, 64], got dtype 0 [4, 32]"),
            std::string::npos)
      << err;
}

// Fused elementwise groups (one pass per element): row tails of an odd
// width, a loop-carried accumulator written back to its buffer, a column
// broadcast, and the unfused fallback for strided columns and for an output
// that overlaps an input shifted by one element.
TEST(PtoEmitCppTest, FusedGroupsMatchUnfusedSemantics) {
  const LoweredKernel k = lower_source(
      "kernel aiv f(x: in f32[3, 37], w: in f32[1, 37], y: out f32[3, 37]) {\n"
      "  let acc = zeros(f32[3, 37])\n"
      "  let ww = load(w, [0, 0], [1, 37])\n"
      "  for i in 0 .. 3 {\n"
      "    acc = add(acc, mul(load(x, [0, 0], [3, 37]), 2.0))\n"
      "  }\n"
      "  store(sub(add(acc, load(x, [0, 0], [3, 37])), ww), y, [0, 0])\n"
      "}\n"
      "chip main(x: in f32[3, 37], w: in f32[1, 37], y: out f32[3, 37]) { f(x, w, y) }\n",
      "f");
  EXPECT_NE(k.cpp_body.find("pto::fused("), std::string::npos) << k.cpp_body;
  Kernel kernel("f", k.cpp_body);
  const int R = 3, C = 37;
  std::vector<float> x = iota(R * C), w = iota(C, 0.25f), y(R * C, -1.0f);
  auto expect = [&](const std::vector<float>& xs, int64_t xrow, int64_t xcol, const float* out,
                    int64_t orow, int64_t ocol) {
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < C; ++j) {
        const float xv = xs[size_t(r * xrow + j * xcol)];
        float acc = 0;
        for (int i = 0; i < 3; ++i) acc = acc + xv * 2.0f;
        EXPECT_EQ(out[r * orow + j * ocol], (acc + xv) - w[size_t(j)]) << r << "," << j;
      }
  };
  ASSERT_EQ(kernel.run({tensor(x.data(), PYPTO_F32, {R, C}), tensor(w.data(), PYPTO_F32, {1, C}),
                        tensor(y.data(), PYPTO_F32, {R, C})}),
            "");
  expect(x, C, 1, y.data(), C, 1);
  // Columns with stride 2 (the fallback path).
  std::vector<float> x2(size_t(R * C * 2), 0.0f), y2(size_t(R * C * 2), -1.0f);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < C; ++j) x2[size_t(r * C * 2 + j * 2)] = x[size_t(r * C + j)];
  ASSERT_EQ(kernel.run({tensor(x2.data(), PYPTO_F32, {R, C}, {2 * C, 2}),
                        tensor(w.data(), PYPTO_F32, {1, C}),
                        tensor(y2.data(), PYPTO_F32, {R, C}, {2 * C, 2})}),
            "");
  expect(x2, 2 * C, 2, y2.data(), 2 * C, 2);
  // y overlaps x shifted by one element: every load must see x before any store.
  std::vector<float> buf(size_t(R * C + 1));
  std::copy(x.begin(), x.end(), buf.begin());
  ASSERT_EQ(kernel.run({tensor(buf.data(), PYPTO_F32, {R, C}), tensor(w.data(), PYPTO_F32, {1, C}),
                        tensor(buf.data() + 1, PYPTO_F32, {R, C})}),
            "");
  expect(x, C, 1, buf.data() + 1, C, 1);
}

// f16/bf16 arithmetic: every element computed in f32 and rounded to the
// dtype (nearest even) after each instruction, a scalar operand rounded to
// the dtype first, row_sum in double rounded once — bit for bit what the
// reference interpreter (interp_tile_ops.cc) computes.
TEST(PtoEmitCppTest, HalfArithmeticMatchesTheInterpreterBitForBit) {
  for (const std::string dt : {"f16", "bf16"}) {
    const bool f16 = dt == "f16";
    const std::string T = dt + "[4, 37]", S = dt + "[4, 1]";
    const LoweredKernel k = lower_source(
        "kernel aiv h(x: in " + T + ", y: out " + T + ", s: out " + S + ") {\n"
        "  let t = load(x, [0, 0], [4, 37])\n"
        "  let u = exp(sub(add(mul(t, 1.1), t), row_max(t)))\n"
        "  store(max(div(neg(u), 3.0), sqrt(t)), y, [0, 0])\n"
        "  store(row_sum(add(u, full(" + T + ", 0.3))), s, [0, 0])\n"
        "}\n"
        "chip main(x: in " + T + ", y: out " + T + ", s: out " + S + ") { h(x, y, s) }\n",
        "h");
    Kernel kernel("h", k.cpp_body);
    auto to_bits = [&](float v) { return f16 ? interp::float_to_f16(v) : interp::float_to_bf16(v); };
    auto to_float = [&](uint16_t b) { return f16 ? interp::f16_to_float(b) : interp::bf16_to_float(b); };
    auto R = [&](float v) { return to_float(to_bits(v)); };
    const int rows = 4, cols = 37;
    std::vector<uint16_t> x(rows * cols), y(rows * cols, 0xffff), s(rows, 0xffff);
    const std::vector<float> xf = iota(x.size(), 0.003f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = to_bits(xf[i]);
    const pypto_dtype abi = f16 ? PYPTO_F16 : PYPTO_BF16;
    ASSERT_EQ(kernel.run({tensor(x.data(), abi, {rows, cols}), tensor(y.data(), abi, {rows, cols}),
                          tensor(s.data(), abi, {rows, 1})}),
              "");
    for (int r = 0; r < rows; ++r) {
      float m = to_float(x[size_t(r * cols)]);
      for (int j = 1; j < cols; ++j) m = std::max(m, to_float(x[size_t(r * cols + j)]));
      double sum = 0;
      for (int j = 0; j < cols; ++j) {
        const float t = to_float(x[size_t(r * cols + j)]);
        const float u = R(std::exp(R(R(R(t * R(1.1f)) + t) - m)));
        const float want = std::max(R(R(-u) / R(3.0f)), R(std::sqrt(t)));
        EXPECT_EQ(y[size_t(r * cols + j)], to_bits(want)) << dt << " " << r << "," << j;
        sum += R(u + R(0.3f));
      }
      EXPECT_EQ(s[size_t(r)], to_bits(static_cast<float>(sum))) << dt << " row " << r;
    }
  }
}

TEST(PtoEmitCppTest, SoftmaxRowsMatchesReference) {
  const LoweredKernel k = lower_file("softmax.ptl", "softmax_rows", std::nullopt);
  Kernel kernel("softmax_rows", k.cpp_body);
  const int R = 32, D = 128;
  std::vector<float> x = iota(R * D, 0.013f, -5.0f), y(R * D, 0);
  ASSERT_EQ(kernel.run({tensor(x.data(), PYPTO_F32, {R, D}), tensor(y.data(), PYPTO_F32, {R, D})}), "");
  for (int r = 0; r < R; ++r) {
    double m = -1e30, s = 0;
    for (int j = 0; j < D; ++j) m = std::max(m, double(x[r * D + j]));
    for (int j = 0; j < D; ++j) s += std::exp(double(x[r * D + j]) - m);
    for (int j = 0; j < D; ++j)
      EXPECT_NEAR(y[r * D + j], std::exp(double(x[r * D + j]) - m) / s, 1e-6) << r << "," << j;
  }
}

TEST(PtoEmitCppTest, MatmulAccumulatesOverK) {
  const LoweredKernel k = lower_source(
      "const K = 256\n"
      "kernel aic mm(a: in f32[64, K], b: in f32[K, 32], c: out f32[64, 32]) {\n"
      "  let acc = zeros(f32[64, 32])\n"
      "  for k in 0 .. K step 64 {\n"
      "    acc = matmul(load(a, [0, k], [64, 64]), load(b, [k, 0], [64, 32]), acc)\n"
      "  }\n"
      "  store(acc, c, [0, 0])\n"
      "}\n"
      "chip main(a: in f32[64, K], b: in f32[K, 32], c: out f32[64, 32]) { mm(a, b, c) }\n",
      "mm");
  Kernel kernel("mm", k.cpp_body);
  const int M = 64, N = 32, K = 256;
  std::vector<float> a = iota(M * K, 0.01f, -3.0f), b = iota(K * N, 0.02f, -7.0f), c(M * N, 0);
  ASSERT_EQ(kernel.run({tensor(a.data(), PYPTO_F32, {M, K}), tensor(b.data(), PYPTO_F32, {K, N}),
                        tensor(c.data(), PYPTO_F32, {M, N})}),
            "");
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int kk = 0; kk < K; ++kk) s += double(a[i * K + kk]) * b[kk * N + j];
      EXPECT_NEAR(c[i * N + j], s, 1e-3 * (1 + std::fabs(s))) << i << "," << j;
    }
}

TEST(PtoEmitCppTest, ScalarsControlFlowAndViewsRun) {
  const LoweredKernel k = lower_source(testing::kScaleProgram, "scale");
  Kernel kernel("scale", k.cpp_body);
  std::vector<float> x = iota(4 * 8 * 16, 0.01f, -2.0f), y(8 * 16);
  const float alpha = 0.75f;
  uint32_t bits;
  std::memcpy(&bits, &alpha, 4);
  struct Case {
    int32_t rank;
    int64_t n;
    float s;
  };
  for (const Case& c : {Case{6, 3, 1.5f}, Case{5, 3, -0.75f}, Case{1, -1, 1.0f}, Case{3, 0, -0.75f}}) {
    ASSERT_EQ(kernel.run({tensor(x.data(), PYPTO_F32, {4, 8, 16}), tensor(y.data(), PYPTO_F32, {8, 16})},
                         {int64_t(bits), c.n}, c.rank, 8),
              "");
    const int i = c.rank % 4;
    for (int e = 0; e < 8 * 16; ++e) {
      const float v = x[i * 128 + e] * c.s;
      EXPECT_EQ(y[e], v > 0.0f ? v : 0.0f) << "rank " << c.rank << " element " << e;
    }
  }
}

// The f16/bf16 conversions of pto_runtime.h: exact round trips, and
// round-to-nearest-even agreeing with the compiler's _Float16.
TEST(PtoEmitCppTest, HalfConversions) {
  namespace rt = pypto::tile::pto;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const rt::f16 x{uint16_t(h)};
    const float f = rt::to_f32(x);
    if (f != f) continue;  // NaN
    ASSERT_EQ(rt::to_f16(f).bits, h) << std::hex << h;
    const rt::bf16 y{uint16_t(h)};
    const float g = rt::to_f32(y);
    if (g == g) {
      ASSERT_EQ(rt::to_bf16(g).bits, h) << std::hex << h;
    }
  }
#ifdef __FLT16_MAX__
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x81ffffffu) | 0x38000000u;  // around the f16 range
    float f;
    std::memcpy(&f, &bits, 4);
    if (f != f) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(rt::to_f16(f).bits, want) << f;
  }
#endif
}

// f16 operands (matmul_colshard.ptl's mm_tile): loaded as f16, multiplied in f32.
TEST(PtoEmitCppTest, HalfMatmulRuns) {
  const LoweredKernel k = lower_file("matmul_colshard.ptl", "mm_tile", 2);
  Kernel kernel("mm_tile", k.cpp_body);
  const int M = 64, K = 512, N = 64;
  // Small multiples of 1/8 are exact in f16: 0x4000 + v * 0x80 is 2 + v / 4 for v < 8 ...
  // simpler: encode integers -4..3 (exact) by their f16 bit patterns.
  auto half = [](int v) -> uint16_t {
    static const uint16_t bits[] = {0xc400, 0xc200, 0xc000, 0xbc00, 0x0000, 0x3c00, 0x4000, 0x4200};
    return bits[v + 4];  // -4 -3 -2 -1 0 1 2 3
  };
  std::vector<uint16_t> a(M * K), b(K * N);
  std::vector<int> ai(M * K), bi(K * N);
  for (int i = 0; i < M * K; ++i) a[size_t(i)] = half(ai[size_t(i)] = (i * 7 + i / 13) % 8 - 4);
  for (int i = 0; i < K * N; ++i) b[size_t(i)] = half(bi[size_t(i)] = (i * 5 + i / 11) % 8 - 4);
  std::vector<float> c(M * N, -1);
  ASSERT_EQ(kernel.run({tensor(a.data(), PYPTO_F16, {M, K}), tensor(b.data(), PYPTO_F16, {K, N}),
                        tensor(c.data(), PYPTO_F32, {M, N})}),
            "");
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int s = 0;
      for (int kk = 0; kk < K; ++kk) s += ai[size_t(i * K + kk)] * bi[size_t(kk * N + j)];
      ASSERT_EQ(c[size_t(i * N + j)], float(s)) << i << "," << j;
    }
}

// ---- a two-rank world in one process: windows are plain memory, signals atomics.
constexpr int kRanks = 2;
std::vector<char> g_windows[2][kRanks];  // [window id][rank]
std::string g_comm_error[kRanks];

char* window_at(int32_t window, int32_t rank, uint64_t offset, uint64_t bytes) {
  if (window < 0 || window > 1 || rank < 0 || rank >= kRanks) return nullptr;
  std::vector<char>& w = g_windows[window][rank];
  if (offset + bytes > w.size()) return nullptr;
  return w.data() + offset;
}
std::atomic<int> g_remote_loads{0};
int fake_remote_load(const pypto_kernel_ctx*, int32_t w, int32_t r, uint64_t off, void* dst,
                     uint64_t bytes) {
  ++g_remote_loads;
  char* p = window_at(w, r, off, bytes);
  if (!p) return -1;
  std::memcpy(dst, p, bytes);
  return 0;
}
int fake_remote_store(const pypto_kernel_ctx*, int32_t w, int32_t r, uint64_t off, const void* src,
                      uint64_t count, int32_t dtype, int32_t op) {
  char* p = window_at(w, r, off, count * 4);
  if (!p || dtype != PYPTO_F32) return -1;
  float* f = reinterpret_cast<float*>(p);
  const float* s = static_cast<const float*>(src);
  for (uint64_t i = 0; i < count; ++i) f[i] = op == PYPTO_STORE_ADD ? f[i] + s[i] : s[i];
  return 0;
}
int fake_put(const pypto_kernel_ctx* c, int32_t w, int32_t r, uint64_t off, const void* src,
             uint64_t bytes) {
  char* p = window_at(w, r, off, bytes);
  (void)c;
  if (!p) return -1;
  std::memcpy(p, src, bytes);
  return 0;
}
int fake_notify(const pypto_kernel_ctx*, int32_t w, int32_t r, uint64_t off, int32_t value,
                int32_t op) {
  char* p = window_at(w, r, off, 4);
  if (!p) return -1;
  int32_t* cell = reinterpret_cast<int32_t*>(p);
  if (op == PYPTO_STORE_ADD)
    __atomic_fetch_add(cell, value, __ATOMIC_SEQ_CST);
  else
    __atomic_store_n(cell, value, __ATOMIC_SEQ_CST);
  return 0;
}
int fake_wait(const pypto_kernel_ctx* ctx, int32_t w, uint64_t off, int32_t cmp, int32_t expected) {
  char* p = window_at(w, ctx->rank, off, 4);
  if (!p || cmp != PYPTO_CMP_GE) return -1;
  for (int spin = 0; spin < 5000000; ++spin) {
    if (__atomic_load_n(reinterpret_cast<int32_t*>(p), __ATOMIC_SEQ_CST) >= expected) return 0;
    std::this_thread::yield();
  }
  g_comm_error[ctx->rank] = "wait timed out";
  return -1;
}
void* mapped_peer(const pypto_kernel_ctx*, int32_t w, int32_t r) { return window_at(w, r, 0, 0); }

std::atomic<int> g_remote_stores{0};
int counted_remote_store(const pypto_kernel_ctx* c, int32_t w, int32_t r, uint64_t off,
                         const void* src, uint64_t count, int32_t dtype, int32_t op) {
  ++g_remote_stores;
  return fake_remote_store(c, w, r, off, src, count, dtype, op);
}
// The rma path (no mapped copies) and the shm path (peer_pointer maps them).
const pypto_comm_api kFakeComm = {fake_remote_load, counted_remote_store, fake_put, no_get,
                                  fake_notify,      fake_wait,            no_barrier, no_peer,
                                  no_call_site};
const pypto_comm_api kFakeMappedComm = {fake_remote_load, counted_remote_store, fake_put,
                                        no_get,           fake_notify,          fake_wait,
                                        no_barrier,       mapped_peer,          no_call_site};

struct CommCalls {
  int remote_loads = 0, remote_stores = 0;
};

// Runs kernel(inp, out, data, signal) on both ranks at once, rank r's input
// iota(n, 0.1 * (r + 1), r), and checks that every rank's out is the sum of
// both inputs. Returns the remote_load and remote_store calls made.
CommCalls run_sum_on_two_ranks(const LoweredKernel& k, const std::string& name, int n,
                               int signal_cells, const pypto_comm_api* comm,
                               const std::vector<int64_t>& scalars = {}) {
  g_remote_loads = 0;
  g_remote_stores = 0;
  Kernel kernel(name, k.cpp_body);
  std::vector<float> in[kRanks], out[kRanks];
  pypto_window windows[kRanks][2];
  pypto_kernel_ctx ctx[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    in[r] = iota(size_t(n), 0.1f * float(r + 1), float(r));
    out[r].assign(size_t(n), 0);
    g_windows[0][r].assign(size_t(n) * sizeof(float), 0);
    g_windows[1][r].assign(size_t(signal_cells) * sizeof(int32_t), 0);
    windows[r][0] = {"data", g_windows[0][r].data(), g_windows[0][r].size(), PYPTO_F32, 0};
    windows[r][1] = {"signal", g_windows[1][r].data(), g_windows[1][r].size(), PYPTO_I32, 1};
    std::memset(&ctx[r], 0, sizeof ctx[r]);
    ctx[r].rank = r;
    ctx[r].world = kRanks;
    ctx[r].num_windows = 2;
    ctx[r].windows = windows[r];
    ctx[r].hooks = &kHooks;
    ctx[r].comm = comm;
  }
  std::vector<std::thread> threads;
  const int64_t rows = n / 256;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      kernel.run_in({tensor(in[r].data(), PYPTO_F32, {rows, 256}),
                     tensor(out[r].data(), PYPTO_F32, {rows, 256})},
                    &ctx[r], scalars);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(last_error(), "");
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(g_comm_error[r], "");
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(out[r][size_t(i)], in[0][size_t(i)] + in[1][size_t(i)]) << r << "," << i;
  }
  return {g_remote_loads, g_remote_stores};
}

// The quickstart's reduce_step (compiler/testdata/reduce.ptl) on two ranks: notify,
// wait, remote loads; every rank ends with the sum of both inputs. Its per-peer
// remote_load + add is a fused group: through remote_load without mapped copies,
// in place from the peer's copy with them.
int run_reduce_step(const pypto_comm_api* comm) {
  const LoweredKernel k = lower_file("reduce.ptl", "reduce_step", kRanks);
  return run_sum_on_two_ranks(k, "reduce_step", 256, kRanks, comm).remote_loads;
}

TEST(PtoEmitCppTest, ReduceStepRunsOnTwoRanks) {
  EXPECT_EQ(run_reduce_step(&kFakeComm), kRanks);  // one per rank: its one peer
}

TEST(PtoEmitCppTest, ReduceStepReadsMappedPeerCopiesInPlace) {
  EXPECT_EQ(run_reduce_step(&kFakeMappedComm), 0);
}

// Kernel sources of build directories generated before remote_store views
// call remote_view without saying which instruction it is for.
TEST(PtoEmitCppTest, OlderRemoteViewCallsStillCompileAndReadInPlace) {
  LoweredKernel k = lower_file("reduce.ptl", "reduce_step", kRanks);
  const std::string current = "\"remote_load\", &";
  const size_t at = k.cpp_body.find(current);
  ASSERT_NE(at, std::string::npos);
  k.cpp_body.replace(at, current.size(), "&");
  EXPECT_EQ(run_sum_on_two_ranks(k, "reduce_step", 256, kRanks, &kFakeMappedComm).remote_loads, 0);
}

// The mesh allreduce's shape (compiler/lib/collectives.ptl): each rank reduces
// its half of the rows from both windows and stores the result into both. The
// loop passes unroll the loops over peers and unswitch the op, so the load, the
// peer's load, the add, the store and the store to the peer are one fused group.
const char* kMeshSum =
    "kernel aiv mesh(inp: in f32[4, 256], out: out f32[4, 256], data: window f32[4, 256],\n"
    "                signal: window i32[2 * WORLD, 1], op: i32) {\n"
    "  let me = rank()\n"
    "  store(load(inp, [0, 0], [4, 256]), data, [0, 0])\n"
    "  for k in 1 .. WORLD { notify(signal, (me + k) % WORLD, [me, 0], 1, add) }\n"
    "  for k in 1 .. WORLD { wait(signal, [(me + k) % WORLD, 0], ge, 1) }\n"
    "  for i in 2 * me .. 2 * me + 2 step 2 {\n"
    "    let acc = load(data, [i, 0], [2, 256])\n"
    "    for k in 1 .. WORLD {\n"
    "      if op == 0 { acc = add(acc, remote_load(data, (me + k) % WORLD, [i, 0], [2, 256])) }\n"
    "      else { acc = max(acc, remote_load(data, (me + k) % WORLD, [i, 0], [2, 256])) }\n"
    "    }\n"
    "    store(acc, data, [i, 0])\n"
    "    for k in 1 .. WORLD { remote_store(acc, data, (me + k) % WORLD, [i, 0]) }\n"
    "  }\n"
    "  for k in 1 .. WORLD { notify(signal, (me + k) % WORLD, [WORLD + me, 0], 1, add) }\n"
    "  for k in 1 .. WORLD { wait(signal, [WORLD + (me + k) % WORLD, 0], ge, 1) }\n"
    "  store(load(data, [0, 0], [4, 256]), out, [0, 0])\n"
    "}\n"
    "chip sum(inp: in f32[4, 256], out: out f32[4, 256], data: window f32[4, 256],\n"
    "         signal: window i32[2 * WORLD, 1]) { mesh(inp, out, data, signal, 0) }\n"
    "host main(x: in f32[WORLD, 4, 256], y: out f32[WORLD, 4, 256]) {\n"
    "  let data = window_buffer(f32[4, 256]); let signal = window_buffer(i32[2 * WORLD, 1])\n"
    "  for r in 0 .. WORLD { sum(x[r], y[r], data, signal) on r }\n"
    "}\n";

TEST(PtoEmitCppTest, MeshSumStoresIntoMappedPeerCopiesInPlace) {
  const LoweredKernel k = lower_source(kMeshSum, "mesh", kRanks);
  EXPECT_NE(k.cpp_body.find("// fused: 5 instructions over [2, 256] tiles, one pass"),
            std::string::npos)
      << k.cpp_body;
  const CommCalls mapped = run_sum_on_two_ranks(k, "mesh", 4 * 256, 2 * kRanks, &kFakeMappedComm, {0});
  EXPECT_EQ(mapped.remote_loads, 0);
  EXPECT_EQ(mapped.remote_stores, 0);
  // Without mapped copies the same group runs one instruction at a time.
  const CommCalls rma = run_sum_on_two_ranks(k, "mesh", 4 * 256, 2 * kRanks, &kFakeComm, {0});
  EXPECT_EQ(rma.remote_loads, kRanks);
  EXPECT_EQ(rma.remote_stores, kRanks);
}

// Integer tiles, casts, reductions, broadcasts and a runtime out-of-range
// offset, from a hand-written listing through pypto-ptoas.
const char* kIntListing =
    ".kernel ints aiv\n"
    ".tensor x in i32[4, 8]\n"
    ".tensor y out f32[4, 8]\n"
    ".tensor s out f32[4, 1]\n"
    ".scalar row i64\n"
    "  %a:i32[4, 8] = tload x[0, 0]\n"
    "  %b:i32[1, 8] = tload x[row, 0]\n"
    "  %a:i32[4, 8] = tmul %a, %b\n"
    "  %a:i32[4, 8] = tsub %a, 3\n"
    "  %f:f32[4, 8] = tcvt %a\n"
    "  %m:f32[4, 1] = trow_max %f\n"
    "  %f:f32[4, 8] = tdiv %f, %m\n"
    "  %r:f32[4, 1] = trow_sum %f\n"
    "  tstore %f, y[0, 0]\n"
    "  tstore %r, s[0, 0]\n"
    ".end\n";

TEST(PtoEmitCppTest, PtoasToolTranslatesAListing) {
  char tmpl[] = "/tmp/pto_tool_test.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string pto = dir + "/ints.pto", cpp = dir + "/.ints.tmp-1-0.cpp";
  std::ofstream(pto) << kIntListing;
  std::ostringstream out, err;
  ASSERT_EQ(run_ptoas({pto, "-o", cpp}, out, err), 0) << err.str();
  std::ifstream in(cpp);
  std::stringstream body;
  body << in.rdbuf();
  std::string diags;
  auto unit = parse_pto(kIntListing, &diags);
  ASSERT_TRUE(unit) << diags;
  EXPECT_EQ(body.str(), pto::emit_cpp(*unit));
  // No sentinel line may appear in the output (the splice refuses it).
  EXPECT_EQ(body.str().find("// ---"), std::string::npos);

  Kernel kernel("ints", body.str());
  std::vector<int32_t> x(32);
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = i % 8 + i / 8 + 1;
  std::vector<float> y(32), s(4);
  const int64_t row = 2;
  ASSERT_EQ(kernel.run({tensor(x.data(), PYPTO_I32, {4, 8}), tensor(y.data(), PYPTO_F32, {4, 8}),
                        tensor(s.data(), PYPTO_F32, {4, 1})},
                       {row}),
            "");
  for (int r = 0; r < 4; ++r) {
    float v[8], m = -1e30f, sum = 0;
    for (int j = 0; j < 8; ++j) {
      v[j] = float(x[static_cast<size_t>(r * 8 + j)] * x[static_cast<size_t>(row * 8 + j)] - 3);
      m = std::max(m, v[j]);
    }
    for (int j = 0; j < 8; ++j) {
      EXPECT_FLOAT_EQ(y[static_cast<size_t>(r * 8 + j)], v[j] / m);
      sum += v[j] / m;
    }
    EXPECT_NEAR(s[static_cast<size_t>(r)], sum, 1e-5);
  }
  // A run-time offset outside the tensor is reported, not read.
  const std::string e = kernel.run({tensor(x.data(), PYPTO_I32, {4, 8}), tensor(y.data(), PYPTO_F32, {4, 8}),
                                    tensor(s.data(), PYPTO_F32, {4, 1})},
                                   {int64_t{4}});
  EXPECT_EQ(e, "ints: load of a [1, 8] tile at [4, 0] is outside 'x' [4, 8]");

  // Usage and listing errors.
  std::ostringstream e2;
  EXPECT_EQ(run_ptoas({pto}, out, e2), 2);
  EXPECT_NE(e2.str().find("usage: pypto-ptoas <unit>.pto -o <unit>.cpp"), std::string::npos);
  std::ostringstream e3;
  EXPECT_EQ(run_ptoas({pto, "-o", cpp, "--fast"}, out, e3), 2);
  std::ofstream(dir + "/bad.pto") << ".kernel bad aiv\n  %a:i64 = rnk\n.end\n";
  std::ostringstream e4;
  EXPECT_EQ(run_ptoas({dir + "/bad.pto", "-o", dir + "/bad.cpp"}, out, e4), 1);
  EXPECT_EQ(e4.str(), dir + "/bad.pto:2:12: error: unknown instruction 'rnk'\n  %a:i64 = rnk\n"
                            "           ^~~\n1 error generated.\n");
  EXPECT_FALSE(fs::exists(dir + "/bad.cpp"));
  std::ostringstream e5;
  EXPECT_EQ(run_ptoas({dir + "/missing.pto", "-o", cpp}, out, e5), 1);
  // --help and --version answer on stdout and succeed, like every other command.
  std::ostringstream help, version, quiet;
  EXPECT_EQ(run_ptoas({"--help"}, help, quiet), 0);
  EXPECT_EQ(help.str().rfind("usage: pypto-ptoas <unit>.pto -o <unit>.cpp", 0), 0u);
  EXPECT_EQ(run_ptoas({"--version"}, version, quiet), 0);
  EXPECT_EQ(version.str(), version_text("pypto-ptoas") + "\n");
  EXPECT_EQ(quiet.str(), "");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace pypto::compiler
