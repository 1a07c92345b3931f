#include "coordinator/validate.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "artifact/build_paths.h"
#include "pypto/error.h"
#include "pypto/npy.h"

namespace pypto::coord {

namespace {

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: normalize.
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// An element as a double (for the tolerance rule) and as text (for messages).
struct Element {
  double value = 0;
  bool is_float = false;
  int64_t exact = 0;  // integers: the value itself, compared before rounding to double
};

template <class T>
T load(const std::byte* base, int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

Element element(DType dtype, const std::byte* base, int64_t i) {
  switch (dtype) {
    case DType::kF32: return {load<float>(base, i), true, 0};
    case DType::kF16: return {f16_to_float(load<uint16_t>(base, i)), true, 0};
    case DType::kBF16: return {bf16_to_float(load<uint16_t>(base, i)), true, 0};
    case DType::kI8: { auto v = load<int8_t>(base, i); return {double(v), false, v}; }
    case DType::kI16: { auto v = load<int16_t>(base, i); return {double(v), false, v}; }
    case DType::kI32: { auto v = load<int32_t>(base, i); return {double(v), false, v}; }
    case DType::kI64: { auto v = load<int64_t>(base, i); return {double(v), false, v}; }
    case DType::kU8: { auto v = load<uint8_t>(base, i); return {double(v), false, v}; }
    case DType::kBool: { auto v = load<uint8_t>(base, i) != 0; return {double(v), false, v}; }
  }
  return {};
}

std::string shortest(double v, bool as_float) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  // Float elements print as floats, so 0.1f reads "0.1", not "0.10000000149011612".
  auto r = as_float ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                    : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string element_text(const Element& e) {
  return e.is_float ? shortest(e.value, true) : std::to_string(e.exact);
}

bool passes(const Element& a, const Element& e, double rtol, double atol) {
  if (!a.is_float && a.exact == e.exact) return true;
  if (std::isnan(a.value) || std::isnan(e.value)) return std::isnan(a.value) && std::isnan(e.value);
  if (a.value == e.value) return true;  // also the same infinity
  return std::fabs(a.value - e.value) <= atol + rtol * std::fabs(e.value);
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t extent = shape[d] > 0 ? shape[d] : 1;
    index[d] = flat % extent;
    flat /= extent;
  }
  return index;
}

std::string number(double v) { return shortest(v, false); }

}  // namespace

std::string index_text(const std::vector<int64_t>& index) {
  std::string out = "[";
  for (size_t i = 0; i < index.size(); ++i) out += (i ? ", " : "") + std::to_string(index[i]);
  return out + "]";
}

std::string OutputComparison::describe(double rtol, double atol) const {
  if (!problem.empty()) return "output '" + name + "': " + problem;
  if (mismatches == 0)
    return "output '" + name + "': " + std::to_string(total) + " elements within tolerance";
  return "output '" + name + "': " + std::to_string(mismatches) + " of " + std::to_string(total) +
         " elements differ beyond atol + rtol*|expected| (rtol=" + number(rtol) +
         ", atol=" + number(atol) + "); first at " + index_text(first_index) + " (flat " +
         std::to_string(first_flat) + "): expected " + expected_value + ", actual " +
         actual_value + " (allowed difference " + bound + ")";
}

OutputComparison compare_output(const std::string& name, const Tensor& actual,
                                const Tensor& expected, double rtol, double atol) {
  OutputComparison c;
  c.name = name;
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    c.problem = "actual " + actual.describe() + " cannot be compared with expected " +
                expected.describe();
    return c;
  }
  const Tensor a = actual.is_contiguous() ? actual : actual.contiguous();
  const Tensor e = expected.is_contiguous() ? expected : expected.contiguous();
  const auto* ab = static_cast<const std::byte*>(a.data());
  const auto* eb = static_cast<const std::byte*>(e.data());
  c.total = a.numel();
  for (int64_t i = 0; i < c.total; ++i) {
    const Element av = element(a.dtype(), ab, i);
    const Element ev = element(e.dtype(), eb, i);
    if (passes(av, ev, rtol, atol)) continue;
    if (c.mismatches++ == 0) {
      c.first_flat = i;
      c.first_index = unravel(i, a.shape());
      c.expected_value = element_text(ev);
      c.actual_value = element_text(av);
      c.bound = number(atol + rtol * std::fabs(ev.value));
    }
  }
  return c;
}

bool ValidationReport::ok() const { return failures() == 0; }

int ValidationReport::failures() const {
  int n = 0;
  for (const auto& o : outputs) n += o.ok() ? 0 : 1;
  return n;
}

ValidationReport validate_outputs(const ProgramData& program, const std::vector<Tensor>& args,
                                  const std::vector<InputOverride>& given) {
  if (!program.golden)
    throw UsageError(program.dir.string() + " has no golden/ to validate against");
  const GoldenSpec& golden = *program.golden;
  ValidationReport report;
  report.rtol = golden.rtol;
  report.atol = golden.atol;
  const auto& params = program.params;
  for (const std::string& name : golden.outputs) {
    size_t i = 0;
    while (i < params.size() && params[i].name != name) ++i;
    if (i == params.size()) continue;  // GoldenSpec::load rejects unknown outputs
    fs::path file = GoldenSpec::expected_path(program.dir, name);
    std::string display = sidecar_display(program.dir, "golden/expected/" + name + ".npy");
    for (const InputOverride& o : given)
      if (o.name == name) {
        file = o.file;
        display = o.file.string();
      }
    Tensor expected;
    try {
      expected = read_npy(file);
    } catch (const Error& e) {
      throw InfraError(std::string("expected output '") + name + "': " + e.what());
    }
    const bool user_file = file != GoldenSpec::expected_path(program.dir, name);
    if (user_file && (expected.dtype() != params[i].dtype || expected.shape() != args[i].shape()))
      throw UsageError("--expected " + name + "=" + display + ": holds " + expected.describe() +
                       ", but output '" + name + "' is " + args[i].describe());
    if (expected.dtype() != params[i].dtype)
      throw ArtifactError(display, "",
                          "holds " + expected.describe() + ", but output '" + name + "' is " +
                              params[i].type_string(),
                          recompile_remedy(program.dir));
    if (expected.shape() != args[i].shape())
      throw ArtifactError(display, "",
                          "holds " + expected.describe() + ", but the program's output '" + name +
                              "' is " + args[i].describe(),
                          recompile_remedy(program.dir));
    report.outputs.push_back(compare_output(name, args[i], expected, golden.rtol, golden.atol));
  }
  return report;
}

}  // namespace pypto::coord
