#include "artifact/host_orch.h"

#include "artifact/build_paths.h"
#include "artifact/sidecar_checks.h"
#include "pypto/error.h"
#include "pypto/tensor.h"  // shape_string

namespace pypto {

namespace {

WindowInfo parse_window(JsonObject& w) {
  WindowInfo info;
  info.name = non_empty_string(w, "name");
  std::string dtype = w.string("dtype");
  auto t = parse_dtype(dtype);
  if (!t) w.fail("dtype", "'" + dtype + "' is not a dtype; expected one of " + dtype_names());
  info.dtype = *t;
  info.shape = w.integers("shape");
  int64_t numel = 1;
  for (size_t i = 0; i < info.shape.size(); ++i) {
    if (info.shape[i] < 1)
      w.fail("shape", "extent " + std::to_string(i) + " is " + std::to_string(info.shape[i]) +
                          "; window extents are static and >= 1");
    if (__builtin_mul_overflow(numel, info.shape[i], &numel)) w.fail("shape", "is too large");
  }
  int64_t expected = 0;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(dtype_size(info.dtype)), &expected))
    w.fail("shape", "is too large");
  info.bytes = w.integer("bytes");
  if (info.bytes != expected)
    w.fail("bytes", "is " + std::to_string(info.bytes) + " but " + dtype + shape_string(info.shape) +
                        " takes " + std::to_string(expected) + " bytes (elements x element size)");
  info.ranks = w.integers("ranks");
  if (info.ranks.empty()) w.fail("ranks", "is empty; a window needs at least one member rank");
  UniqueChecker<int64_t> ranks("a window's ranks");
  for (size_t i = 0; i < info.ranks.size(); ++i) {
    const std::string key = "ranks[" + std::to_string(i) + "]";
    if (info.ranks[i] < 0) w.fail(key, "is negative; ranks are integers >= 0");
    ranks.add(w, key, info.ranks[i], "rank " + std::to_string(info.ranks[i]));
  }
  w.reject_unknown_keys();
  return info;
}

ParamInfo parse_intermediate(JsonObject& t) {
  ParamInfo info;
  info.name = non_empty_string(t, "name");
  info.direction = Direction::kInOut;
  std::string dtype = t.string("dtype");
  auto d = parse_dtype(dtype);
  if (!d) t.fail("dtype", "'" + dtype + "' is not a dtype; expected one of " + dtype_names());
  info.dtype = *d;
  info.shape = t.integers("shape");
  if (info.shape.empty()) t.fail("shape", "is empty; an intermediate has at least one dimension");
  for (size_t i = 0; i < info.shape.size(); ++i)
    if (info.shape[i] < 1)
      t.fail("shape", "extent " + std::to_string(i) + " is " + std::to_string(info.shape[i]) +
                          "; intermediate extents are static and >= 1");
  t.reject_unknown_keys();
  return info;
}

// The window `name` of this file, of which `rank` is a member.
const WindowInfo& member_window(JsonObject& a, const std::vector<WindowInfo>& windows,
                                const std::string& name, int64_t rank) {
  const WindowInfo* w = nullptr;
  for (const auto& candidate : windows)
    if (candidate.name == name) w = &candidate;
  if (!w) {
    std::string names;
    for (const auto& candidate : windows) names += (names.empty() ? "" : ", ") + candidate.name;
    a.fail("window", "names '" + name + "', which is not a window of this file (windows: " +
                         (names.empty() ? std::string("none") : names) + ")");
  }
  if (!w->has_rank(rank))
    a.fail("window", "names '" + name + "', but the dispatch's rank " + std::to_string(rank) +
                         " is not one of its ranks " + shape_string(w->ranks));
  return *w;
}

HostArg parse_arg(JsonObject& a, const std::vector<WindowInfo>& windows, int64_t rank) {
  HostArg arg;
  std::string kind = a.string("kind");
  if (kind == "host") {
    arg.kind = HostArgKind::kHost;
    arg.param = non_empty_string(a, "param");
    arg.offsets = a.integers("offsets");
    arg.shape = a.integers("shape");
    if (arg.offsets.size() != arg.shape.size())
      a.fail("shape", "has " + std::to_string(arg.shape.size()) + " extents but offsets has " +
                          std::to_string(arg.offsets.size()) +
                          "; a box needs one of each per "
                          "dimension");
    for (size_t i = 0; i < arg.offsets.size(); ++i) {
      if (arg.offsets[i] < 0)
        a.fail("offsets", "offset " + std::to_string(i) + " is negative; offsets are >= 0");
      if (arg.shape[i] < 1)
        a.fail("shape", "extent " + std::to_string(i) + " is " + std::to_string(arg.shape[i]) +
                            "; box extents are >= 1");
    }
    // Optional: the box lives in this window during the dispatch (in place).
    if (a.has("window")) {
      arg.window = non_empty_string(a, "window");
      member_window(a, windows, arg.window, rank);
    }
  } else if (kind == "window") {
    arg.kind = HostArgKind::kWindow;
    arg.window = non_empty_string(a, "window");
    member_window(a, windows, arg.window, rank);
  } else if (kind == "scalar") {
    arg.kind = HostArgKind::kScalar;
    if (a.has("dtype")) {
      const std::string dtype = a.string("dtype");
      const auto t = parse_dtype(dtype);
      if (!t) a.fail("dtype", "'" + dtype + "' is not a dtype; expected one of " + dtype_names());
      arg.dtype = *t;
    }
    if (a.has("param")) {
      arg.param = non_empty_string(a, "param");  // checked against the meta's scalars
    } else if (is_floating_dtype(arg.dtype)) {
      arg.float_value = a.number("value");
    } else {
      arg.value = a.integer("value");
    }
  } else {
    a.fail("kind", "'" + kind + "' is not an argument kind; expected host, window or scalar");
  }
  // A field of another kind (a "param" on a window argument) is unknown here.
  a.reject_unknown_keys();
  return arg;
}

}  // namespace

bool WindowInfo::has_rank(int64_t rank) const {
  for (int64_t r : ranks)
    if (r == rank) return true;
  return false;
}

const char* host_arg_kind_name(HostArgKind kind) {
  switch (kind) {
    case HostArgKind::kHost:
      return "host";
    case HostArgKind::kWindow:
      return "window";
    case HostArgKind::kScalar:
      return "scalar";
  }
  return "?";
}

HostArg HostArg::host(std::string param, std::vector<int64_t> offsets, std::vector<int64_t> shape,
                      std::string in_window) {
  HostArg a;
  a.kind = HostArgKind::kHost;
  a.param = std::move(param);
  a.offsets = std::move(offsets);
  a.shape = std::move(shape);
  a.window = std::move(in_window);
  return a;
}

HostArg HostArg::window_arg(std::string window) {
  HostArg a;
  a.kind = HostArgKind::kWindow;
  a.window = std::move(window);
  return a;
}

HostArg HostArg::scalar(int64_t value) {
  HostArg a;
  a.kind = HostArgKind::kScalar;
  a.value = value;
  return a;
}

HostArg HostArg::scalar_constant(const ScalarValue& v) {
  HostArg a;
  a.kind = HostArgKind::kScalar;
  a.dtype = v.dtype;
  a.value = v.i;
  a.float_value = v.f;
  return a;
}

HostArg HostArg::scalar_param(std::string param, DType dtype) {
  HostArg a;
  a.kind = HostArgKind::kScalar;
  a.param = std::move(param);
  a.dtype = dtype;
  return a;
}

ScalarValue HostArg::scalar_constant_value() const {
  ScalarValue v;
  v.dtype = dtype;
  v.i = value;
  v.f = float_value;
  return v;
}

int64_t HostArg::scalar_bits(const std::vector<ScalarParam>& scalars,
                             const std::vector<ScalarValue>& values) const {
  if (param.empty()) return scalar_constant_value().abi_bits();
  for (size_t k = 0; k < scalars.size() && k < values.size(); ++k)
    if (scalars[k].name == param) return values[k].converted_to(dtype).abi_bits();
  throw ArtifactError("host_orch.json", "args", "a scalar argument names '" + param +
                      "', which is not a scalar parameter of the program",
                      "recompile the build with pypto-compile");
}

const ParamInfo* HostOrch::find_intermediate(std::string_view name) const {
  for (const auto& t : intermediates)
    if (t.name == name) return &t;
  return nullptr;
}

HostOrch HostOrch::load(const fs::path& dir) {
  Json storage;
  JsonObject root = load_json_object(dir / kHostOrchFile, sidecar_display(dir, kHostOrchFile),
                                     recompile_remedy(dir), storage);
  return from_json(root);
}

HostOrch HostOrch::from_json(JsonObject& root) {
  root.expect_schema(kSidecarSchema);
  HostOrch h;
  UniqueChecker<std::string> window_names("window names");
  for (JsonObject& w : root.objects("windows")) {
    WindowInfo info = parse_window(w);
    window_names.add(w, "name", info.name, "'" + info.name + "'");
    h.windows.push_back(std::move(info));
  }
  if (root.has("intermediates")) {
    UniqueChecker<std::string> names("intermediate names");
    for (JsonObject& t : root.objects("intermediates")) {
      ParamInfo info = parse_intermediate(t);
      names.add(t, "name", info.name, "'" + info.name + "'");
      h.intermediates.push_back(std::move(info));
    }
  }
  std::vector<JsonObject> dispatches = root.objects("dispatches");
  if (dispatches.empty()) root.fail("dispatches", "is empty; the plan must dispatch something");
  for (JsonObject& d : dispatches) {
    Dispatch dispatch;
    dispatch.rank = d.integer("rank");
    if (dispatch.rank < 0) d.fail("rank", "is negative; ranks are integers >= 0");
    dispatch.program = non_empty_string(d, "program");
    for (JsonObject& a : d.objects("args"))
      dispatch.args.push_back(parse_arg(a, h.windows, dispatch.rank));
    d.reject_unknown_keys();
    h.dispatches.push_back(std::move(dispatch));
  }
  root.reject_unknown_keys();
  return h;
}

Json HostOrch::to_json() const {
  Json ws = Json::array();
  for (const auto& w : windows)
    ws.push_back(Json{{"name", w.name},
                      {"dtype", dtype_name(w.dtype)},
                      {"shape", w.shape},
                      {"bytes", w.bytes},
                      {"ranks", w.ranks}});
  Json ds = Json::array();
  for (const auto& d : dispatches) {
    Json args = Json::array();
    for (const auto& a : d.args) {
      switch (a.kind) {
        case HostArgKind::kHost: {
          Json arg{
              {"kind", "host"}, {"param", a.param}, {"offsets", a.offsets}, {"shape", a.shape}};
          if (!a.window.empty()) arg["window"] = a.window;
          args.push_back(std::move(arg));
          break;
        }
        case HostArgKind::kWindow:
          args.push_back(Json{{"kind", "window"}, {"window", a.window}});
          break;
        case HostArgKind::kScalar: {
          Json j{{"kind", "scalar"}};
          if (a.dtype != DType::kI64 || !a.param.empty()) j["dtype"] = dtype_name(a.dtype);
          if (!a.param.empty())
            j["param"] = a.param;
          else
            j["value"] = a.scalar_constant_value().to_json();
          args.push_back(std::move(j));
          break;
        }
      }
    }
    ds.push_back(Json{{"rank", d.rank}, {"program", d.program}, {"args", args}});
  }
  Json out{{"schema", kSidecarSchema}, {"windows", ws}, {"dispatches", ds}};
  if (!intermediates.empty()) {
    Json ts = Json::array();
    for (const auto& t : intermediates)
      ts.push_back(Json{{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}});
    out["intermediates"] = ts;
  }
  return out;
}

void HostOrch::write(const fs::path& dir) const {
  write_json_atomic(dir / kHostOrchFile, to_json());
}

const WindowInfo* HostOrch::find_window(std::string_view name) const {
  for (const auto& w : windows)
    if (w.name == name) return &w;
  return nullptr;
}

std::vector<size_t> HostOrch::dispatches_of(int64_t rank) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < dispatches.size(); ++i)
    if (dispatches[i].rank == rank) out.push_back(i);
  return out;
}

}  // namespace pypto
