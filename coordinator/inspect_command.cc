#include "coordinator/inspect_command.h"

#include <sstream>

#include "artifact/binary_cache.h"
#include "artifact/build_paths.h"
#include "artifact/chip_build.h"
#include "artifact/compiled_meta.h"
#include "artifact/distributed_meta.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "common/wire/blob_store.h"
#include "pypto/build_kind.h"
#include "pypto/compiled_program.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/scalar_param.h"

namespace pypto::coord {

namespace {

using nlohmann::json;

json signature_json(const std::vector<ArgKind>& signature) {
  json out = json::array();
  for (ArgKind kind : signature) out.push_back(arg_kind_name(kind));
  return out;
}

// One chip's programs and kernels with the cache state of every source: in
// the chip directory's own stamp and cache/bin/ (L2), or, given `store`, in
// the host-wide store the rank agents compile into (L3), with the key the
// source is looked up by there.
json describe_chip(const fs::path& chip_dir, const KernelConfig& config,
                   const std::string& platform, const std::string& arch,
                   const std::optional<fs::path>& store) {
  auto add_cache = [&](json entry, const std::string& source) {
    if (!store) {
      entry["cache"] = cache_state_name(cache_state(chip_dir, source, platform, arch));
      return entry;
    }
    const StoreState state = store_state(chip_dir / source, platform, arch, *store);
    entry["cache"] = cache_state_name(state.state);
    entry["key"] = state.key.key;
    if (!state.key.ok()) entry["key_failure"] = state.key.failure;
    return entry;
  };
  json chip;
  chip["runtime"] = config.runtime;
  chip["aicpu_thread_num"] = config.aicpu_thread_num;
  chip["orchestrations"] = json::array();
  for (const auto& o : config.orchestrations)
    chip["orchestrations"].push_back(add_cache({{"name", o.name},
                                                {"source", o.source},
                                                {"function_name", o.function_name},
                                                {"signature", signature_json(o.signature)}},
                                               o.source));
  chip["kernels"] = json::array();
  for (const auto& k : config.kernels)
    chip["kernels"].push_back(add_cache({{"func_id", k.func_id},
                                         {"name", k.name},
                                         {"core_type", core_type_name(k.core_type)},
                                         {"source", k.source},
                                         {"signature", signature_json(k.signature)}},
                                        k.source));
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

// Ranks whose descriptions are equal apart from their number and directory
// (same programs, sources, content keys and cache states), in rank order of
// their first member: the text shows each group once.
struct RankGroup {
  std::vector<size_t> members;  // indices into the description's "ranks"
};

std::vector<RankGroup> identical_rank_groups(const json& ranks) {
  std::vector<RankGroup> groups;
  std::vector<json> shapes;
  for (size_t i = 0; i < ranks.size(); ++i) {
    json shape = ranks[i];
    shape.erase("rank");
    shape.erase("dir");
    size_t g = 0;
    while (g < shapes.size() && shapes[g] != shape) ++g;
    if (g == shapes.size()) {
      shapes.push_back(std::move(shape));
      groups.emplace_back();
    }
    groups[g].members.push_back(i);
  }
  return groups;
}

// "0-7" / "0, 2, 4" / "0-3, 5" for the ranks, or with `dirs` their directories
// the same way ("next_levels/0 … next_levels/7"); three or more consecutive
// ranks make a range.
std::string rank_list(const std::vector<int64_t>& ranks, const std::vector<std::string>& dirs,
                      bool show_dirs) {
  auto item = [&](size_t i) { return show_dirs ? dirs[i] : std::to_string(ranks[i]); };
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t end = i;
    while (end + 1 < ranks.size() && ranks[end + 1] == ranks[end] + 1) ++end;
    if (!out.empty()) out += ", ";
    if (end >= i + 2) {
      out += item(i) + (show_dirs ? " … " : "-") + item(end);
      i = end + 1;
    } else {
      out += item(i);
      ++i;
    }
  }
  return out;
}

}  // namespace

json describe_build_dir(const fs::path& dir, const std::optional<fs::path>& binary_store) {
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
    d["scalars"] = scalar_params_to_json(program.scalars());
    d["golden"] = golden_json(program.golden());
    d["binary_store"] = default_binary_store(dir).string();
    d["binary_store_scope"] = "build";
    json chip = describe_chip(dir, program.kernel_config(), program.platform(), program.arch(),
                              std::nullopt);
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
  d["scalars"] = scalar_params_to_json(program.scalars());
  d["intermediates"] = params_to_json(program.host_orch().intermediates);
  d["golden"] = golden_json(program.golden());
  d["windows"] = json::array();
  for (const auto& w : program.host_orch().windows)
    d["windows"].push_back({{"name", w.name},
                            {"dtype", dtype_name(w.dtype)},
                            {"shape", w.shape},
                            {"bytes", w.bytes},
                            {"ranks", w.ranks}});
  // The agents of this host compile into its store (pypto-rank --binary-store),
  // not into the build, and leave no stamp here: look there, by content key.
  const fs::path store = wire::host_binary_store(binary_store);
  d["binary_store"] = store.string();
  d["binary_store_scope"] = "host";
  d["ranks"] = json::array();
  for (int64_t r = 0; r < program.world_size(); ++r) {
    const ChipBuild& build = program.chip(r);
    json chip = describe_chip(build.dir, build.config, program.platform(), program.arch(), store);
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
  // The recorded default is what a run passes unless --scalar NAME=VALUE says otherwise.
  for (const auto& s : d["scalars"])
    out << "    " << s["name"].get<std::string>() << ": scalar " << s["dtype"].get<std::string>()
        << ", default "
        << (s["value"].is_string() ? s["value"].get<std::string>() : s["value"].dump()) << " (run --scalar " << s["name"].get<std::string>()
        << "=VALUE)\n";
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
  if (d.contains("binary_store")) {
    out << "  binary store " << d["binary_store"].get<std::string>()
        << (d["binary_store_scope"] == "host"
                ? " (this host's rank agents compile into it; --binary-store DIR to look at "
                  "another)\n"
                : " (this build's own)\n");
  }
  for (const RankGroup& group : identical_rank_groups(d["ranks"])) {
    const json& chip = d["ranks"][group.members.front()];
    std::vector<int64_t> ranks;
    std::vector<std::string> dirs;
    for (size_t i : group.members) {
      ranks.push_back(d["ranks"][i]["rank"].get<int64_t>());
      dirs.push_back(d["ranks"][i]["dir"].get<std::string>());
    }
    out << (ranks.size() == 1 ? "  rank " : "  ranks ") << rank_list(ranks, dirs, false) << " ("
        << rank_list(ranks, dirs, true)
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
  std::optional<fs::path> store;
  if (!args.binary_store.empty()) store = args.binary_store;
  const json description = describe_build_dir(args.dir, store);
  if (args.json)
    out << description.dump(2) << "\n";
  else
    out << format_description(description);
  return 0;
}

}  // namespace pypto::coord
