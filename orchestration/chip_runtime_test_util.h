// Test support for the chip runtime: tensor views, in-process kernels and
// orchestration entries (plain C++ functions with the ABI's signatures, so no
// compiler runs), and the f = (a+b+1)(a+b+2) fan-out/fan-in program.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

#include "orchestration/chip_runtime.h"
#include "pypto/kernel_abi.h"

namespace pypto::chip::testing {

// EXPECT_CONTAINS(text, part): substring check with both strings in the failure.
inline ::testing::AssertionResult contains(const char* text_expr, const char* part_expr,
                                           const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << text_expr << " does not contain " << part_expr
                                       << "\n  text: " << text << "\n  part: " << part;
}
#define EXPECT_CONTAINS(text, part) \
  EXPECT_PRED_FORMAT2(::pypto::chip::testing::contains, text, part)

// A view with explicit strides (elements) and offset.
inline pypto_tensor make_view(void* data, int32_t dtype, std::initializer_list<int64_t> shape,
                              std::initializer_list<int64_t> strides, int64_t offset = 0) {
  pypto_tensor v{};
  v.data = data;
  v.dtype = dtype;
  v.ndim = static_cast<int32_t>(shape.size());
  v.offset = offset;
  int d = 0;
  for (int64_t s : shape) v.shape[d++] = s;
  d = 0;
  for (int64_t s : strides) v.strides[d++] = s;
  return v;
}

// A contiguous 1-D view of a whole vector.
inline pypto_tensor vec_view(std::vector<float>& v) {
  return make_view(v.data(), PYPTO_F32, {static_cast<int64_t>(v.size())}, {1});
}

inline pypto_task_arg in(const pypto_tensor& v) { return {v, PYPTO_IN}; }
inline pypto_task_arg out(const pypto_tensor& v) { return {v, PYPTO_OUT}; }
inline pypto_task_arg inout(const pypto_tensor& v) { return {v, PYPTO_INOUT}; }

inline int64_t numel(const pypto_tensor& v) {
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= v.shape[d];
  return n;
}

// Element index (into data) of the `linear`-th element of `v` in C order.
inline int64_t element_at(const pypto_tensor& v, int64_t linear) {
  int64_t e = v.offset;
  for (int d = v.ndim - 1; d >= 0; --d) {
    e += (linear % v.shape[d]) * v.strides[d];
    linear /= v.shape[d];
  }
  return e;
}

template <typename T>
T& at(const pypto_tensor& v, int64_t linear) {
  return static_cast<T*>(v.data)[element_at(v, linear)];
}

// ---- kernels (f32 unless named otherwise) ----

// out = x + y
inline void k_add(const pypto_kernel_args* a) {
  const auto& t = a->tensors;
  for (int64_t i = 0; i < numel(t[2]); ++i)
    at<float>(t[2], i) = at<float>(t[0], i) + at<float>(t[1], i);
}
// out = x + scalar
inline void k_add_scalar(const pypto_kernel_args* a) {
  const auto& t = a->tensors;
  const float s = static_cast<float>(a->scalars[0]);
  for (int64_t i = 0; i < numel(t[1]); ++i) at<float>(t[1], i) = at<float>(t[0], i) + s;
}
// out = x * y
inline void k_mul(const pypto_kernel_args* a) {
  const auto& t = a->tensors;
  for (int64_t i = 0; i < numel(t[2]); ++i)
    at<float>(t[2], i) = at<float>(t[0], i) * at<float>(t[1], i);
}
// out = x + y, and tags its output for --dump-args 1.
inline void k_add_tagged(const pypto_kernel_args* a) {
  k_add(a);
  a->ctx->hooks->tag_tensor(a->ctx, 2, "sum");
}

enum FuncId : int32_t { kAdd = 0, kAddScalar = 1, kMul = 2, kAddTagged = 3 };

inline std::vector<KernelBinding> arith_kernels() {
  return {
      {kAdd, "vadd", PYPTO_CORE_AIV, &k_add, 3, 0},
      {kAddScalar, "vadds", PYPTO_CORE_AIV, &k_add_scalar, 2, 1},
      {kMul, "matmul_ew", PYPTO_CORE_AIC, &k_mul, 3, 0},
      {kAddTagged, "vadd_tagged", PYPTO_CORE_AIV, &k_add_tagged, 3, 0},
  };
}

inline int64_t submit(const pypto_orch_args* o, int32_t func_id, int32_t core_type,
                      std::initializer_list<pypto_task_arg> args,
                      std::initializer_list<int64_t> scalars = {}) {
  return o->api->submit(o->runtime, func_id, core_type, args.begin(),
                        static_cast<int32_t>(args.size()), scalars.begin(),
                        static_cast<int32_t>(scalars.size()));
}

// f = (a+b+1)(a+b+2): task0 s=a+b; task1 t1=s+1; task2 t2=s+2; task3 f=t1*t2.
// Parameters: a b s t1 t2 f. Scalar 0 (optional): 1 = the sum is vadd_tagged.
inline void orch_fanout(const pypto_orch_args* o) {
  const pypto_tensor* t = o->tensors;
  const int32_t sum = o->num_scalars > 0 && o->scalars[0] == 1 ? kAddTagged : kAdd;
  submit(o, sum, PYPTO_CORE_AIV, {in(t[0]), in(t[1]), out(t[2])});
  submit(o, kAddScalar, PYPTO_CORE_AIV, {in(t[2]), out(t[3])}, {1});
  submit(o, kAddScalar, PYPTO_CORE_AIV, {in(t[2]), out(t[4])}, {2});
  submit(o, kMul, PYPTO_CORE_AIC, {in(t[3]), in(t[4]), out(t[5])});
}

// The buffers of orch_fanout with a=2, b=3 (f = 42 everywhere).
struct FanoutProgram {
  static constexpr size_t kLen = 4;
  std::vector<std::vector<float>> buffers{{2, 2, 2, 2},
                                          {3, 3, 3, 3},
                                          std::vector<float>(kLen),
                                          std::vector<float>(kLen),
                                          std::vector<float>(kLen),
                                          std::vector<float>(kLen)};
  OrchestrationCall call;

  explicit FanoutProgram(bool tagged_sum = false) {
    call.program = "fanout";
    call.entry = &orch_fanout;
    for (auto& b : buffers) call.tensors.push_back(vec_view(b));
    call.tensor_names = {"a", "b", "s", "t1", "t2", "f"};
    if (tagged_sum) call.scalars = {1};
  }
  const std::vector<float>& f() const { return buffers[5]; }
};

// Small rings and a deadline that turns a hang into a failure.
inline RuntimeConfig test_config(int aiv_cores = 1) {
  RuntimeConfig c;
  c.aic_cores = 1;
  c.aiv_cores = aiv_cores;
  for (auto& ring : c.rings) ring.task_window = 256;
  c.dispatch_timeout = std::chrono::seconds(20);
  return c;
}

// A latch a kernel waits on; the test (or the orchestration) opens it.
class Gate {
 public:
  void reset() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
    returned_ = 0;
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until open (bounded, so a broken test cannot hang the binary).
  bool wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return open_; });
  }
  void mark_returned() {
    std::lock_guard<std::mutex> lock(mu_);
    ++returned_;
    cv_.notify_all();
  }
  bool wait_returned(int count, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return returned_ >= count; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int returned_ = 0;
};

}  // namespace pypto::chip::testing
