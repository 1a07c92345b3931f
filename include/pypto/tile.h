/* Tile helpers for kernels (C++17, header-only).
 *
 * Kernels are compiled by the assembler with portable flags
 * (-std=c++17 -O2 -fPIC -shared, no -march=native; docs/cache-and-replay.md),
 * so nothing here may assume an ISA at compile time. The hot paths are
 * compiled several times with GCC/Clang `target` attributes and picked at run
 * time with __builtin_cpu_supports: AVX-512, AVX2+FMA, portable scalar.
 *
 *   - Tile<T>: a strided 2-D view (element pointer, rows, cols, leading
 *     dimension) over a pypto_tensor argument, with checks;
 *   - matmul_f32: C (+)= A * B, row-major, packed and register-blocked;
 *   - elementwise f32 helpers over 2-D strided tiles: add sub mul div max min
 *     (tile-tile and tile-scalar: add / add_scalar ...), exp sqrt neg.
 *
 * Every helper is deterministic for a given ISA; the ISAs differ only in
 * rounding (FMA contraction, summation order), within a few ulps.
 */
#ifndef PYPTO_TILE_H_
#define PYPTO_TILE_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_abi.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PYPTO_TILE_X86 1
#include <immintrin.h>
#define PYPTO_TILE_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
#define PYPTO_TILE_AVX2 __attribute__((target("avx2,fma")))
#else
#define PYPTO_TILE_X86 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PYPTO_TILE_INLINE inline __attribute__((always_inline))
#else
#define PYPTO_TILE_INLINE inline
#endif

namespace pypto {
namespace tile {

// ===================================================================== views

template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr int32_t value = PYPTO_F32;
};
template <>
struct dtype_of<int8_t> {
  static constexpr int32_t value = PYPTO_I8;
};
template <>
struct dtype_of<int16_t> {
  static constexpr int32_t value = PYPTO_I16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr int32_t value = PYPTO_I32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr int32_t value = PYPTO_I64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr int32_t value = PYPTO_U8;
};
template <class T>
struct dtype_of<const T> : dtype_of<T> {};

// Element 0 of a tensor view (its offset applied).
template <class T>
T* element_ptr(const pypto_tensor& t) {
  return static_cast<T*>(t.data) + t.offset;
}

// A row-major 2-D view: element (r, c) is data[r * ld + c].
template <class T>
struct Tile {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;

  T& operator()(int64_t r, int64_t c) const { return data[r * ld + c]; }
  T* row(int64_t r) const { return data + r * ld; }
  int64_t numel() const { return rows * cols; }
  // Rows [r0, r0 + nr) x cols [c0, c0 + nc); the caller keeps it in bounds.
  Tile sub(int64_t r0, int64_t c0, int64_t nr, int64_t nc) const {
    return Tile{data + r0 * ld + c0, nr, nc, ld};
  }
  operator Tile<const T>() const { return Tile<const T>{data, rows, cols, ld}; }
};

// Views `t` as a Tile<T>. Returns nullptr on success, else why not (a static
// string). Accepted: dtype matching T; 1-D (one row) or 2-D, or more
// dimensions whose leading extents are all 1; unit stride along the last
// dimension; rows that do not overlap (ld >= cols).
template <class T>
const char* as_tile(const pypto_tensor& t, Tile<T>* out) {
  if (t.dtype != dtype_of<T>::value) return "dtype does not match the element type";
  if (t.ndim < 1 || t.ndim > PYPTO_MAX_DIMS) return "needs 1 to 8 dimensions";
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] < 0) return "negative extent";
  for (int d = 0; d + 2 < t.ndim; ++d)
    if (t.shape[d] != 1) return "dimensions before the last two must have extent 1";
  const int last = t.ndim - 1;
  const int64_t rows = t.ndim == 1 ? 1 : t.shape[last - 1];
  const int64_t cols = t.shape[last];
  if (cols > 1 && t.strides[last] != 1) return "the last dimension must have stride 1";
  const int64_t ld = t.ndim == 1 || rows <= 1 ? cols : t.strides[last - 1];
  if (rows > 1 && ld < cols) return "rows overlap (leading stride smaller than the row length)";
  if (rows * cols > 0 && !t.data) return "null data";
  out->data = element_ptr<T>(t);
  out->rows = rows;
  out->cols = cols;
  out->ld = ld;
  return nullptr;
}

// as_tile on tensor argument `index` of a kernel; on failure reports an error
// naming the kernel and the argument through the runtime hook and returns
// false (the kernel should return right away).
template <class T>
bool arg_tile(const pypto_kernel_args* args, int index, const char* kernel, Tile<T>* out) {
  const char* why = index < 0 || index >= args->num_tensors ? "no such tensor argument"
                                                            : as_tile(args->tensors[index], out);
  if (!why) return true;
  char message[256];
  snprintf(message, sizeof message, "%s: tensor argument %d: %s", kernel, index, why);
  args->ctx->hooks->report_error(args->ctx, message);
  return false;
}

// ================================================================ ISA choice

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

inline const char* isa_name(Isa isa) {
  return isa == Isa::kAvx512 ? "avx512" : isa == Isa::kAvx2 ? "avx2" : "scalar";
}

inline bool isa_supported(Isa isa) {
#if PYPTO_TILE_X86
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma");
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kScalar:
      return true;
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

// The best ISA of this CPU, decided once per binary.
inline Isa best_isa() {
  static const Isa isa = isa_supported(Isa::kAvx512) ? Isa::kAvx512
                         : isa_supported(Isa::kAvx2) ? Isa::kAvx2
                                                     : Isa::kScalar;
  return isa;
}

// ==================================================================== matmul

namespace detail {

// Cache blocking (BLIS loop order jc > pc > ic > jr > ir): a KC x NR panel of
// packed B stays in L1 while the micro-kernel streams MC x KC of packed A
// from L2; KC x NC of packed B lives in L2/L3.
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 168;  // 12 panels of 14 rows (AVX-512), 28 of 6 (AVX2)
constexpr int64_t kNc = 2048;

// Per-thread packing buffers, grown on demand and kept: a kernel runs on a
// long-lived core thread, and fresh pages cost a fault each (~10 us).
struct PackBuffers {
  struct Buffer {
    float* data = nullptr;
    size_t size = 0;  // floats
    ~Buffer() { free(data); }
    // At least `want` floats, 64-byte aligned; nullptr when out of memory.
    float* grow(size_t want) {
      if (want > size) {
        const size_t bytes = (want * sizeof(float) + 63) / 64 * 64;
        void* p = aligned_alloc(64, bytes);
        if (!p) return nullptr;
        free(data);
        data = static_cast<float*>(p);
        size = bytes / sizeof(float);
      }
      return data;
    }
  };
  Buffer a, b;
};

inline PackBuffers& pack_buffers() {
  static thread_local PackBuffers buffers;
  return buffers;
}

// Packs rows [0, m) x cols [0, k) of A row by row with the fixed row stride
// kKc: element (i, kk) at [i * kKc + kk]; rows up to the next multiple of MR
// are zero. Rows stay contiguous (a memcpy each, far cheaper than the usual
// k-major interleave) and the micro-kernel still reaches every row of its
// panel with a constant displacement (i * kKc * 4 bytes), no extra register.
template <int MR>
inline void pack_a(int64_t m, int64_t k, const float* a, int64_t lda, float* out) {
  const int64_t padded = (m + MR - 1) / MR * MR;
  for (int64_t i = 0; i < padded; ++i) {
    if (i < m)
      memcpy(out + i * kKc, a + i * lda, size_t(k) * sizeof(float));
    else
      memset(out + i * kKc, 0, size_t(k) * sizeof(float));
  }
}

// Packs rows [0, k) x cols [0, n) of B into panels of NR columns: panel p
// holds element (kk, p*NR + c) at [p*NR*k + kk*NR + c]; columns past n are zero.
template <int NR>
inline void pack_b(int64_t k, int64_t n, const float* b, int64_t ldb, float* out) {
  for (int64_t j0 = 0; j0 < n; j0 += NR) {
    const int64_t nr = n - j0 < NR ? n - j0 : NR;
    for (int64_t kk = 0; kk < k; ++kk) {
      memcpy(out + kk * NR, b + kk * ldb + j0, size_t(nr) * sizeof(float));
      if (nr < NR) memset(out + kk * NR + nr, 0, size_t(NR - nr) * sizeof(float));
    }
    out += NR * k;
  }
}

// Micro-kernels: an R x NR block of C from R rows of packed A (row stride kKc)
// and a packed B panel (k x NR). `add`: C += product, else C = product. R is
// the full panel height MR, or a power of two below it for the last rows.

template <int R, int NR>
inline void ukernel_scalar(int64_t k, const float* a, const float* b, float* c, int64_t ldc,
                           bool add) {
  float acc[R][NR] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int i = 0; i < R; ++i) {
      const float ai = a[i * kKc + kk];
      for (int j = 0; j < NR; ++j) acc[i][j] += ai * b[kk * NR + j];
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = add ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

#if PYPTO_TILE_X86
// 6 x 16: 12 ymm accumulators + 2 for B + 1 broadcast fill the 16 registers.
template <int R>
PYPTO_TILE_AVX2 inline void ukernel_avx2(int64_t k, const float* a, const float* b, float* c,
                                         int64_t ldc, bool add) {
  __m256 c0[R], c1[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) c0[i] = c1[i] = _mm256_setzero_ps();
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i * kKc + kk);
      c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
    }
    b += 16;
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float* ci = c + i * ldc;
    if (add) {
      c0[i] = _mm256_add_ps(c0[i], _mm256_loadu_ps(ci));
      c1[i] = _mm256_add_ps(c1[i], _mm256_loadu_ps(ci + 8));
    }
    _mm256_storeu_ps(ci, c0[i]);
    _mm256_storeu_ps(ci + 8, c1[i]);
  }
}

// 14 x 32: 28 zmm accumulators + 2 for B + 1 broadcast of the 32 registers.
template <int R>
PYPTO_TILE_AVX512 inline void ukernel_avx512(int64_t k, const float* a, const float* b, float* c,
                                             int64_t ldc, bool add) {
  __m512 c0[R], c1[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * kKc + kk]);
      c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
    }
    b += 32;
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float* ci = c + i * ldc;
    if (add) {
      c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(ci));
      c1[i] = _mm512_add_ps(c1[i], _mm512_loadu_ps(ci + 16));
    }
    _mm512_storeu_ps(ci, c0[i]);
    _mm512_storeu_ps(ci + 16, c1[i]);
  }
}

struct KernelAvx512 {
  static constexpr int kMr = 14, kNr = 32;
  template <int R>
  static void run(int64_t k, const float* a, const float* b, float* c, int64_t ldc, bool add) {
    ukernel_avx512<R>(k, a, b, c, ldc, add);
  }
};
struct KernelAvx2 {
  static constexpr int kMr = 6, kNr = 16;
  template <int R>
  static void run(int64_t k, const float* a, const float* b, float* c, int64_t ldc, bool add) {
    ukernel_avx2<R>(k, a, b, c, ldc, add);
  }
};
#endif  // PYPTO_TILE_X86

struct KernelScalar {
  static constexpr int kMr = 4, kNr = 16;
  template <int R>
  static void run(int64_t k, const float* a, const float* b, float* c, int64_t ldc, bool add) {
    ukernel_scalar<R, kNr>(k, a, b, c, ldc, add);
  }
};

// The last `rows` (< 2R) rows of a full-width block, R rows at a time for
// R = powers of two: a 2-row remainder costs 2 rows of FMAs, not MR.
template <class K, int R>
inline void remainder_rows(int64_t rows, int64_t k, const float* a, const float* b, float* c,
                           int64_t ldc, bool add) {
  if (rows >= R) {
    K::template run<R>(k, a, b, c, ldc, add);
    a += R * kKc;
    c += R * ldc;
    rows -= R;
  }
  if constexpr (R > 1) remainder_rows<K, R / 2>(rows, k, a, b, c, ldc, add);
}

constexpr int highest_power_of_two_below(int n) {
  int p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

// The blocked driver for one micro-kernel family K. Blocks narrower than NR
// (the last columns) go through a local MR x NR buffer.
template <class K>
inline bool gemm_blocked(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  constexpr int MR = K::kMr, NR = K::kNr;
  static_assert(kMc % MR == 0, "MC must be a multiple of MR");
  PackBuffers& buf = pack_buffers();
  const int64_t nc_max = n < kNc ? n : kNc;
  const int64_t kc_max = k < kKc ? k : kKc;
  const int64_t mc_max = m < kMc ? m : kMc;
  float* bp = buf.b.grow(size_t((nc_max + NR - 1) / NR * NR * kc_max));
  float* ap = buf.a.grow(size_t((mc_max + MR - 1) / MR * MR * kKc));
  if (!bp || !ap) return false;
  alignas(64) float edge[MR * NR];
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = n - jc < kNc ? n - jc : kNc;
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = k - pc < kKc ? k - pc : kKc;
      const bool add = accumulate || pc > 0;
      pack_b<NR>(kc, nc, b + pc * ldb + jc, ldb, bp);
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = m - ic < kMc ? m - ic : kMc;
        pack_a<MR>(mc, kc, a + ic * lda + pc, lda, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t nr = nc - jr < NR ? nc - jr : NR;
          const float* bpanel = bp + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = mc - ir < MR ? mc - ir : MR;
            const float* apanel = ap + ir * kKc;
            float* cblock = c + (ic + ir) * ldc + jc + jr;
            if (nr == NR) {
              if (mr == MR)
                K::template run<MR>(kc, apanel, bpanel, cblock, ldc, add);
              else
                remainder_rows<K, highest_power_of_two_below(MR)>(mr, kc, apanel, bpanel, cblock,
                                                                  ldc, add);
            } else {
              K::template run<MR>(kc, apanel, bpanel, edge, NR, false);
              for (int64_t i = 0; i < mr; ++i)
                for (int64_t j = 0; j < nr; ++j)
                  cblock[i * ldc + j] =
                      add ? cblock[i * ldc + j] + edge[i * NR + j] : edge[i * NR + j];
            }
          }
        }
      }
    }
  }
  return true;
}

// Plain triple loop: the fallback when packing memory cannot be allocated.
inline void gemm_naive(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                       int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (!accumulate)
      for (int64_t j = 0; j < n; ++j) ci[j] = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float aik = a[i * lda + kk];
      const float* bk = b + kk * ldb;
      for (int64_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
    }
  }
}

}  // namespace detail

// C (+)= A * B, all row-major f32: A is M x K (leading dimension lda), B is
// K x N (ldb), C is M x N (ldc). accumulate = false overwrites C (it is not
// read); true adds to it. C must not overlap A or B. `isa` picks the code
// path (tests compare them); it must be supported (isa_supported).
inline void matmul_f32(Isa isa, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) memset(C + i * ldc, 0, size_t(N) * sizeof(float));
    return;
  }
  bool ok = false;
  switch (isa) {
#if PYPTO_TILE_X86
    case Isa::kAvx512:
      ok = detail::gemm_blocked<detail::KernelAvx512>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
      break;
    case Isa::kAvx2:
      ok = detail::gemm_blocked<detail::KernelAvx2>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
      break;
#endif
    default:
      ok = detail::gemm_blocked<detail::KernelScalar>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
      break;
  }
  if (!ok) detail::gemm_naive(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

inline void matmul_f32(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                       int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  matmul_f32(best_isa(), M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

// C (+)= A * B on tiles; returns false (and does nothing) when the shapes do
// not agree: A rows x K, B K x cols, C rows x cols.
inline bool matmul_f32(Tile<const float> a, Tile<const float> b, Tile<float> c, bool accumulate) {
  if (a.cols != b.rows || c.rows != a.rows || c.cols != b.cols) return false;
  matmul_f32(c.rows, c.cols, a.cols, a.data, a.ld, b.data, b.ld, c.data, c.ld, accumulate);
  return true;
}

// =============================================================== elementwise
//
// f32 over 2-D strided tiles (rows x cols, leading dimensions in elements).
// The output may be one of the inputs (in place) but must not partially
// overlap them. Semantics, identical on every ISA:
//   max(a, b) = a > b ? a : b, min(a, b) = a < b ? a : b (so a NaN in `a`
//   yields b); exp: Cephes-style polynomial, within 2 ulp of the exact value
//   for normal results, +inf above 88.72, 0 below -103.97, NaN stays NaN;
//   sqrt: IEEE (correctly rounded).

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMax, kMin };
enum class UnaryOp { kExp, kSqrt, kNeg };

namespace detail {

// Ops work on float and on GCC vector types alike. Results go through an
// out-parameter: returning a 512-bit vector from a function without the
// AVX-512 target would trigger -Wpsabi even though everything is inlined.
struct OpAdd {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T& b) {
    r = a + b;
  }
};
struct OpSub {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T& b) {
    r = a - b;
  }
};
struct OpMul {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T& b) {
    r = a * b;
  }
};
struct OpDiv {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T& b) {
    r = a / b;
  }
};
struct OpMax {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T& b) {
    r = a > b ? a : b;
  }
};
struct OpMin {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T& b) {
    r = a < b ? a : b;
  }
};
struct OpNeg {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T&) {
    r = -a;
  }
};

#if PYPTO_TILE_X86
// Plain GCC vector types (the intrinsic types carry may_alias, which does not
// survive as a template argument).
typedef float v8sf __attribute__((vector_size(32)));
typedef float v16sf __attribute__((vector_size(64)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef int32_t v16si __attribute__((vector_size(64)));
#endif

// The 32-bit integer type of the same width as float type F.
template <class F>
struct IntOf {
  using type = int32_t;
};
#if PYPTO_TILE_X86
template <>
struct IntOf<v8sf> {
  using type = v8si;
};
template <>
struct IntOf<v16sf> {
  using type = v16si;
};
#endif

// Bit copies between float and int32 lanes (no conversion).
template <class To, class From>
PYPTO_TILE_INLINE void bit_copy(To& to, const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_copy between types of different sizes");
  memcpy(&to, &from, sizeof to);
}

// Float to int32 lanes, truncating (the callers pass integral values).
PYPTO_TILE_INLINE void to_int(int32_t& r, const float& x) { r = static_cast<int32_t>(x); }
template <class I, class F>
PYPTO_TILE_INLINE void to_int(I& r, const F& x) {
  r = __builtin_convertvector(x, I);
}

// sqrt has no generic vector form: one overload per ISA, each with its target
// (the callers with that target inline them).
struct OpSqrt {
  static PYPTO_TILE_INLINE void apply(float& r, const float& a, const float&) {
    r = __builtin_sqrtf(a);
  }
#if PYPTO_TILE_X86
  PYPTO_TILE_AVX2 static PYPTO_TILE_INLINE void apply(v8sf& r, const v8sf& a, const v8sf&) {
    r = _mm256_sqrt_ps(a);
  }
  PYPTO_TILE_AVX512 static PYPTO_TILE_INLINE void apply(v16sf& r, const v16sf& a, const v16sf&) {
    // maskz with every lane: _mm512_sqrt_ps trips GCC 12's -Wmaybe-uninitialized.
    r = _mm512_maskz_sqrt_ps(static_cast<__mmask16>(0xffff), a);
  }
#endif
};

// exp(x) = 2^n * e^r with n = round(x / ln 2), |r| <= ln(2) / 2 (Cody-Waite
// split of ln 2), e^r by the Cephes expf polynomial; 2^n is applied as two
// exact powers of two so that results down into the subnormals come out right.
struct OpExp {
  template <class T>
  static PYPTO_TILE_INLINE void apply(T& r, const T& a, const T&) {
    using I = typename IntOf<T>::type;
    const T hi = T() + 88.7228394f;   // ln(FLT_MAX); T() + c splats c on vector types
    const T lo = T() + -103.972084f;  // ln(smallest subnormal / 2)
    T x = a > hi ? hi : a;
    x = x < lo ? lo : x;
    // Round to nearest by the 1.5 * 2^23 trick (|x / ln 2| < 2^22).
    const T n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    T f = x - n * 0.693359375f;
    f = f - n * -2.12194440e-4f;
    T p = 1.9875691500e-4f * f + 1.3981999507e-3f;
    p = p * f + 8.3334519073e-3f;
    p = p * f + 4.1665795894e-2f;
    p = p * f + 1.6666665459e-1f;
    p = p * f + 5.0000001201e-1f;
    p = p * (f * f) + f + 1.0f;
    I ni;
    to_int(ni, n);
    const I half = ni >> 1;
    const I e1 = (half + 127) << 23;
    const I e2 = (ni - half + 127) << 23;
    T p1, p2;
    bit_copy(p1, e1);
    bit_copy(p2, e2);
    T y = p * p1 * p2;
    const T inf = T() + __builtin_inff();
    const T zero = T();
    y = a > hi ? inf : y;
    y = a < lo ? zero : y;
    r = a != a ? a : y;  // NaN
  }
};

// One kernel per (op, ISA). kScalarB: the second operand is the scalar `s`
// (tile-scalar and unary ops) instead of the tile `b`.
template <class Op, bool kScalarB>
inline void ew_scalar(int64_t rows, int64_t cols, const float* a, int64_t lda, const float* b,
                      int64_t ldb, float s, float* c, int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* ai = a + i * lda;
    const float* bi = kScalarB ? nullptr : b + i * ldb;
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      float r;
      Op::apply(r, ai[j], kScalarB ? s : bi[j]);
      ci[j] = r;
    }
  }
}

#if PYPTO_TILE_X86
template <class Op, bool kScalarB>
PYPTO_TILE_AVX2 inline void ew_avx2(int64_t rows, int64_t cols, const float* a, int64_t lda,
                                    const float* b, int64_t ldb, float s, float* c, int64_t ldc) {
  const v8sf sv = _mm256_set1_ps(s);
  for (int64_t i = 0; i < rows; ++i) {
    const float* ai = a + i * lda;
    const float* bi = kScalarB ? nullptr : b + i * ldb;
    float* ci = c + i * ldc;
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      v8sf r;
      const v8sf x = _mm256_loadu_ps(ai + j);
      const v8sf y = kScalarB ? sv : v8sf(_mm256_loadu_ps(bi + j));
      Op::apply(r, x, y);
      _mm256_storeu_ps(ci + j, r);
    }
    for (; j < cols; ++j) {
      float r;
      Op::apply(r, ai[j], kScalarB ? s : bi[j]);
      ci[j] = r;
    }
  }
}

template <class Op, bool kScalarB>
PYPTO_TILE_AVX512 inline void ew_avx512(int64_t rows, int64_t cols, const float* a, int64_t lda,
                                        const float* b, int64_t ldb, float s, float* c,
                                        int64_t ldc) {
  const v16sf sv = _mm512_set1_ps(s);
  for (int64_t i = 0; i < rows; ++i) {
    const float* ai = a + i * lda;
    const float* bi = kScalarB ? nullptr : b + i * ldb;
    float* ci = c + i * ldc;
    int64_t j = 0;
    for (; j + 16 <= cols; j += 16) {
      v16sf r;
      const v16sf x = _mm512_loadu_ps(ai + j);
      const v16sf y = kScalarB ? sv : v16sf(_mm512_loadu_ps(bi + j));
      Op::apply(r, x, y);
      _mm512_storeu_ps(ci + j, r);
    }
    if (j < cols) {  // masked tail: lanes past the row are neither read nor written
      const __mmask16 m = static_cast<__mmask16>((1u << (cols - j)) - 1);
      v16sf r;
      const v16sf x = _mm512_maskz_loadu_ps(m, ai + j);
      const v16sf y = kScalarB ? sv : v16sf(_mm512_maskz_loadu_ps(m, bi + j));
      Op::apply(r, x, y);
      _mm512_mask_storeu_ps(ci + j, m, r);
    }
  }
}
#endif  // PYPTO_TILE_X86

template <class Op, bool kScalarB>
inline void ew(Isa isa, int64_t rows, int64_t cols, const float* a, int64_t lda, const float* b,
               int64_t ldb, float s, float* c, int64_t ldc) {
  if (rows <= 0 || cols <= 0) return;
#if PYPTO_TILE_X86
  if (isa == Isa::kAvx512) return ew_avx512<Op, kScalarB>(rows, cols, a, lda, b, ldb, s, c, ldc);
  if (isa == Isa::kAvx2) return ew_avx2<Op, kScalarB>(rows, cols, a, lda, b, ldb, s, c, ldc);
#endif
  (void)isa;
  ew_scalar<Op, kScalarB>(rows, cols, a, lda, b, ldb, s, c, ldc);
}

template <class Op>
inline bool ew_tiles(Tile<const float> a, Tile<const float> b, Tile<float> c) {
  if (a.rows != c.rows || a.cols != c.cols || b.rows != c.rows || b.cols != c.cols) return false;
  ew<Op, false>(best_isa(), c.rows, c.cols, a.data, a.ld, b.data, b.ld, 0.0f, c.data, c.ld);
  return true;
}

template <class Op>
inline bool ew_tile_scalar(Tile<const float> a, float s, Tile<float> c) {
  if (a.rows != c.rows || a.cols != c.cols) return false;
  ew<Op, true>(best_isa(), c.rows, c.cols, a.data, a.ld, nullptr, 0, s, c.data, c.ld);
  return true;
}

}  // namespace detail

// Every op on an explicit ISA (tests compare them): c = a op b, c = a op s
// and c = op(a).
inline void binary_f32(Isa isa, BinaryOp op, int64_t rows, int64_t cols, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  using namespace detail;
  switch (op) {
    case BinaryOp::kAdd:
      return ew<OpAdd, false>(isa, rows, cols, a, lda, b, ldb, 0, c, ldc);
    case BinaryOp::kSub:
      return ew<OpSub, false>(isa, rows, cols, a, lda, b, ldb, 0, c, ldc);
    case BinaryOp::kMul:
      return ew<OpMul, false>(isa, rows, cols, a, lda, b, ldb, 0, c, ldc);
    case BinaryOp::kDiv:
      return ew<OpDiv, false>(isa, rows, cols, a, lda, b, ldb, 0, c, ldc);
    case BinaryOp::kMax:
      return ew<OpMax, false>(isa, rows, cols, a, lda, b, ldb, 0, c, ldc);
    case BinaryOp::kMin:
      return ew<OpMin, false>(isa, rows, cols, a, lda, b, ldb, 0, c, ldc);
  }
}

inline void binary_scalar_f32(Isa isa, BinaryOp op, int64_t rows, int64_t cols, const float* a,
                              int64_t lda, float s, float* c, int64_t ldc) {
  using namespace detail;
  switch (op) {
    case BinaryOp::kAdd:
      return ew<OpAdd, true>(isa, rows, cols, a, lda, nullptr, 0, s, c, ldc);
    case BinaryOp::kSub:
      return ew<OpSub, true>(isa, rows, cols, a, lda, nullptr, 0, s, c, ldc);
    case BinaryOp::kMul:
      return ew<OpMul, true>(isa, rows, cols, a, lda, nullptr, 0, s, c, ldc);
    case BinaryOp::kDiv:
      return ew<OpDiv, true>(isa, rows, cols, a, lda, nullptr, 0, s, c, ldc);
    case BinaryOp::kMax:
      return ew<OpMax, true>(isa, rows, cols, a, lda, nullptr, 0, s, c, ldc);
    case BinaryOp::kMin:
      return ew<OpMin, true>(isa, rows, cols, a, lda, nullptr, 0, s, c, ldc);
  }
}

inline void unary_f32(Isa isa, UnaryOp op, int64_t rows, int64_t cols, const float* a, int64_t lda,
                      float* c, int64_t ldc) {
  using namespace detail;
  switch (op) {
    case UnaryOp::kExp:
      return ew<OpExp, true>(isa, rows, cols, a, lda, nullptr, 0, 0, c, ldc);
    case UnaryOp::kSqrt:
      return ew<OpSqrt, true>(isa, rows, cols, a, lda, nullptr, 0, 0, c, ldc);
    case UnaryOp::kNeg:
      return ew<OpNeg, true>(isa, rows, cols, a, lda, nullptr, 0, 0, c, ldc);
  }
}

// The named helpers, on the best ISA. Pointer form: c = a op b over rows x
// cols. Tile form: returns false (and does nothing) when the shapes differ.
#define PYPTO_TILE_BINARY(name, Op)                                                           \
  inline void name(int64_t rows, int64_t cols, const float* a, int64_t lda, const float* b,   \
                   int64_t ldb, float* c, int64_t ldc) {                                      \
    detail::ew<detail::Op, false>(best_isa(), rows, cols, a, lda, b, ldb, 0.0f, c, ldc);      \
  }                                                                                           \
  inline bool name(Tile<const float> a, Tile<const float> b, Tile<float> c) {                 \
    return detail::ew_tiles<detail::Op>(a, b, c);                                             \
  }                                                                                           \
  inline void name##_scalar(int64_t rows, int64_t cols, const float* a, int64_t lda, float s, \
                            float* c, int64_t ldc) {                                          \
    detail::ew<detail::Op, true>(best_isa(), rows, cols, a, lda, nullptr, 0, s, c, ldc);      \
  }                                                                                           \
  inline bool name##_scalar(Tile<const float> a, float s, Tile<float> c) {                    \
    return detail::ew_tile_scalar<detail::Op>(a, s, c);                                       \
  }
PYPTO_TILE_BINARY(add, OpAdd)
PYPTO_TILE_BINARY(sub, OpSub)
PYPTO_TILE_BINARY(mul, OpMul)
PYPTO_TILE_BINARY(div, OpDiv)
PYPTO_TILE_BINARY(max, OpMax)
PYPTO_TILE_BINARY(min, OpMin)
#undef PYPTO_TILE_BINARY

#define PYPTO_TILE_UNARY(name, Op)                                                          \
  inline void name(int64_t rows, int64_t cols, const float* a, int64_t lda, float* c,       \
                   int64_t ldc) {                                                           \
    detail::ew<detail::Op, true>(best_isa(), rows, cols, a, lda, nullptr, 0, 0.0f, c, ldc); \
  }                                                                                         \
  inline bool name(Tile<const float> a, Tile<float> c) {                                    \
    return detail::ew_tile_scalar<detail::Op>(a, 0.0f, c);                                  \
  }
PYPTO_TILE_UNARY(exp, OpExp)
PYPTO_TILE_UNARY(sqrt, OpSqrt)
PYPTO_TILE_UNARY(neg, OpNeg)
#undef PYPTO_TILE_UNARY

}  // namespace tile
}  // namespace pypto

// The helpers of pypto-ptoas's generated kernel bodies (pypto::tile::pto).
#include "pto_runtime.h"

#endif  // PYPTO_TILE_H_
