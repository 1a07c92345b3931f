#include "artifact/kernel_config.h"

#include <limits>

#include "artifact/build_paths.h"
#include "artifact/sidecar_checks.h"

namespace pypto {

namespace {

std::vector<ArgKind> parse_signature(JsonObject& obj) {
  std::vector<ArgKind> signature;
  std::vector<std::string> names = obj.strings("signature");
  for (size_t i = 0; i < names.size(); ++i) {
    auto kind = parse_arg_kind(names[i]);
    if (!kind)
      obj.fail("signature[" + std::to_string(i) + "]",
               "'" + names[i] + "' is not an argument kind; expected In, Out, InOut, Window or " +
                   "Scalar");
    signature.push_back(*kind);
  }
  return signature;
}

Json signature_to_json(const std::vector<ArgKind>& signature) {
  Json list = Json::array();
  for (ArgKind k : signature) list.push_back(arg_kind_name(k));
  return list;
}

// `source` must start with the directory `prefix` ("orchestration/", "kernels/aiv/").
void require_under(const JsonObject& obj, const std::string& source, const std::string& prefix,
                   const std::string& why) {
  fs::path rel = fs::path(source).lexically_normal();
  std::string normal = rel.generic_string();
  if (normal.compare(0, prefix.size(), prefix) != 0 || normal.size() == prefix.size())
    obj.fail("source", "'" + source + "' is not under " + prefix + "; " + why);
}

}  // namespace

const char* arg_kind_name(ArgKind kind) {
  switch (kind) {
    case ArgKind::kIn:
      return "In";
    case ArgKind::kOut:
      return "Out";
    case ArgKind::kInOut:
      return "InOut";
    case ArgKind::kWindow:
      return "Window";
    case ArgKind::kScalar:
      return "Scalar";
  }
  return "?";
}

std::optional<ArgKind> parse_arg_kind(std::string_view name) {
  if (name == "In") return ArgKind::kIn;
  if (name == "Out") return ArgKind::kOut;
  if (name == "InOut") return ArgKind::kInOut;
  if (name == "Window") return ArgKind::kWindow;
  if (name == "Scalar") return ArgKind::kScalar;
  return std::nullopt;
}

std::string signature_string(const std::vector<ArgKind>& signature) {
  std::string s = "[";
  for (size_t i = 0; i < signature.size(); ++i)
    s += (i ? ", " : "") + std::string(arg_kind_name(signature[i]));
  return s + "]";
}

const char* core_type_name(CoreType type) { return type == CoreType::kAic ? "aic" : "aiv"; }

std::optional<CoreType> parse_core_type(std::string_view name) {
  if (name == "aic") return CoreType::kAic;
  if (name == "aiv") return CoreType::kAiv;
  return std::nullopt;
}

KernelConfig KernelConfig::load(const fs::path& dir) {
  Json storage;
  JsonObject root =
      load_json_object(dir / kKernelConfigFile, sidecar_display(dir, kKernelConfigFile),
                       recompile_remedy(dir), storage);
  return from_json(root, dir);
}

KernelConfig KernelConfig::from_json(JsonObject& root, const fs::path& dir) {
  root.expect_schema(kSidecarSchema);
  KernelConfig c;
  c.runtime = root.string("runtime");
  if (c.runtime != kChipRuntime)
    root.fail("runtime", "'" + c.runtime + "' is not a chip runtime; the only one is " +
                             std::string(kChipRuntime));
  c.aicpu_thread_num = root.integer("aicpu_thread_num");
  if (c.aicpu_thread_num < 1 || c.aicpu_thread_num > std::numeric_limits<int>::max())
    root.fail("aicpu_thread_num", "is " + std::to_string(c.aicpu_thread_num) +
                                    "; it must be >= 1 and at most " +
                                    std::to_string(std::numeric_limits<int>::max()));

  std::vector<JsonObject> orchs = root.objects("orchestrations");
  if (orchs.empty()) root.fail("orchestrations", "is empty; a chip needs an orchestration");
  UniqueChecker<std::string> orch_names("orchestration names");
  const std::string orch_prefix = std::string(kOrchestrationDir) + "/";
  for (JsonObject& o : orchs) {
    OrchestrationInfo info;
    info.name = non_empty_string(o, "name");
    orch_names.add(o, "name", info.name, "'" + info.name + "'");
    info.source = o.string("source");
    checked_relative_path(o, "source", info.source, dir);
    require_under(o, info.source, orch_prefix, "orchestration sources live in orchestration/");
    checked_existing_file(o, "source", info.source, dir);
    info.function_name = o.string("function_name");
    if (!is_c_identifier(info.function_name))
      o.fail("function_name", "'" + info.function_name + "' is not a C identifier; it is the " +
                                  "exported symbol of the orchestration entry");
    info.signature = parse_signature(o);
    o.reject_unknown_keys();
    c.orchestrations.push_back(std::move(info));
  }

  UniqueChecker<std::string> kernel_names("kernel names");
  UniqueChecker<int64_t> func_ids("func_ids");
  for (JsonObject& k : root.objects("kernels")) {
    KernelInfo info;
    info.func_id = k.integer("func_id");
    if (info.func_id < 0) k.fail("func_id", "is negative; func_ids are integers >= 0");
    func_ids.add(k, "func_id", info.func_id, std::to_string(info.func_id));
    info.name = non_empty_string(k, "name");
    kernel_names.add(k, "name", info.name, "'" + info.name + "'");
    std::string core = k.string("core_type");
    auto type = parse_core_type(core);
    if (!type)
      k.fail("core_type", "'" + core + "' is not a core type; expected aic (cube) or aiv (vector)");
    info.core_type = *type;
    info.source = k.string("source");
    checked_relative_path(k, "source", info.source, dir);
    std::string prefix = std::string(kKernelsDir) + "/" + core + "/";
    require_under(k, info.source, prefix, "a kernel's source lives in kernels/<core_type>/");
    checked_existing_file(k, "source", info.source, dir);
    info.signature = parse_signature(k);
    k.reject_unknown_keys();
    c.kernels.push_back(std::move(info));
  }
  root.reject_unknown_keys();
  return c;
}

Json KernelConfig::to_json() const {
  Json orchs = Json::array();
  for (const auto& o : orchestrations)
    orchs.push_back(Json{{"name", o.name},
                         {"source", o.source},
                         {"function_name", o.function_name},
                         {"signature", signature_to_json(o.signature)}});
  Json ks = Json::array();
  for (const auto& k : kernels)
    ks.push_back(Json{{"func_id", k.func_id},
                      {"name", k.name},
                      {"core_type", core_type_name(k.core_type)},
                      {"source", k.source},
                      {"signature", signature_to_json(k.signature)}});
  return Json{{"schema", kSidecarSchema},
              {"runtime", runtime},
              {"aicpu_thread_num", aicpu_thread_num},
              {"orchestrations", orchs},
              {"kernels", ks}};
}

void KernelConfig::write(const fs::path& dir) const {
  write_json_atomic(dir / kKernelConfigFile, to_json());
}

const OrchestrationInfo* KernelConfig::find_orchestration(std::string_view name) const {
  for (const auto& o : orchestrations)
    if (o.name == name) return &o;
  return nullptr;
}

const KernelInfo* KernelConfig::find_kernel(int64_t func_id) const {
  for (const auto& k : kernels)
    if (k.func_id == func_id) return &k;
  return nullptr;
}

std::string KernelConfig::orchestration_names() const {
  std::string s;
  for (const auto& o : orchestrations) s += (s.empty() ? "" : ", ") + o.name;
  return s;
}

}  // namespace pypto
