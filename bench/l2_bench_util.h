// Helpers shared by the single-chip (L2) benchmarks (bench/matmul_bench.cc,
// bench/compiled_kernel_bench.cc): files, timing, series of measurements and
// result checks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pypto/error.h"

namespace pypto::bench {

namespace fs = std::filesystem;

inline void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw InfraError("bench: cannot write " + path.string());
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One implementation's measurements (higher is better: GFLOP/s, GB/s) and the
// largest error of its results.
struct Series {
  std::vector<double> values;
  double max_err = 0;
  double best() const { return *std::max_element(values.begin(), values.end()); }
  double median() const {
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

// Max |x - y|; infinity when either holds a NaN (the runtime's output starts
// as NaN, so an element no task wrote cannot slip through).
inline double max_abs_diff(const float* x, const float* y, size_t count) {
  double m = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) return INFINITY;
    m = std::max(m, double(std::fabs(x[i] - y[i])));
  }
  return m;
}

}  // namespace pypto::bench
