#include "coordinator/inspect_command.h"

#include <sstream>

#include "artifact/binary_cache.h"
#include "artifact/build_kind.h"
#include "artifact/build_paths.h"
#include "artifact/compiled_program.h"
#include "artifact/distributed_compiled_program.h"

namespace pypto::coord {

namespace {

using nlohmann::json;

json signature_json(const std::vector<ArgKind>& signature) {
  json out = json::array();
  for (ArgKind kind : signature) out.push_back(arg_kind_name(kind));
  return out;
}

// One chip's programs and kernels with the cache state of every source.
json describe_chip(const fs::path& chip_dir, const KernelConfig& config,
                   const std::string& platform, const std::string& arch) {
  json chip;
  chip["runtime"] = config.runtime;
  chip["aicpu_thread_num"] = config.aicpu_thread_num;
  chip["orchestrations"] = json::array();
  for (const auto& o : config.orchestrations)
    chip["orchestrations"].push_back(
        {{"name", o.name},
         {"source", o.source},
         {"function_name", o.function_name},
         {"signature", signature_json(o.signature)},
         {"cache", cache_state_name(cache_state(chip_dir, o.source, platform, arch))}});
  chip["kernels"] = json::array();
  for (const auto& k : config.kernels)
    chip["kernels"].push_back(
        {{"func_id", k.func_id},
         {"name", k.name},
         {"core_type", core_type_name(k.core_type)},
         {"source", k.source},
         {"signature", signature_json(k.signature)},
         {"cache", cache_state_name(cache_state(chip_dir, k.source, platform, arch))}});
  return chip;
}

json golden_json(const std::optional<GoldenSpec>& golden) {
  if (!golden) return nullptr;
  return {{"rtol", golden->rtol}, {"atol", golden->atol}, {"outputs", golden->outputs}};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return out + "]";
}

std::string join(const json& list) {
  std::string out;
  for (const auto& item : list) {
    if (!out.empty()) out += ", ";
    out += item.is_string() ? item.get<std::string>() : item.dump();
  }
  return out;
}

}  // namespace

json describe_build_dir(const fs::path& dir) {
  json d;
  d["dir"] = dir.string();
  const BuildKind kind = detect_build_kind(dir);
  d["kind"] = build_kind_name(kind);
  if (kind == BuildKind::kL2) {
    const CompiledProgram program = CompiledProgram::from_dir(dir);
    d["program"] = program.name();
    d["platform"] = program.platform();
    d["arch"] = program.arch();
    d["compiler_version"] = program.meta().compiler_version;
    d["world_size"] = 1;
    d["device_ids"] = nullptr;  // an L2 run takes its device from the run config
    d["params"] = params_to_json(program.params());
    d["golden"] = golden_json(program.golden());
    json chip = describe_chip(dir, program.kernel_config(), program.platform(), program.arch());
    chip["rank"] = 0;
    chip["dir"] = ".";
    chip["programs"] = json::array({program.name()});
    d["ranks"] = json::array({chip});
    return d;
  }
  const DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(dir);
  d["program"] = program.name();
  d["platform"] = program.platform();
  d["arch"] = program.arch();
  d["compiler_version"] = program.meta().compiler_version;
  d["world_size"] = program.world_size();
  d["device_ids"] = program.device_ids();
  d["params"] = params_to_json(program.params());
  d["intermediates"] = params_to_json(program.host_orch().intermediates);
  d["golden"] = golden_json(program.golden());
  d["windows"] = json::array();
  for (const auto& w : program.host_orch().windows)
    d["windows"].push_back({{"name", w.name},
                            {"dtype", dtype_name(w.dtype)},
                            {"shape", w.shape},
                            {"bytes", w.bytes},
                            {"ranks", w.ranks}});
  d["ranks"] = json::array();
  for (int64_t r = 0; r < program.world_size(); ++r) {
    const ChipBuild& build = program.chip(r);
    json chip = describe_chip(build.dir, build.config, program.platform(), program.arch());
    chip["rank"] = r;
    chip["dir"] = (fs::path(kNextLevelsDir) / std::to_string(r)).string();
    chip["programs"] = json::array();
    for (const Dispatch* dispatch : program.dispatches_of(r))
      chip["programs"].push_back(dispatch->program);
    d["ranks"].push_back(std::move(chip));
  }
  return d;
}

std::string format_description(const json& d) {
  std::ostringstream out;
  out << d["dir"].get<std::string>() << ": " << d["kind"].get<std::string>() << " build of '"
      << d["program"].get<std::string>() << "'\n";
  out << "  platform     " << d["platform"].get<std::string>() << " (arch "
      << d["arch"].get<std::string>() << ")\n";
  out << "  compiled by  " << d["compiler_version"].get<std::string>() << "\n";
  out << "  world size   " << d["world_size"].get<int64_t>();
  if (!d["device_ids"].is_null()) out << ", device ids " << join(d["device_ids"]);
  out << "\n  parameters\n";
  for (const auto& p : d["params"])
    out << "    " << p["name"].get<std::string>() << ": " << p["direction"].get<std::string>()
        << " " << p["dtype"].get<std::string>() << shape_text(p["shape"].get<std::vector<int64_t>>())
        << "\n";
  if (d.contains("intermediates") && !d["intermediates"].empty()) {
    out << "  host intermediates (zeroed per run)\n";
    for (const auto& t : d["intermediates"])
      out << "    " << t["name"].get<std::string>() << ": " << t["dtype"].get<std::string>()
          << shape_text(t["shape"].get<std::vector<int64_t>>()) << "\n";
  }
  if (d["golden"].is_null()) {
    out << "  golden       none (runs need --input for every input; --validate is unavailable)\n";
  } else {
    out << "  golden       outputs " << join(d["golden"]["outputs"]) << ", rtol "
        << d["golden"]["rtol"].get<double>() << ", atol " << d["golden"]["atol"].get<double>()
        << "\n";
  }
  if (d.contains("windows") && !d["windows"].empty()) {
    out << "  windows\n";
    for (const auto& w : d["windows"])
      out << "    " << w["name"].get<std::string>() << ": " << w["dtype"].get<std::string>()
          << shape_text(w["shape"].get<std::vector<int64_t>>()) << ", "
          << w["bytes"].get<int64_t>() << " bytes on ranks " << join(w["ranks"]) << "\n";
  }
  for (const auto& chip : d["ranks"]) {
    out << "  rank " << chip["rank"].get<int64_t>() << " (" << chip["dir"].get<std::string>()
        << "): runs " << (chip["programs"].empty() ? "nothing" : join(chip["programs"])) << "\n";
    for (const auto& o : chip["orchestrations"])
      out << "    program " << o["name"].get<std::string>() << "  " << o["source"].get<std::string>()
          << "  [" << join(o["signature"]) << "]  cache " << o["cache"].get<std::string>() << "\n";
    for (const auto& k : chip["kernels"])
      out << "    kernel  " << k["func_id"].get<int64_t>() << " " << k["name"].get<std::string>()
          << " (" << k["core_type"].get<std::string>() << ")  " << k["source"].get<std::string>()
          << "  [" << join(k["signature"]) << "]  cache " << k["cache"].get<std::string>() << "\n";
  }
  return out.str();
}

int run_inspect(const InspectArgs& args, std::ostream& out) {
  const json description = describe_build_dir(args.dir);
  if (args.json)
    out << description.dump(2) << "\n";
  else
    out << format_description(description);
  return 0;
}

}  // namespace pypto::coord
