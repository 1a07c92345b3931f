#include "orchestration/dfx_writer.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "common/fs_util.h"
#include "common/json_reader.h"
#include "pypto/dtype.h"
#include "pypto/error.h"
#include "pypto/kernel_abi.h"

namespace pypto::chip {

namespace {

// File names, relative to the dispatch directory (docs/dfx.md).
constexpr const char* kSwimlaneFile = "chip_swimlane_records.json";
constexpr const char* kTraceFile = "chip_swimlane_trace.json";
constexpr const char* kDepsFile = "deps.json";
constexpr const char* kPmuFile = "pmu.csv";
constexpr const char* kScopeStatsFile = "scope_stats/scope_stats.jsonl";
constexpr const char* kArgsJsonFile = "args_dump/args_dump.json";
constexpr const char* kArgsBinFile = "args_dump/args.bin";
constexpr const char* kNameMapFile = "name_map.json";

constexpr int kSchema = 1;

// The orchestrator's track in the Chrome trace: far above any core id, and
// the same in every dispatch and rank.
constexpr int32_t kOrchestratorTid = 1 << 20;

const char* core_type_name(int32_t type) { return type == PYPTO_CORE_AIC ? "aic" : "aiv"; }

const char* direction_name(int32_t direction) {
  switch (direction) {
    case PYPTO_IN:
      return "In";
    case PYPTO_OUT:
      return "Out";
    case PYPTO_INOUT:
      return "InOut";
  }
  return "?";
}

std::string dtype_label(int32_t dtype) {
  if (dtype >= PYPTO_F32 && dtype <= PYPTO_BOOL) return dtype_name(static_cast<DType>(dtype));
  return "dtype" + std::to_string(dtype);
}

// The kernel's name, or "func<N>" for a func_id the name map does not know
// (a record that was not produced from this build's kernel_config.json).
std::string kernel_name(const DfxContext& context, int32_t func_id) {
  auto it = context.names.find(func_id);
  return it != context.names.end() ? it->second : "func" + std::to_string(func_id);
}

// Fields every JSON file starts with, so a file is self-describing when it
// is copied out of its dispatch directory.
Json header(const DfxContext& context) {
  Json j = Json::object();
  j["schema"] = kSchema;
  j["program"] = context.program;
  j["rank"] = context.rank;
  j["world"] = context.world;
  return j;
}

// ---- swimlane ----

struct CoreKey {
  int32_t id;
  int32_t type;
  bool operator<(const CoreKey& o) const { return std::tie(id, type) < std::tie(o.id, o.type); }
};

std::set<CoreKey> cores_of(const DispatchRecord& record) {
  std::set<CoreKey> cores;
  for (const auto& t : record.tasks)
    if (t.core_id >= 0) cores.insert({t.core_id, t.core_type});
  for (const auto& p : record.phases) cores.insert({p.core_id, p.core_type});
  return cores;
}

// A core's first idle phase of a dispatch began when it went idle after the
// previous one; clip it to the dispatch so the timeline starts at begin_ns.
std::pair<int64_t, int64_t> clipped(const CorePhase& p, const DispatchRecord& record) {
  int64_t start = std::max(p.start_ns, record.begin_ns);
  int64_t end = std::max(p.end_ns, start);
  return {start, end};
}

Json swimlane_json(const DispatchRecord& record, int level, const DfxContext& context) {
  Json j = header(context);
  j["clock"] = "CLOCK_MONOTONIC ns";
  j["level"] = level;
  j["dispatch"] = {
      {"begin_ns", record.begin_ns}, {"end_ns", record.end_ns}, {"num_tasks", record.num_tasks}};
  Json cores = Json::array();
  for (const auto& c : cores_of(record))
    cores.push_back({{"core_id", c.id}, {"core_type", core_type_name(c.type)}});
  j["cores"] = std::move(cores);
  Json tasks = Json::array();
  for (const auto& t : record.tasks) {
    Json task = {{"task_id", t.task_id},
                 {"func_id", t.func_id},
                 {"kernel", kernel_name(context, t.func_id)},
                 {"core_type", core_type_name(t.core_type)},
                 {"core_id", t.core_id},
                 {"scope_id", t.scope_id},
                 {"start_ns", t.start_ns},
                 {"end_ns", t.end_ns}};
    if (level >= 2) {
      task["ready_ns"] = t.ready_ns;
      task["dispatch_ns"] = t.dispatch_ns;
      task["finish_ns"] = t.finish_ns;
    }
    if (level >= 4) {
      task["submit_begin_ns"] = t.submit_begin_ns;
      task["submit_end_ns"] = t.submit_end_ns;
    }
    tasks.push_back(std::move(task));
  }
  j["tasks"] = std::move(tasks);
  if (level >= 3) {
    Json phases = Json::array();
    for (const auto& p : record.phases) {
      auto [start, end] = clipped(p, record);
      phases.push_back({{"core_id", p.core_id},
                        {"core_type", core_type_name(p.core_type)},
                        {"phase", p.phase},
                        {"start_ns", start},
                        {"end_ns", end}});
    }
    j["phases"] = std::move(phases);
  }
  return j;
}

// Chrome trace-event format (JSON object form), for Perfetto and
// chrome://tracing. Timestamps are absolute CLOCK_MONOTONIC microseconds so
// that the traces of several ranks on one host merge by concatenating their
// traceEvents: pid = rank, tid = core id; the orchestrator gets its own tid.
Json trace_json(const DispatchRecord& record, int level, const DfxContext& context) {
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  const auto cores = cores_of(record);

  Json events = Json::array();
  auto meta = [&](const char* name, int32_t tid, Json args) {
    Json e = {{"name", name}, {"ph", "M"}, {"pid", context.rank}, {"args", std::move(args)}};
    if (tid >= 0) e["tid"] = tid;
    events.push_back(std::move(e));
  };
  meta("process_name", -1,
       {{"name", "rank " + std::to_string(context.rank) + " (" + context.program + ")"}});
  meta("process_sort_index", -1, {{"sort_index", context.rank}});
  for (const auto& c : cores) {
    meta("thread_name", c.id,
         {{"name", std::string(core_type_name(c.type)) + " core " + std::to_string(c.id)}});
    meta("thread_sort_index", c.id, {{"sort_index", c.id}});
  }
  if (level >= 4) {
    meta("thread_name", kOrchestratorTid, {{"name", "orchestrator"}});
    meta("thread_sort_index", kOrchestratorTid, {{"sort_index", -1}});
  }

  auto span = [&](const std::string& name, const char* cat, int32_t tid, int64_t start, int64_t end,
                  Json args) {
    events.push_back({{"name", name},
                      {"cat", cat},
                      {"ph", "X"},
                      {"pid", context.rank},
                      {"tid", tid},
                      {"ts", us(start)},
                      {"dur", us(std::max<int64_t>(end - start, 0))},
                      {"args", std::move(args)}});
  };
  for (const auto& t : record.tasks) {
    if (t.core_id < 0) continue;
    Json args = {{"task_id", t.task_id}, {"func_id", t.func_id}, {"scope_id", t.scope_id}};
    if (level >= 2) {
      args["queued_ns"] = t.dispatch_ns - t.ready_ns;
      args["release_ns"] = t.finish_ns - t.end_ns;
    }
    span(kernel_name(context, t.func_id), "task", t.core_id, t.start_ns, t.end_ns, std::move(args));
    if (level >= 4)
      span("submit " + std::to_string(t.task_id), "submit", kOrchestratorTid, t.submit_begin_ns,
           t.submit_end_ns, {{"task_id", t.task_id}});
  }
  if (level >= 3) {
    // "execute" duplicates the task spans; idle and complete fill the gaps.
    for (const auto& p : record.phases) {
      if (p.phase == "execute") continue;
      auto [start, end] = clipped(p, record);
      span(p.phase, "phase", p.core_id, start, end, Json::object());
    }
  }
  Json j = header(context);
  j["displayTimeUnit"] = "ns";
  j["traceEvents"] = std::move(events);
  return j;
}

// ---- deps ----

Json deps_json(const DispatchRecord& record, const DfxContext& context) {
  Json j = header(context);
  Json tasks = Json::array();
  if (!record.tasks.empty()) {
    for (const auto& t : record.tasks)
      tasks.push_back({{"task_id", t.task_id},
                       {"func_id", t.func_id},
                       {"kernel", kernel_name(context, t.func_id)}});
  } else {
    // No per-task record: ids are still 0..num_tasks-1, the kernels unknown.
    for (int64_t id = 0; id < record.num_tasks; ++id)
      tasks.push_back({{"task_id", id}, {"func_id", nullptr}, {"kernel", nullptr}});
  }
  j["tasks"] = std::move(tasks);

  std::map<int32_t, std::string> tensor_label;
  Json tensors = Json::array();
  for (const auto& t : record.tensors) {
    std::ostringstream base;
    base << "0x" << std::hex << t.base;
    tensors.push_back({{"tensor_id", t.tensor_id},
                       {"name", t.name.empty() ? Json(nullptr) : Json(t.name)},
                       {"base", base.str()}});
    tensor_label[t.tensor_id] = t.name.empty() ? "#" + std::to_string(t.tensor_id) : t.name;
  }
  j["tensors"] = std::move(tensors);

  Json edges = Json::array();
  for (const auto& e : record.edges) {
    auto it = tensor_label.find(e.tensor_id);
    const std::string tensor =
        "tensor " + (it != tensor_label.end() ? it->second : "#" + std::to_string(e.tensor_id));
    const std::string succ = "task " + std::to_string(e.succ);
    const std::string pred = "task " + std::to_string(e.pred);
    std::string why;
    switch (e.reason) {
      case DepReason::kReadAfterWrite:
        why = succ + " reads a region of " + tensor + " that " + pred + " wrote";
        break;
      case DepReason::kWriteAfterRead:
        why = succ + " writes a region of " + tensor + " that " + pred + " read";
        break;
      case DepReason::kWriteAfterWrite:
        why = succ + " writes a region of " + tensor + " that " + pred + " also wrote";
        break;
    }
    edges.push_back({{"pred", e.pred},
                     {"succ", e.succ},
                     {"tensor", e.tensor_id},
                     {"reason", dep_reason_name(e.reason)},
                     {"why", why}});
  }
  j["edges"] = std::move(edges);
  return j;
}

// ---- pmu ----

// RFC 4180 quoting for the one free-text column (kernel names).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string pmu_csv(const DispatchRecord& record, int event_set, const DfxContext& context) {
  std::ostringstream out;
  out << "# pypto pmu.csv schema " << kSchema << "\n";
  out << "# program: " << context.program << ", rank " << context.rank << " of " << context.world
      << "\n";
  out << "# event set: " << event_set << "\n";
  out << "# events:";
  for (size_t i = 0; i < record.pmu_events.size(); ++i)
    out << (i ? "," : " ") << record.pmu_events[i];
  out << "\n";
  for (const auto& why : record.pmu_unavailable) out << "# unavailable: " << why << "\n";
  out << "task_id,func_id,kernel,core_type,core_id";
  for (const auto& name : record.pmu_events) out << "," << name;
  out << "\n";
  for (const auto& t : record.tasks) {
    out << t.task_id << "," << t.func_id << "," << csv_field(kernel_name(context, t.func_id)) << ","
        << core_type_name(t.core_type) << "," << t.core_id;
    // A task that never ran on a core has no counters: leave the cells empty.
    for (size_t i = 0; i < record.pmu_events.size(); ++i) {
      out << ",";
      if (i < t.pmu.size()) out << t.pmu[i];
    }
    out << "\n";
  }
  return out.str();
}

// ---- scope stats ----

std::string scope_stats_jsonl(const DispatchRecord& record) {
  std::map<int32_t, int64_t> busy;
  for (const auto& t : record.tasks)
    if (t.core_id >= 0) busy[t.scope_id] += std::max<int64_t>(t.end_ns - t.start_ns, 0);
  std::string out;
  for (const auto& s : record.scopes) {
    Json j = {{"schema", kSchema},
              {"scope_id", s.scope_id},
              {"parent_id", s.parent_id},
              {"depth", s.depth},
              {"name", s.name},
              {"begin_ns", s.begin_ns},
              {"end_ns", s.end_ns},
              {"duration_ns", s.end_ns - s.begin_ns},
              {"num_tasks", s.num_tasks},
              {"ring", s.ring},
              {"peak_tasks_in_flight", s.peak_tasks_in_flight},
              {"peak_heap_bytes", s.peak_heap_bytes},
              {"peak_dep_edges", s.peak_dep_edges}};
    // busy_ns needs the task records; null rather than a misleading 0.
    if (record.tasks.empty() && s.num_tasks > 0)
      j["busy_ns"] = nullptr;
    else
      j["busy_ns"] = busy.count(s.scope_id) ? busy[s.scope_id] : 0;
    out += j.dump();
    out += '\n';
  }
  return out;
}

// ---- args dump ----

void write_args_dump(const std::filesystem::path& dir, const DispatchRecord& record, int level,
                     const DfxContext& context) {
  std::string bin;
  Json args = Json::array();
  for (const auto& t : record.tasks) {
    for (const auto& a : t.args) {
      args.push_back({{"task_id", t.task_id},
                      {"func_id", t.func_id},
                      {"kernel", kernel_name(context, t.func_id)},
                      {"arg_index", a.arg_index},
                      {"tag", a.tag},
                      {"direction", direction_name(a.direction)},
                      {"dtype", dtype_label(a.dtype)},
                      {"shape", a.shape},
                      {"offset", bin.size()},
                      {"nbytes", a.bytes.size()}});
      bin += a.bytes;
    }
  }
  Json j = header(context);
  j["level"] = level;
  j["data_file"] = "args.bin";
  j["byte_order"] = "little";
  j["args"] = std::move(args);
  // The binary first: a reader that finds the JSON finds the bytes it indexes.
  write_file_atomic(dir / kArgsBinFile, bin);
  write_json_atomic(dir / kArgsJsonFile, j);
}

// A switch that is off removes its files of an earlier run in the same
// directory (L2 reuses dfx_outputs/), so the directory never mixes runs.
void remove_stale(const std::filesystem::path& dir, std::initializer_list<const char*> files) {
  std::error_code ec;
  for (const char* f : files) {
    const std::filesystem::path path = dir / f;
    std::filesystem::remove(path, ec);
    // Its subdirectory too (scope_stats/, args_dump/), when nothing else is in it.
    if (path.parent_path() != dir) std::filesystem::remove(path.parent_path(), ec);
  }
}

}  // namespace

void write_dispatch_dfx(const std::filesystem::path& dir, const DispatchRecord& record,
                        const DfxOptions& dfx, const DfxContext& context) {
  if (!dfx.any()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw InfraError("cannot create the DFX directory " + dir.string() + ": " + ec.message() +
                     "; check that the build directory is writable");

  if (dfx.enable_chip_swimlane > 0) {
    write_json_atomic(dir / kSwimlaneFile,
                      swimlane_json(record, dfx.enable_chip_swimlane, context));
    write_json_atomic(dir / kTraceFile, trace_json(record, dfx.enable_chip_swimlane, context));
  } else {
    remove_stale(dir, {kSwimlaneFile, kTraceFile});
  }

  if (dfx.enable_dep_gen)
    write_json_atomic(dir / kDepsFile, deps_json(record, context));
  else
    remove_stale(dir, {kDepsFile});

  if (dfx.enable_pmu > 0)
    write_file_atomic(dir / kPmuFile, pmu_csv(record, dfx.enable_pmu, context));
  else
    remove_stale(dir, {kPmuFile});

  if (dfx.enable_scope_stats)
    write_file_atomic(dir / kScopeStatsFile, scope_stats_jsonl(record));
  else
    remove_stale(dir, {kScopeStatsFile});

  if (dfx.enable_dump_args > 0)
    write_args_dump(dir, record, dfx.enable_dump_args, context);
  else
    remove_stale(dir, {kArgsJsonFile, kArgsBinFile});

  Json names = header(context);
  Json kernels = Json::object();
  for (const auto& [id, name] : context.names) kernels[std::to_string(id)] = name;
  names["kernels"] = std::move(kernels);
  write_json_atomic(dir / kNameMapFile, names);
}

}  // namespace pypto::chip
