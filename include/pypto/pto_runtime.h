/* Run-time helpers of the C++ that pypto-ptoas emits from a .pto listing
 * (docs/pto-format.md). Included by tile.h; C++17, header-only.
 *
 * A generated body `ptoas_<unit>` keeps every tile in one per-thread scratch
 * buffer (grown once, then reused: fresh pages cost a fault each), binds its
 * parameters through a Kernel (which checks them and reports problems through
 * ctx->hooks->report_error), and runs each tile instruction as one call here.
 * Tiles are contiguous row-major buffers; f32 elementwise work goes through
 * tile.h's vectorized helpers over the whole tile as one row, f32 matmul
 * through tile.h's register-blocked matmul_f32.
 */
#ifndef PYPTO_PTO_RUNTIME_H_
#define PYPTO_PTO_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_abi.h"

namespace pypto {
namespace tile {
namespace pto {

inline size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case PYPTO_F32:
    case PYPTO_I32:
      return 4;
    case PYPTO_F16:
    case PYPTO_BF16:
    case PYPTO_I16:
      return 2;
    case PYPTO_I64:
      return 8;
    default:
      return 1;
  }
}

// One growing 64-byte aligned buffer per thread.
struct Scratch {
  char* data = nullptr;
  size_t size = 0;
  ~Scratch() { free(data); }
  char* get(size_t want) {
    if (want == 0) want = 64;
    if (want > size) {
      const size_t bytes = (want + 63) / 64 * 64;
      void* p = aligned_alloc(64, bytes);
      if (!p) return nullptr;
      free(data);
      data = static_cast<char*>(p);
      size = bytes;
    }
    return data;
  }
};

inline char* scratch(size_t bytes) {
  static thread_local Scratch s;
  return s.get(bytes);
}

// 16-bit floats as stored in tensors and tiles: IEEE binary16 and bfloat16.
// Kernels only move and convert them (tload/tstore/tcvt) and multiply them
// (tmatmul, in f32); arithmetic happens after a tcvt to f32.
struct f16 {
  uint16_t bits;
};
struct bf16 {
  uint16_t bits;
};

inline float to_f32(f16 h) {
  const uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu, mant = h.bits & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
inline float to_f32(bf16 h) {
  const uint32_t bits = uint32_t(h.bits) << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
// Round to nearest, ties to even.
inline f16 to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return f16{uint16_t(sign | 0x7e00u)};  // NaN
  if (a >= 0x47800000u) return f16{uint16_t(sign | 0x7c00u)};  // overflow -> inf
  if (a < 0x38800000u) {                                       // half subnormal or zero
    if (a < 0x33000000u) return f16{sign};
    const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return f16{uint16_t(sign | h)};
  }
  uint32_t h = (a >> 13) - (112u << 10);
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return f16{uint16_t(sign | h)};
}
inline bf16 to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((x >> 16) | 0x40u)};
  return bf16{uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

// Element conversion for tcvt: through f32 for the 16-bit floats.
template <class To>
struct Convert {
  template <class From>
  static To from(From x) {
    return static_cast<To>(x);
  }
  static To from(f16 x) { return static_cast<To>(to_f32(x)); }
  static To from(bf16 x) { return static_cast<To>(to_f32(x)); }
};
template <>
struct Convert<f16> {
  template <class From>
  static f16 from(From x) {
    return to_f16(static_cast<float>(x));
  }
  static f16 from(f16 x) { return x; }
  static f16 from(bf16 x) { return to_f16(to_f32(x)); }
};
template <>
struct Convert<bf16> {
  template <class From>
  static bf16 from(From x) {
    return to_bf16(static_cast<float>(x));
  }
  static bf16 from(f16 x) { return to_bf16(to_f32(x)); }
  static bf16 from(bf16 x) { return x; }
};

enum BinOp { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3, kMax = 4, kMin = 5 };
enum Bcast { kFull = 0, kRow = 1, kCol = 2 };  // b is [r, c], [r, 1] or [1, c]

// The kernel's view of its arguments, with error reporting.
struct Kernel {
  const pypto_kernel_args* args;
  const char* unit;
  // The program line of the instruction running now (docs/pto-format.md,
  // "Source lines"): generated code sets it with at() before each instruction
  // that can fail at run time, and a failure names it; null: unknown.
  mutable const char* src_file = nullptr;
  mutable int src_line = 0;

  void at(const char* file, int line) const {
    src_file = file;
    src_line = line;
  }

  void fail(const char* message) const {
    char buf[640];
    if (src_file)
      snprintf(buf, sizeof buf, "%s: %s (at %s:%d)", unit, message, src_file, src_line);
    else
      snprintf(buf, sizeof buf, "%s: %s", unit, message);
    args->ctx->hooks->report_error(args->ctx, buf);
  }

  // The comm table, with the program line handed over for the one call that
  // follows, so the runtime's message for it names that line too.
  const pypto_comm_api* comm() const {
    const pypto_kernel_ctx* ctx = args->ctx;
    if (src_file && ctx->comm->set_call_site) ctx->comm->set_call_site(ctx, src_file, src_line);
    return ctx->comm;
  }

  static void format_dims(char* out, size_t cap, const int64_t* v, int n) {
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n && len + 24 < cap; ++i)
      len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? ", " : "", (long long)v[i]);
  }

  // Tensor argument `index` must have `dtype` and exactly `shape`.
  bool tensor(int index, const char* name, int32_t dtype, int ndim, const int64_t* shape,
              pypto_tensor* out) const {
    char msg[400];
    if (index >= args->num_tensors) {
      snprintf(msg, sizeof msg, "tensor argument %d ('%s') is missing", index, name);
      fail(msg);
      return false;
    }
    const pypto_tensor& t = args->tensors[index];
    bool ok = t.dtype == dtype && t.ndim == ndim && (t.data != nullptr);
    for (int d = 0; ok && d < ndim; ++d) ok = t.shape[d] == shape[d];
    if (!ok) {
      char want[160], got[160];
      format_dims(want, sizeof want, shape, ndim);
      format_dims(got, sizeof got, t.shape, t.ndim > 0 && t.ndim <= PYPTO_MAX_DIMS ? t.ndim : 0);
      snprintf(msg, sizeof msg,
               "tensor argument %d ('%s') must be dtype %d [%s], got dtype %d [%s]%s", index, name,
               (int)dtype, want, (int)t.dtype, got, t.data ? "" : " with null data");
      fail(msg);
      return false;
    }
    *out = t;
    return true;
  }

  // Window `name` of ctx->windows as a row-major tensor over its local copy.
  bool window(const char* name, int32_t dtype, int ndim, const int64_t* shape, pypto_tensor* out,
              int32_t* id) const {
    const pypto_kernel_ctx* ctx = args->ctx;
    char msg[400];
    uint64_t bytes = dtype_size(dtype);
    for (int d = 0; d < ndim; ++d) bytes *= (uint64_t)shape[d];
    for (int32_t i = 0; i < ctx->num_windows; ++i) {
      const pypto_window& w = ctx->windows[i];
      if (!w.name || strcmp(w.name, name) != 0) continue;
      if (w.dtype != dtype || w.bytes < bytes || !w.local) {
        snprintf(msg, sizeof msg,
                 "window '%s' must hold dtype %d and at least %llu bytes, got dtype %d, %llu "
                 "bytes",
                 name, (int)dtype, (unsigned long long)bytes, (int)w.dtype,
                 (unsigned long long)w.bytes);
        fail(msg);
        return false;
      }
      memset(out, 0, sizeof *out);
      out->data = w.local;
      out->dtype = dtype;
      out->ndim = ndim;
      int64_t stride = 1;
      for (int d = ndim - 1; d >= 0; --d) {
        out->shape[d] = shape[d];
        out->strides[d] = stride;
        stride *= shape[d];
      }
      *id = w.id;
      return true;
    }
    snprintf(msg, sizeof msg, "window '%s' is not among the %d windows of this dispatch", name,
             (int)ctx->num_windows);
    fail(msg);
    return false;
  }

  int64_t scalar_int(int index) const {
    return index < args->num_scalars ? args->scalars[index] : 0;
  }
  float scalar_f32(int index) const {
    const uint32_t bits = (uint32_t)scalar_int(index);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
  }

  // The region [off, off + extent) of `t`, whose last two extents are rows and
  // cols (one dimension: cols) and the others 1, must lie inside `t`.
  bool region(const pypto_tensor& t, const char* name, const int64_t* off, int64_t rows,
              int64_t cols, const char* what) const {
    const int n = t.ndim;
    bool ok = true;
    for (int d = 0; d < n; ++d) {
      const int64_t ext = d == n - 1 ? cols : (d == n - 2 ? rows : 1);
      if (off[d] < 0 || off[d] > t.shape[d] - ext) ok = false;
    }
    if (ok) return true;
    char o[160], s[160], msg[400];
    format_dims(o, sizeof o, off, n);
    format_dims(s, sizeof s, t.shape, n);
    snprintf(msg, sizeof msg, "%s of a [%lld, %lld] tile at [%s] is outside '%s' [%s]", what,
             (long long)rows, (long long)cols, o, name, s);
    fail(msg);
    return false;
  }

  static int64_t element_offset(const pypto_tensor& t, const int64_t* off) {
    int64_t e = t.offset;
    for (int d = 0; d < t.ndim; ++d) e += off[d] * t.strides[d];
    return e;
  }
  static int64_t row_stride(const pypto_tensor& t) { return t.ndim >= 2 ? t.strides[t.ndim - 2] : 0; }
  static int64_t col_stride(const pypto_tensor& t) { return t.strides[t.ndim - 1]; }

  // A fused group's access to a region (docs/pto-format.md, "Fused
  // elementwise groups"): checks it like load/store, then gives its first
  // element and row stride; false (after reporting) when it is outside `t`.
  template <class T>
  bool view(const pypto_tensor& t, const char* name, const int64_t* off, int64_t rows,
            int64_t cols, const char* what, T** ptr, int64_t* ld) const {
    if (!region(t, name, off, rows, cols, what)) return false;
    *ptr = static_cast<T*>(t.data) + element_offset(t, off);
    *ld = row_stride(t);
    return true;
  }

  // The same for a fused group's remote_load or remote_store (`what`) of
  // window `w` (its local view): the peer's mapped copy when the window is
  // shared memory, else *ptr stays NULL and the group runs one instruction at
  // a time through remote_load / remote_store (which also report a bad peer).
  // This rank's own copy is left to that path too: its mapping may alias a
  // region of the group under another address.
  template <class T>
  bool remote_view(int32_t id, const pypto_tensor& w, const char* name, int64_t peer,
                   const int64_t* off, int64_t rows, int64_t cols, const char* what, T** ptr,
                   int64_t* ld) const {
    if (!region(w, name, off, rows, cols, what)) return false;
    *ptr = nullptr;
    *ld = row_stride(w);
    const pypto_kernel_ctx* ctx = args->ctx;
    if (peer < 0 || peer >= ctx->world || peer == ctx->rank) return true;
    if (T* base = static_cast<T*>(comm()->peer_pointer(ctx, id, (int32_t)peer)))
      *ptr = base + element_offset(w, off);
    return true;
  }
  // The remote_load form, as build directories generated before remote_store
  // views call it.
  template <class T>
  bool remote_view(int32_t id, const pypto_tensor& w, const char* name, int64_t peer,
                   const int64_t* off, int64_t rows, int64_t cols, T** ptr, int64_t* ld) const {
    return remote_view(id, w, name, peer, off, rows, cols, "remote_load", ptr, ld);
  }

  template <class T>
  bool load(const pypto_tensor& t, const char* name, const int64_t* off, int64_t rows,
            int64_t cols, T* dst) const {
    if (!region(t, name, off, rows, cols, "load")) return false;
    const T* src = static_cast<const T*>(t.data) + element_offset(t, off);
    const int64_t rs = row_stride(t), cs = col_stride(t);
    if (cs == 1 && (rows == 1 || rs == cols)) {
      memcpy(dst, src, size_t(rows * cols) * sizeof(T));
    } else if (cs == 1) {
      for (int64_t r = 0; r < rows; ++r) memcpy(dst + r * cols, src + r * rs, size_t(cols) * sizeof(T));
    } else {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[r * rs + c * cs];
    }
    return true;
  }

  template <class T>
  bool store(const T* src, int64_t rows, int64_t cols, const pypto_tensor& t, const char* name,
             const int64_t* off) const {
    if (!region(t, name, off, rows, cols, "store")) return false;
    T* dst = static_cast<T*>(t.data) + element_offset(t, off);
    const int64_t rs = row_stride(t), cs = col_stride(t);
    if (cs == 1 && (rows == 1 || rs == cols)) {
      memcpy(dst, src, size_t(rows * cols) * sizeof(T));
    } else if (cs == 1) {
      for (int64_t r = 0; r < rows; ++r) memcpy(dst + r * rs, src + r * cols, size_t(cols) * sizeof(T));
    } else {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) dst[r * rs + c * cs] = src[r * cols + c];
    }
    return true;
  }

  // `w` is the window's local view (row-major, offset 0): byte offsets in a
  // peer's copy equal those in the local one.
  template <class T>
  bool remote_load(int32_t id, const pypto_tensor& w, const char* name, int64_t peer,
                   const int64_t* off, int64_t rows, int64_t cols, T* dst) const {
    if (!region(w, name, off, rows, cols, "remote_load")) return false;
    return remote_rows(id, w, peer, off, rows, cols, dst, cols);
  }

  // The peer's [rows, cols] region of window `w` at `off` (checked by the caller)
  // into `to`, whose rows are `ld` elements apart: one comm call when both
  // sides are contiguous, else one per row.
  template <class T>
  bool remote_rows(int32_t id, const pypto_tensor& w, int64_t peer, const int64_t* off,
                   int64_t rows, int64_t cols, T* to, int64_t ld) const {
    const pypto_kernel_ctx* ctx = args->ctx;
    const int64_t base = element_offset(w, off);
    const int64_t rs = row_stride(w);
    if (rows == 1 || (rs == cols && ld == cols))
      return comm()->remote_load(ctx, id, (int32_t)peer, uint64_t(base) * sizeof(T), to,
                                    uint64_t(rows * cols) * sizeof(T)) == 0;
    for (int64_t r = 0; r < rows; ++r)
      if (comm()->remote_load(ctx, id, (int32_t)peer, uint64_t(base + r * rs) * sizeof(T),
                                 to + r * ld, uint64_t(cols) * sizeof(T)) != 0)
        return false;
    return true;
  }

  // `fill` writes a [rows, cols] tile, which is then stored into `dst` at
  // `dst_off`: copy() and remote_copy() when the direct way does not apply.
  template <class T, class Fill>
  bool through_tile(int64_t rows, int64_t cols, Fill fill, const pypto_tensor& dst,
                    const char* dst_name, const int64_t* dst_off, const char* what) const {
    T* tile = static_cast<T*>(malloc(size_t(rows * cols) * sizeof(T)));
    if (!tile) {
      char msg[96];
      snprintf(msg, sizeof msg, "out of memory in %s", what);
      fail(msg);
      return false;
    }
    const bool ok = fill(tile) && store(tile, rows, cols, dst, dst_name, dst_off);
    free(tile);
    return ok;
  }

  // A tile loaded only to be stored (`store(load(src, ...), dst, ...)`, or
  // `store(remote_load(w, peer, ...), dst, ...)` with `peer` >= 0): the region
  // goes straight from the source to `dst`, one copy instead of two through the
  // tile. Checks both regions as load and store would.
  template <class T>
  bool copy(const pypto_tensor& src, const char* src_name, const int64_t* src_off, int64_t rows,
            int64_t cols, const pypto_tensor& dst, const char* dst_name,
            const int64_t* dst_off) const {
    if (!region(src, src_name, src_off, rows, cols, "load")) return false;
    if (!region(dst, dst_name, dst_off, rows, cols, "store")) return false;
    const T* from = static_cast<const T*>(src.data) + element_offset(src, src_off);
    T* to = static_cast<T*>(dst.data) + element_offset(dst, dst_off);
    const int64_t srs = row_stride(src), drs = row_stride(dst);
    // The regions' spans, to see whether they overlap (two views of one buffer).
    const char* const from_end = reinterpret_cast<const char*>(from + (rows - 1) * srs + cols);
    const char* const to_end = reinterpret_cast<const char*>(to + (rows - 1) * drs + cols);
    const bool overlap = reinterpret_cast<const char*>(from) < to_end &&
                         reinterpret_cast<const char*>(to) < from_end;
    if (col_stride(src) != 1 || col_stride(dst) != 1 || overlap)  // through a tile after all
      return through_tile<T>(
          rows, cols, [&](T* tile) { return load(src, src_name, src_off, rows, cols, tile); },
          dst, dst_name, dst_off, "load");
    if (rows == 1 || (srs == cols && drs == cols)) {
      memcpy(to, from, size_t(rows * cols) * sizeof(T));
    } else {
      for (int64_t r = 0; r < rows; ++r) memcpy(to + r * drs, from + r * srs, size_t(cols) * sizeof(T));
    }
    return true;
  }
  template <class T>
  bool remote_copy(int32_t id, const pypto_tensor& w, const char* name, int64_t peer,
                   const int64_t* off, int64_t rows, int64_t cols, const pypto_tensor& dst,
                   const char* dst_name, const int64_t* dst_off) const {
    if (!region(w, name, off, rows, cols, "remote_load")) return false;
    if (!region(dst, dst_name, dst_off, rows, cols, "store")) return false;
    // Strided columns, or this rank's own copy of the window (it may overlap
    // `dst`): through a tile after all.
    if (col_stride(dst) != 1 || peer == args->ctx->rank)
      return through_tile<T>(
          rows, cols,
          [&](T* tile) { return remote_rows(id, w, peer, off, rows, cols, tile, cols); }, dst,
          dst_name, dst_off, "remote_load");
    T* to = static_cast<T*>(dst.data) + element_offset(dst, dst_off);
    return remote_rows(id, w, peer, off, rows, cols, to, row_stride(dst));
  }

  template <class T>
  bool remote_store(const T* src, int64_t rows, int64_t cols, int32_t id, const pypto_tensor& w,
                    const char* name, int64_t peer, const int64_t* off, int32_t op) const {
    if (!region(w, name, off, rows, cols, "remote_store")) return false;
    const pypto_kernel_ctx* ctx = args->ctx;
    const int64_t base = element_offset(w, off);
    const int64_t rs = row_stride(w);
    if (rows == 1 || rs == cols)
      return comm()->remote_store(ctx, id, (int32_t)peer, uint64_t(base) * sizeof(T), src,
                                     uint64_t(rows * cols), w.dtype, op) == 0;
    for (int64_t r = 0; r < rows; ++r)
      if (comm()->remote_store(ctx, id, (int32_t)peer, uint64_t(base + r * rs) * sizeof(T),
                                  src + r * cols, uint64_t(cols), w.dtype, op) != 0)
        return false;
    return true;
  }

  // put (to_peer) / get: all of `local` <-> the region of the peer's window
  // `w` at `off` (same rank, local's extents). One comm call per last-dimension row.
  bool transfer(bool to_peer, const pypto_tensor& local, const char* local_name, int32_t id,
                const pypto_tensor& w, const char* name, int64_t peer, const int64_t* off) const {
    const int n = w.ndim;
    char msg[400];
    for (int d = 0; d < n; ++d) {
      if (off[d] < 0 || off[d] > w.shape[d] - local.shape[d]) {
        char o[160], s[160], e[160];
        format_dims(o, sizeof o, off, n);
        format_dims(s, sizeof s, w.shape, n);
        format_dims(e, sizeof e, local.shape, n);
        snprintf(msg, sizeof msg, "%s of '%s' [%s] at [%s] is outside window '%s' [%s]",
                 to_peer ? "put" : "get", local_name, e, o, name, s);
        fail(msg);
        return false;
      }
    }
    const size_t es = dtype_size(w.dtype);
    const int64_t cols = local.shape[n - 1];
    const int64_t lcs = local.strides[n - 1];
    int64_t rows = 1;
    for (int d = 0; d + 1 < n; ++d) rows *= local.shape[d];
    if (rows * cols == 0) return true;
    const pypto_kernel_ctx* ctx = args->ctx;
    char* row_buf = nullptr;
    if (lcs != 1 && cols > 1) {
      row_buf = static_cast<char*>(malloc(size_t(cols) * es));
      if (!row_buf) {
        fail("out of memory in put/get");
        return false;
      }
    }
    int64_t idx[PYPTO_MAX_DIMS] = {0};
    bool ok = true;
    for (int64_t r = 0; r < rows && ok; ++r) {
      int64_t le = local.offset, we = 0;
      for (int d = 0; d + 1 < n; ++d) {
        le += idx[d] * local.strides[d];
        we += (off[d] + idx[d]) * w.strides[d];
      }
      we += off[n - 1];
      char* lp = static_cast<char*>(local.data) + le * (int64_t)es;
      const uint64_t wb = uint64_t(we) * es, bytes = uint64_t(cols) * es;
      if (to_peer) {
        const char* src = lp;
        if (row_buf) {
          for (int64_t c = 0; c < cols; ++c) memcpy(row_buf + c * es, lp + c * lcs * (int64_t)es, es);
          src = row_buf;
        }
        ok = comm()->put(ctx, id, (int32_t)peer, wb, src, bytes) == 0;
      } else {
        char* dst = row_buf ? row_buf : lp;
        ok = comm()->get(ctx, id, (int32_t)peer, wb, dst, bytes) == 0;
        if (ok && row_buf)
          for (int64_t c = 0; c < cols; ++c) memcpy(lp + c * lcs * (int64_t)es, row_buf + c * es, es);
      }
      for (int d = n - 2; d >= 0; --d) {
        if (++idx[d] < local.shape[d]) break;
        idx[d] = 0;
      }
    }
    free(row_buf);
    return ok;
  }

  // The int32 cell at `off` of window `w`, as a byte offset.
  bool cell(const pypto_tensor& w, const char* name, const int64_t* off, uint64_t* bytes,
            const char* what) const {
    if (!region(w, name, off, 1, 1, what)) return false;
    *bytes = uint64_t(element_offset(w, off)) * 4;
    return true;
  }
  bool notify(int32_t id, const pypto_tensor& w, const char* name, int64_t peer,
              const int64_t* off, int64_t value, int32_t op) const {
    uint64_t b = 0;
    if (!cell(w, name, off, &b, "notify")) return false;
    return comm()->notify(args->ctx, id, (int32_t)peer, b, (int32_t)value, op) == 0;
  }
  // A failed wait names the program line (at()) or else the caller's: the
  // defaulted file/line are those of the kernel's C++.
  bool wait(int32_t id, const pypto_tensor& w, const char* name, const int64_t* off, int32_t cmp,
            int64_t value, const char* file = __builtin_FILE(),
            int line = __builtin_LINE()) const {
    uint64_t b = 0;
    if (!cell(w, name, off, &b, "wait")) return false;
    if (!src_file) args->ctx->comm->set_call_site(args->ctx, file, line);
    return comm()->wait(args->ctx, id, b, cmp, (int32_t)value) == 0;
  }

  bool div_check(int64_t b, int line) const {
    if (b != 0) return true;
    char msg[128];
    if (src_file)  // fail() names the program line
      snprintf(msg, sizeof msg, "integer division by zero");
    else
      snprintf(msg, sizeof msg, "integer division by zero (.pto line %d)", line);
    fail(msg);
    return false;
  }
  bool step_check(int64_t s, int line) const {
    if (s > 0) return true;
    char msg[128];
    if (src_file)
      snprintf(msg, sizeof msg, "loop step %lld is not positive", (long long)s);
    else
      snprintf(msg, sizeof msg, "loop step %lld is not positive (.pto line %d)", (long long)s, line);
    fail(msg);
    return false;
  }
};

// ---- fused elementwise groups
//
// pypto-ptoas emits a run of f32 elementwise instructions over tiles of one
// shape (with the loads and stores around them) as one loop: fused(rows,
// cols, f) calls f(S{}, r, j) for each row r and column block j, where S is a
// lane type — W16 (AVX-512), W8 (AVX2) or W1 (one float: the row tails and
// the portable build) — and f loads, computes and stores S::W elements
// through vld / vst / vsplat and tile.h's Op structs. Every instruction's
// data then stays in registers instead of passing over a tile buffer each.
// The loop over rows and columns is picked once per call by best_isa(); f is
// a generic lambda inlined into each ISA's loop (its body must be
// target-neutral: GCC vector extensions, no intrinsics).
#if defined(__GNUC__) || defined(__clang__)
#define PYPTO_TILE_LAMBDA_INLINE __attribute__((always_inline))
#else
#define PYPTO_TILE_LAMBDA_INLINE
#endif
using detail::OpAdd;
using detail::OpDiv;
using detail::OpExp;
using detail::OpMax;
using detail::OpMin;
using detail::OpMul;
using detail::OpNeg;
using detail::OpSub;

struct W1 {
  typedef float V;
  static constexpr int W = 1;
};
#if PYPTO_TILE_X86
typedef float u8sf __attribute__((vector_size(32), aligned(4), may_alias));
typedef float u16sf __attribute__((vector_size(64), aligned(4), may_alias));
struct W8 {
  typedef detail::v8sf V;
  typedef u8sf U;
  static constexpr int W = 8;
};
struct W16 {
  typedef detail::v16sf V;
  typedef u16sf U;
  static constexpr int W = 16;
};
#endif

template <class S>
PYPTO_TILE_INLINE void vld(typename S::V& v, const float* p) {
  v = *reinterpret_cast<const typename S::U*>(p);
}
template <>
PYPTO_TILE_INLINE void vld<W1>(float& v, const float* p) {
  v = *p;
}
template <class S>
PYPTO_TILE_INLINE void vst(float* p, const typename S::V& v) {
  *reinterpret_cast<typename S::U*>(p) = v;
}
template <>
PYPTO_TILE_INLINE void vst<W1>(float* p, const float& v) {
  *p = v;
}
template <class S>
PYPTO_TILE_INLINE void vsplat(typename S::V& v, float s) {
  v = typename S::V{} + s;
}
template <>
PYPTO_TILE_INLINE void vsplat<W1>(float& v, float s) {
  v = s;
}

template <class S, class F>
PYPTO_TILE_INLINE void fused_rows(int64_t rows, int64_t cols, F& f) {
  const int64_t full = cols / S::W * S::W;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < full; j += S::W) f(S{}, r, j);
    for (int64_t j = full; j < cols; ++j) f(W1{}, r, j);
  }
}
#if PYPTO_TILE_X86
template <class F>
PYPTO_TILE_AVX512 inline void fused_avx512(int64_t rows, int64_t cols, F& f) {
  fused_rows<W16>(rows, cols, f);
}
template <class F>
PYPTO_TILE_AVX2 inline void fused_avx2(int64_t rows, int64_t cols, F& f) {
  fused_rows<W8>(rows, cols, f);
}
#endif
template <class F>
inline void fused(int64_t rows, int64_t cols, F f) {
#if PYPTO_TILE_X86
  const Isa isa = best_isa();
  if (isa == Isa::kAvx512) return fused_avx512(rows, cols, f);
  if (isa == Isa::kAvx2) return fused_avx2(rows, cols, f);
#endif
  fused_rows<W1>(rows, cols, f);
}

// A fused group reads each element of a region where its loads read it and
// writes where its stores write; that equals the unfused order when every
// load and store region is the same memory or none overlap. `a` and `b` are
// rows x cols regions (row strides lda, ldb) of `es`-byte elements.
inline bool same_or_disjoint(const void* a, int64_t lda, const void* b, int64_t ldb, int64_t rows,
                             int64_t cols, size_t es) {
  if (a == b && lda == ldb) return true;
  const char* pa = static_cast<const char*>(a);
  const char* pb = static_cast<const char*>(b);
  const char* ea = pa + ((rows - 1) * lda + cols) * int64_t(es);
  const char* eb = pb + ((rows - 1) * ldb + cols) * int64_t(es);
  return ea <= pb || eb <= pa;
}
inline bool unit_cols(const pypto_tensor& t) { return t.strides[t.ndim - 1] == 1; }

// ---- elementwise (tiles are contiguous, n = rows * cols)

template <class T>
inline T apply(BinOp op, T a, T b) {
  switch (op) {
    case kAdd:
      return T(a + b);
    case kSub:
      return T(a - b);
    case kMul:
      return T(a * b);
    case kDiv:
      return b == T(0) && !(T(0.5) > T(0)) ? T(0) : T(a / b);  // integer x / 0 -> 0
    case kMax:
      return a > b ? a : b;
    case kMin:
      return a < b ? a : b;
  }
  return a;
}

template <class T>
inline void binary(BinOp op, int64_t rows, int64_t cols, const T* a, const T* b, Bcast bc, T* c) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const T y = bc == kFull ? b[r * cols + j] : bc == kRow ? b[r] : b[j];
      c[r * cols + j] = apply(op, a[r * cols + j], y);
    }
}

inline void f32_rows(BinOp op, int64_t rows, int64_t cols, const float* a, int64_t lda,
                     const float* b, int64_t ldb, float* c, int64_t ldc) {
  switch (op) {
    case kAdd:
      return add(rows, cols, a, lda, b, ldb, c, ldc);
    case kSub:
      return sub(rows, cols, a, lda, b, ldb, c, ldc);
    case kMul:
      return mul(rows, cols, a, lda, b, ldb, c, ldc);
    case kDiv:
      return div(rows, cols, a, lda, b, ldb, c, ldc);
    case kMax:
      return max(rows, cols, a, lda, b, ldb, c, ldc);
    case kMin:
      return min(rows, cols, a, lda, b, ldb, c, ldc);
  }
}

inline void f32_scalar(BinOp op, int64_t rows, int64_t cols, const float* a, int64_t lda, float s,
                       float* c, int64_t ldc) {
  switch (op) {
    case kAdd:
      return add_scalar(rows, cols, a, lda, s, c, ldc);
    case kSub:
      return sub_scalar(rows, cols, a, lda, s, c, ldc);
    case kMul:
      return mul_scalar(rows, cols, a, lda, s, c, ldc);
    case kDiv:
      return div_scalar(rows, cols, a, lda, s, c, ldc);
    case kMax:
      return max_scalar(rows, cols, a, lda, s, c, ldc);
    case kMin:
      return min_scalar(rows, cols, a, lda, s, c, ldc);
  }
}

// c = a op b; the whole contiguous tile is one long row for the vector code.
inline void binary(BinOp op, int64_t rows, int64_t cols, const float* a, const float* b, Bcast bc,
                   float* c) {
  if (bc == kFull) return f32_rows(op, 1, rows * cols, a, rows * cols, b, rows * cols, c, rows * cols);
  if (bc == kCol) return f32_rows(op, rows, cols, a, cols, b, 0, c, cols);
  for (int64_t r = 0; r < rows; ++r) f32_scalar(op, 1, cols, a + r * cols, cols, b[r], c + r * cols, cols);
}

template <class T>
inline void binary_scalar(BinOp op, int64_t n, const T* a, T s, T* c) {
  for (int64_t i = 0; i < n; ++i) c[i] = apply(op, a[i], s);
}
inline void binary_scalar(BinOp op, int64_t n, const float* a, float s, float* c) {
  f32_scalar(op, 1, n, a, n, s, c, n);
}

template <class T>
inline void neg(int64_t n, const T* a, T* c) {
  for (int64_t i = 0; i < n; ++i) c[i] = T(-a[i]);
}
inline void neg(int64_t n, const float* a, float* c) { pypto::tile::neg(1, n, a, n, c, n); }
inline void exp(int64_t n, const float* a, float* c) { pypto::tile::exp(1, n, a, n, c, n); }
inline void sqrt(int64_t n, const float* a, float* c) { pypto::tile::sqrt(1, n, a, n, c, n); }

template <class T>
inline void fill(int64_t n, T v, T* c) {
  for (int64_t i = 0; i < n; ++i) c[i] = v;
}

template <class To, class From>
inline void cast(int64_t n, const From* a, To* c) {
  for (int64_t i = 0; i < n; ++i) c[i] = Convert<To>::from(a[i]);
}

template <class T>
inline void copy(int64_t n, const T* a, T* c) {
  if (a != c) memmove(c, a, size_t(n) * sizeof(T));
}

// c[r] = sum / max of row r. Eight partial sums per row keep the loop
// vectorizable without reassociation flags.
template <class T>
inline void row_sum(int64_t rows, int64_t cols, const T* a, T* c) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* ar = a + r * cols;
    T acc[8] = {};
    const int64_t blocks = cols / 8;
    for (int64_t b = 0; b < blocks; ++b)
      for (int k = 0; k < 8; ++k) acc[k] = T(acc[k] + ar[b * 8 + k]);
    T s = T(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
    const int64_t rest = cols % 8;
    for (int64_t k = 0; k < rest; ++k) s = T(s + ar[blocks * 8 + k]);
    c[r] = s;
  }
}

template <class T>
inline void row_max(int64_t rows, int64_t cols, const T* a, T* c) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* ar = a + r * cols;
    T m = ar[0];
    for (int64_t j = 1; j < cols; ++j) m = ar[j] > m ? ar[j] : m;
    c[r] = m;
  }
}

// ---- f16 / bf16 tiles: every element is widened to f32, computed with the
// f32 operation, and rounded back to nearest even — the reference
// interpreter's semantics (compiler/interp/interp_tile_ops.cc): a scalar operand or
// fill value is rounded to the dtype first; exp and sqrt are the C library's
// float functions; row_sum adds in double and rounds once; row_max is exact.
template <class H>
inline float half_apply(BinOp op, float a, float b) {
  switch (op) {
    case kAdd:
      return a + b;
    case kSub:
      return a - b;
    case kMul:
      return a * b;
    case kDiv:
      return a / b;
    case kMax:
      return a < b ? b : a;  // std::max
    case kMin:
      return b < a ? b : a;  // std::min
  }
  return a;
}
template <class H>
inline H half_round(float x) {
  return Convert<H>::from(x);
}
template <class H>
inline void half_binary(BinOp op, int64_t rows, int64_t cols, const H* a, const H* b, Bcast bc,
                        H* c) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const H y = bc == kFull ? b[r * cols + j] : bc == kRow ? b[r] : b[j];
      c[r * cols + j] = half_round<H>(half_apply<H>(op, to_f32(a[r * cols + j]), to_f32(y)));
    }
}
template <class H>
inline void half_binary_scalar(BinOp op, int64_t n, const H* a, float s, H* c) {
  const float y = to_f32(half_round<H>(s));
  for (int64_t i = 0; i < n; ++i) c[i] = half_round<H>(half_apply<H>(op, to_f32(a[i]), y));
}
inline void binary(BinOp op, int64_t rows, int64_t cols, const f16* a, const f16* b, Bcast bc,
                   f16* c) {
  half_binary(op, rows, cols, a, b, bc, c);
}
inline void binary(BinOp op, int64_t rows, int64_t cols, const bf16* a, const bf16* b, Bcast bc,
                   bf16* c) {
  half_binary(op, rows, cols, a, b, bc, c);
}
inline void binary_scalar(BinOp op, int64_t n, const f16* a, float s, f16* c) {
  half_binary_scalar(op, n, a, s, c);
}
inline void binary_scalar(BinOp op, int64_t n, const bf16* a, float s, bf16* c) {
  half_binary_scalar(op, n, a, s, c);
}
template <class H>
inline void half_unary(int kind, int64_t n, const H* a, H* c) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = to_f32(a[i]);
    const float y = kind == 0 ? -x : kind == 1 ? __builtin_expf(x) : __builtin_sqrtf(x);
    c[i] = half_round<H>(y);
  }
}
inline void neg(int64_t n, const f16* a, f16* c) { half_unary(0, n, a, c); }
inline void neg(int64_t n, const bf16* a, bf16* c) { half_unary(0, n, a, c); }
inline void exp(int64_t n, const f16* a, f16* c) { half_unary(1, n, a, c); }
inline void exp(int64_t n, const bf16* a, bf16* c) { half_unary(1, n, a, c); }
inline void sqrt(int64_t n, const f16* a, f16* c) { half_unary(2, n, a, c); }
inline void sqrt(int64_t n, const bf16* a, bf16* c) { half_unary(2, n, a, c); }
inline void fill(int64_t n, float v, f16* c) {
  const f16 h = to_f16(v);
  for (int64_t i = 0; i < n; ++i) c[i] = h;
}
inline void fill(int64_t n, float v, bf16* c) {
  const bf16 h = to_bf16(v);
  for (int64_t i = 0; i < n; ++i) c[i] = h;
}
template <class H>
inline void half_row_sum(int64_t rows, int64_t cols, const H* a, H* c) {
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += double(to_f32(a[r * cols + j]));
    c[r] = half_round<H>(static_cast<float>(s));
  }
}
template <class H>
inline void half_row_max(int64_t rows, int64_t cols, const H* a, H* c) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t m = r * cols;
    for (int64_t j = 1; j < cols; ++j)
      if (to_f32(a[m]) < to_f32(a[r * cols + j])) m = r * cols + j;  // std::max
    c[r] = a[m];
  }
}
inline void row_sum(int64_t rows, int64_t cols, const f16* a, f16* c) { half_row_sum(rows, cols, a, c); }
inline void row_sum(int64_t rows, int64_t cols, const bf16* a, bf16* c) { half_row_sum(rows, cols, a, c); }
inline void row_max(int64_t rows, int64_t cols, const f16* a, f16* c) { half_row_max(rows, cols, a, c); }
inline void row_max(int64_t rows, int64_t cols, const bf16* a, bf16* c) { half_row_max(rows, cols, a, c); }

// c (+)= a[m, k] * b[k, n]; c must not overlap a or b.
inline void matmul(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                   bool accumulate) {
  matmul_f32(m, n, k, a, k, b, n, c, n, accumulate);
}
// 16-bit float operands: widened to f32 (per-thread buffers), then the f32 matmul.
template <class H>
inline void matmul_half(int64_t m, int64_t n, int64_t k, const H* a, const H* b, float* c,
                        bool accumulate) {
  static thread_local Scratch wide;
  float* fa = reinterpret_cast<float*>(wide.get(size_t(m * k + k * n) * sizeof(float)));
  if (!fa) {  // out of memory: convert on the fly
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float s = accumulate ? c[i * n + j] : 0.0f;
        for (int64_t kk = 0; kk < k; ++kk) s += to_f32(a[i * k + kk]) * to_f32(b[kk * n + j]);
        c[i * n + j] = s;
      }
    return;
  }
  float* fb = fa + m * k;
  for (int64_t i = 0; i < m * k; ++i) fa[i] = to_f32(a[i]);
  for (int64_t i = 0; i < k * n; ++i) fb[i] = to_f32(b[i]);
  matmul_f32(m, n, k, fa, k, fb, n, c, n, accumulate);
}
inline void matmul(int64_t m, int64_t n, int64_t k, const f16* a, const f16* b, float* c,
                   bool accumulate) {
  matmul_half(m, n, k, a, b, c, accumulate);
}
inline void matmul(int64_t m, int64_t n, int64_t k, const bf16* a, const bf16* b, float* c,
                   bool accumulate) {
  matmul_half(m, n, k, a, b, c, accumulate);
}
template <class TA, class TC>
inline void matmul(int64_t m, int64_t n, int64_t k, const TA* a, const TA* b, TC* c,
                   bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    TC* ci = c + i * n;
    if (!accumulate)
      for (int64_t j = 0; j < n; ++j) ci[j] = TC(0);
    for (int64_t kk = 0; kk < k; ++kk) {
      const TC aik = TC(a[i * k + kk]);
      const TA* bk = b + kk * n;
      for (int64_t j = 0; j < n; ++j) ci[j] = TC(ci[j] + aik * TC(bk[j]));
    }
  }
}

}  // namespace pto
}  // namespace tile
}  // namespace pypto

#endif  // PYPTO_PTO_RUNTIME_H_
