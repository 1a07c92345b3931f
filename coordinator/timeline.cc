#include "coordinator/timeline.h"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "common/fs_util.h"
#include "common/log.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

constexpr const char* kRecordsFile = "chip_swimlane_records.json";
constexpr const char* kDepsFile = "deps.json";
constexpr const char* kPmuFile = "pmu.csv";
constexpr const char* kDispatchFile = "dispatch_program.json";
constexpr const char* kCommOpsFile = "comm_ops.json";
constexpr const char* kRemedy = "run the build again with --swimlane to rewrite dfx_outputs/";

// Thread ids of the trace: core ids are small; the orchestrator keeps the id
// the per-dispatch chip_swimlane_trace.json gives it, the dispatches sit beside it.
constexpr int64_t kOrchestratorTid = 1 << 20;
constexpr int64_t kDispatchTid = kOrchestratorTid + 1;

// A parsed JSON file and where it came from, for errors that name the field.
struct Record {
  fs::path file;
  Json json;

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw ArtifactError(file.string(), field, problem, kRemedy);
  }
  const Json& at(const Json& object, const std::string& key, const std::string& path) const {
    if (!object.is_object() || !object.contains(key)) fail(path + key, "missing");
    return object[key];
  }
  int64_t integer(const Json& object, const std::string& key, const std::string& path = "") const {
    const Json& v = at(object, key, path);
    if (!v.is_number_integer()) fail(path + key, "is not an integer");
    return v.get<int64_t>();
  }
  std::string string(const Json& object, const std::string& key,
                     const std::string& path = "") const {
    const Json& v = at(object, key, path);
    if (!v.is_string()) fail(path + key, "is not a string");
    return v.get<std::string>();
  }
  std::optional<int64_t> optional_integer(const Json& object, const std::string& key,
                                          const std::string& path = "") const {
    if (!object.contains(key) || object[key].is_null()) return std::nullopt;
    return integer(object, key, path);
  }
  const Json& array(const Json& object, const std::string& key, const std::string& path = "") const {
    const Json& v = at(object, key, path);
    if (!v.is_array()) fail(path + key, "is not an array");
    return v;
  }
};

Record load(const fs::path& file) {
  Record r{file, {}};
  try {
    r.json = Json::parse(read_file(file));
  } catch (const Json::parse_error& e) {
    r.fail("", std::string("is not valid JSON: ") + e.what());
  }
  if (!r.json.is_object()) r.fail("", "is not a JSON object");
  if (r.json.contains("schema") && r.json["schema"] != 1)
    r.fail("schema", "is " + r.json["schema"].dump() + "; this pypto-coord reads schema 1");
  return r;
}

void read_swimlane(TimelineDispatch& d) {
  const Record r = load(d.dir / kRecordsFile);
  const Json& j = r.json;
  const int64_t off = d.clock_offset_ns;
  d.level = static_cast<int>(r.integer(j, "level"));
  if (d.program.empty()) d.program = r.string(j, "program");
  const Json& dispatch = r.at(j, "dispatch", "");
  d.begin_ns = r.integer(dispatch, "begin_ns", "dispatch.") - off;
  d.end_ns = r.integer(dispatch, "end_ns", "dispatch.") - off;
  d.num_tasks = r.integer(dispatch, "num_tasks", "dispatch.");
  const Json& cores = r.array(j, "cores");
  for (size_t i = 0; i < cores.size(); ++i) {
    const std::string at = "cores[" + std::to_string(i) + "].";
    d.cores.emplace_back(r.integer(cores[i], "core_id", at), r.string(cores[i], "core_type", at));
  }
  const Json& tasks = r.array(j, "tasks");
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Json& t = tasks[i];
    const std::string at = "tasks[" + std::to_string(i) + "].";
    TimelineTask task;
    task.task_id = r.integer(t, "task_id", at);
    task.func_id = r.integer(t, "func_id", at);
    task.kernel = r.string(t, "kernel", at);
    task.core_type = r.string(t, "core_type", at);
    task.core_id = r.integer(t, "core_id", at);
    task.scope_id = r.integer(t, "scope_id", at);
    task.start_ns = r.integer(t, "start_ns", at) - off;
    task.end_ns = r.integer(t, "end_ns", at) - off;
    auto shifted = [&](const char* key) -> std::optional<int64_t> {
      auto v = r.optional_integer(t, key, at);
      if (v) *v -= off;
      return v;
    };
    task.ready_ns = shifted("ready_ns");
    task.dispatch_ns = shifted("dispatch_ns");
    task.finish_ns = shifted("finish_ns");
    task.submit_begin_ns = shifted("submit_begin_ns");
    task.submit_end_ns = shifted("submit_end_ns");
    d.tasks.push_back(std::move(task));
  }
  if (j.contains("phases")) {
    const Json& phases = r.array(j, "phases");
    for (size_t i = 0; i < phases.size(); ++i) {
      const std::string at = "phases[" + std::to_string(i) + "].";
      d.phases.push_back({r.integer(phases[i], "core_id", at), r.string(phases[i], "core_type", at),
                          r.string(phases[i], "phase", at),
                          r.integer(phases[i], "start_ns", at) - off,
                          r.integer(phases[i], "end_ns", at) - off});
    }
  }
}

void read_deps(TimelineDispatch& d) {
  const Record r = load(d.dir / kDepsFile);
  const Json& edges = r.array(r.json, "edges");
  for (size_t i = 0; i < edges.size(); ++i) {
    const std::string at = "edges[" + std::to_string(i) + "].";
    d.edges.push_back({r.integer(edges[i], "pred", at), r.integer(edges[i], "succ", at),
                       r.string(edges[i], "reason", at), r.string(edges[i], "why", at)});
  }
}

void read_comm_ops(TimelineDispatch& d) {
  const Record r = load(d.dir / kCommOpsFile);
  const int64_t off = d.clock_offset_ns;
  d.comm_ops_dropped = r.optional_integer(r.json, "dropped").value_or(0);
  const Json& ops = r.array(r.json, "ops");
  for (size_t i = 0; i < ops.size(); ++i) {
    const Json& o = ops[i];
    const std::string at = "ops[" + std::to_string(i) + "].";
    TimelineCommOp op;
    op.kind = r.string(o, "kind", at);
    if (o.contains("window")) {
      op.window = r.string(o, "window", at);
      op.window_id = r.integer(o, "window_id", at);
      op.cell = r.integer(o, "cell", at);
      op.offset = r.integer(o, "offset", at);
    }
    op.peer = r.optional_integer(o, "peer", at).value_or(-1);
    op.bytes = r.optional_integer(o, "bytes", at).value_or(0);
    op.value = r.optional_integer(o, "value", at).value_or(0);
    if (o.contains("op")) op.mode = r.string(o, "op", at);
    if (o.contains("cmp")) op.mode = r.string(o, "cmp", at);
    op.task_id = r.integer(o, "task_id", at);
    op.core_id = r.integer(o, "core_id", at);
    op.start_ns = r.integer(o, "start_ns", at) - off;
    op.end_ns = r.integer(o, "end_ns", at) - off;
    if (o.contains("ok")) {
      if (!o["ok"].is_boolean()) r.fail(at + "ok", "is not true or false");
      op.ok = o["ok"].get<bool>();
    }
    d.comm_ops.push_back(std::move(op));
  }
}

// One line of pmu.csv: RFC 4180 fields (only the kernel name may be quoted).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

void read_pmu(TimelineDispatch& d) {
  const fs::path file = d.dir / kPmuFile;
  std::istringstream in(read_file(file));
  std::string line;
  std::vector<std::string> columns;
  std::map<int64_t, TimelineTask*> by_id;
  for (TimelineTask& t : d.tasks) by_id[t.task_id] = &t;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields = csv_fields(line);
    if (columns.empty()) {
      columns = fields;
      if (columns.size() < 5 || columns[0] != "task_id")
        throw ArtifactError(file.string(), "line " + std::to_string(line_no),
                            "the header row does not start with task_id", kRemedy);
      d.pmu_events.assign(columns.begin() + 5, columns.end());
      continue;
    }
    if (fields.size() != columns.size())
      throw ArtifactError(file.string(), "line " + std::to_string(line_no),
                          "has " + std::to_string(fields.size()) + " fields, the header " +
                              std::to_string(columns.size()),
                          kRemedy);
    int64_t id = 0;
    try {
      id = std::stoll(fields[0]);
    } catch (const std::exception&) {
      throw ArtifactError(file.string(), "line " + std::to_string(line_no),
                          "task_id '" + fields[0] + "' is not a number", kRemedy);
    }
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;  // no swimlane record to place it on
    for (size_t c = 5; c < fields.size(); ++c)
      if (!fields[c].empty()) it->second->pmu[columns[c]] = std::stoll(fields[c]);
  }
}

TimelineDispatch read_l3_dispatch(const fs::path& dir, int rank, int64_t index) {
  TimelineDispatch d;
  d.rank = rank;
  d.index = index;
  d.dir = dir;
  const Record meta = load(dir / kDispatchFile);
  d.program = meta.string(meta.json, "program");
  d.host = meta.string(meta.json, "host");
  d.clock_offset_ns = meta.optional_integer(meta.json, "clock_offset_ns").value_or(0);
  d.start_unix_ns = meta.optional_integer(meta.json, "start_unix_ns");
  d.end_unix_ns = meta.optional_integer(meta.json, "end_unix_ns");
  if (meta.json.contains("ms") && meta.json["ms"].is_number()) d.wall_ms = meta.json["ms"].get<double>();
  if (meta.json.contains("timings") && meta.json["timings"].is_object())
    d.timings = meta.json["timings"];
  return d;
}

void read_dfx_files(TimelineDispatch& d) {
  if (fs::exists(d.dir / kRecordsFile)) read_swimlane(d);
  if (fs::exists(d.dir / kDepsFile)) read_deps(d);
  if (d.level > 0 && fs::exists(d.dir / kPmuFile)) read_pmu(d);
  if (fs::exists(d.dir / kCommOpsFile)) read_comm_ops(d);
}

double us_since(int64_t ns, int64_t origin) { return static_cast<double>(ns - origin) / 1000.0; }

}  // namespace

int64_t TimelineDispatch::kernel_ns() const {
  int64_t sum = 0;
  for (const TimelineTask& t : tasks)
    if (t.core_id >= 0) sum += std::max<int64_t>(t.end_ns - t.start_ns, 0);
  return sum;
}

std::string TimelineCommOp::label() const {
  const std::string where = window.empty() ? "" : " '" + window + "'[" + std::to_string(cell) + "]";
  if (kind == "wait") return "wait" + where + " " + mode + " " + std::to_string(value);
  if (kind == "notify")
    return "notify" + where + " of rank " + std::to_string(peer) + " " + mode + " " +
           std::to_string(value);
  if (kind == "barrier") return "barrier";
  const bool reads = kind == "remote_load" || kind == "get";
  return kind + (window.empty() ? "" : " '" + window + "'") + (reads ? " from rank " : " to rank ") +
         std::to_string(peer);
}

std::map<CommOpRef, CommOpRef> RunTimeline::comm_releases() const {
  // Notifies by (target rank, window, offset), to find each wait's releaser.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<CommOpRef>> notifies;
  for (size_t d = 0; d < dispatches.size(); ++d)
    for (size_t i = 0; i < dispatches[d].comm_ops.size(); ++i) {
      const TimelineCommOp& op = dispatches[d].comm_ops[i];
      if (op.kind == "notify" && op.ok)
        notifies[{op.peer, op.window_id, op.offset}].emplace_back(d, i);
    }
  std::map<CommOpRef, CommOpRef> releases;
  for (size_t d = 0; d < dispatches.size(); ++d)
    for (size_t i = 0; i < dispatches[d].comm_ops.size(); ++i) {
      const TimelineCommOp& wait = dispatches[d].comm_ops[i];
      if (wait.kind != "wait" || !wait.ok) continue;
      auto it = notifies.find({dispatches[d].rank, wait.window_id, wait.offset});
      if (it == notifies.end()) continue;
      std::optional<CommOpRef> best;
      for (const CommOpRef& ref : it->second) {
        const TimelineCommOp& n = comm_op(ref);
        if (n.window != wait.window || n.start_ns > wait.end_ns) continue;
        if (!best || n.start_ns > comm_op(*best).start_ns) best = ref;
      }
      if (best) releases.emplace(CommOpRef{d, i}, *best);
    }
  return releases;
}

int64_t TimelineDispatch::wait_ns() const {
  int64_t sum = 0;
  for (const TimelineCommOp& op : comm_ops)
    if (op.is_wait()) sum += std::max<int64_t>(op.end_ns - op.start_ns, 0);
  return sum;
}

int RunTimeline::world() const {
  int w = 0;
  for (const TimelineDispatch& d : dispatches) w = std::max(w, d.rank + 1);
  return w;
}

bool RunTimeline::has_swimlane() const {
  return std::any_of(dispatches.begin(), dispatches.end(),
                     [](const TimelineDispatch& d) { return d.level > 0; });
}

int64_t RunTimeline::origin_ns() const {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const TimelineDispatch& d : dispatches) {
    if (d.level == 0) continue;
    origin = std::min(origin, d.begin_ns);
    for (const TimelineTask& t : d.tasks)
      if (t.submit_begin_ns) origin = std::min(origin, *t.submit_begin_ns);
  }
  return origin == std::numeric_limits<int64_t>::max() ? 0 : origin;
}

std::string local_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

RunTimeline read_run_timeline(const fs::path& dfx_root, const std::string& l2_host) {
  RunTimeline run;
  run.dfx_root = dfx_root;
  std::error_code ec;
  if (!fs::is_directory(dfx_root, ec))
    throw UsageError(dfx_root.string() +
                     " is not a directory; pass a build's dfx_outputs/ (or the build directory) "
                     "after a run with --swimlane");
  static const std::regex rank_dir("rank([0-9]+)");
  static const std::regex dispatch_dir("d([0-9]+)");
  for (const auto& rank : fs::directory_iterator(dfx_root)) {
    std::smatch m;
    const std::string rank_name = rank.path().filename().string();
    if (!rank.is_directory() || !std::regex_match(rank_name, m, rank_dir)) continue;
    const int r = std::stoi(m[1]);
    for (const auto& dispatch : fs::directory_iterator(rank.path())) {
      std::smatch dm;
      const std::string name = dispatch.path().filename().string();
      if (!dispatch.is_directory() || !std::regex_match(name, dm, dispatch_dir)) continue;
      if (!fs::exists(dispatch.path() / kDispatchFile)) continue;
      run.dispatches.push_back(read_l3_dispatch(dispatch.path(), r, std::stoll(dm[1])));
    }
  }
  if (run.dispatches.empty() && fs::exists(dfx_root / kRecordsFile)) {
    // An L2 run: one dispatch, its files in dfx_outputs/ itself.
    TimelineDispatch d;
    d.dir = dfx_root;
    d.host = l2_host.empty() ? local_host_name() : l2_host;
    const Record records = load(dfx_root / kRecordsFile);
    d.rank = static_cast<int>(records.integer(records.json, "rank"));
    run.dispatches.push_back(std::move(d));
  }
  if (run.dispatches.empty())
    throw UsageError(dfx_root.string() +
                     " holds no dispatch records (no rank<r>/d<k>/dispatch_program.json, no " +
                     kRecordsFile + "); run the build with --swimlane first");
  for (TimelineDispatch& d : run.dispatches) read_dfx_files(d);
  std::sort(run.dispatches.begin(), run.dispatches.end(),
            [](const TimelineDispatch& a, const TimelineDispatch& b) {
              return std::tie(a.rank, a.index) < std::tie(b.rank, b.index);
            });
  return run;
}

Json timeline_json(const RunTimeline& run) {
  if (!run.has_swimlane())
    throw UsageError(run.dfx_root.string() + " has no " + kRecordsFile +
                     ": the timeline is drawn from the swimlane records; run the build with "
                     "--swimlane");
  const int64_t origin = run.origin_ns();
  Json events = Json::array();
  auto meta = [&](const char* name, int pid, std::optional<int64_t> tid, Json args) {
    Json e = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
    if (tid) e["tid"] = *tid;
    events.push_back(std::move(e));
  };
  auto span = [&](const std::string& name, const char* cat, int pid, int64_t tid, int64_t start,
                  int64_t end, Json args) {
    events.push_back({{"name", name},
                      {"cat", cat},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", us_since(start, origin)},
                      {"dur", static_cast<double>(std::max<int64_t>(end - start, 0)) / 1000.0},
                      {"args", std::move(args)}});
  };

  // Process and thread names: one process per rank, its threads the union over dispatches.
  std::map<int, std::string> hosts;
  std::map<int, std::map<int64_t, std::string>> threads;
  std::map<int, bool> orchestrator;
  for (const TimelineDispatch& d : run.dispatches) {
    if (d.level == 0) continue;
    hosts.emplace(d.rank, d.host);
    for (const auto& [id, type] : d.cores) threads[d.rank][id] = type + " core " + std::to_string(id);
    if (d.level >= 4) orchestrator[d.rank] = true;
  }
  for (const auto& [rank, host] : hosts) {
    meta("process_name", rank, std::nullopt, {{"name", "rank " + std::to_string(rank) + " (" + host + ")"}});
    meta("process_sort_index", rank, std::nullopt, {{"sort_index", rank}});
    meta("thread_name", rank, kDispatchTid, {{"name", "dispatches"}});
    meta("thread_sort_index", rank, kDispatchTid, {{"sort_index", -2}});
    if (orchestrator[rank]) {
      meta("thread_name", rank, kOrchestratorTid, {{"name", "orchestrator"}});
      meta("thread_sort_index", rank, kOrchestratorTid, {{"sort_index", -1}});
    }
    for (const auto& [id, name] : threads[rank]) {
      meta("thread_name", rank, id, {{"name", name}});
      meta("thread_sort_index", rank, id, {{"sort_index", id}});
    }
  }

  int64_t flow_id = 0;
  for (const TimelineDispatch& d : run.dispatches) {
    if (d.level == 0) continue;
    Json args = {{"rank", d.rank},     {"dispatch", d.index},     {"program", d.program},
                 {"host", d.host},     {"num_tasks", d.num_tasks}, {"level", d.level},
                 {"kernel_ns", d.kernel_ns()}, {"timings", d.timings},
                 {"clock_offset_ns", d.clock_offset_ns}};
    if (d.wall_ms) args["agent_ms"] = *d.wall_ms;
    span(d.label(), "dispatch", d.rank, kDispatchTid, d.begin_ns, d.end_ns, std::move(args));

    std::map<int64_t, const TimelineTask*> by_id;
    for (const TimelineTask& t : d.tasks) {
      if (t.core_id < 0) continue;
      by_id[t.task_id] = &t;
      Json targs = {{"task_id", t.task_id}, {"func_id", t.func_id}, {"scope_id", t.scope_id},
                    {"dispatch", d.label()}};
      if (t.ready_ns && t.dispatch_ns) targs["queued_ns"] = *t.dispatch_ns - *t.ready_ns;
      if (t.finish_ns) targs["release_ns"] = *t.finish_ns - t.end_ns;
      for (const auto& [event, value] : t.pmu) targs[event] = value;
      span(t.kernel, "task", d.rank, t.core_id, t.start_ns, t.end_ns, std::move(targs));
      if (t.submit_begin_ns && t.submit_end_ns && d.level >= 4)
        span("submit " + std::to_string(t.task_id), "submit", d.rank, kOrchestratorTid,
             *t.submit_begin_ns, *t.submit_end_ns, {{"task_id", t.task_id}});
      // PMU: one counter track per event and core, the task's count while it runs.
      for (const auto& [event, value] : t.pmu) {
        const std::string name = event + " (core " + std::to_string(t.core_id) + ")";
        events.push_back({{"name", name}, {"cat", "pmu"}, {"ph", "C"}, {"pid", d.rank},
                          {"ts", us_since(t.start_ns, origin)}, {"args", {{event, value}}}});
        events.push_back({{"name", name}, {"cat", "pmu"}, {"ph", "C"}, {"pid", d.rank},
                          {"ts", us_since(t.end_ns, origin)}, {"args", {{event, 0}}}});
      }
    }
    for (const TimelinePhase& p : d.phases) {
      if (p.phase == "execute") continue;  // the task spans themselves
      span(p.phase, "phase", d.rank, p.core_id, p.start_ns, p.end_ns, Json::object());
    }
    // Comm calls, on the core that made them (inside their task's span).
    for (const TimelineCommOp& op : d.comm_ops) {
      Json cargs = {{"kind", op.kind}, {"task_id", op.task_id}, {"dispatch", d.label()},
                    {"ok", op.ok}};
      if (!op.window.empty()) {
        cargs["window"] = op.window;
        cargs["cell"] = op.cell;
        cargs["offset"] = op.offset;
      }
      if (op.peer >= 0) cargs["peer"] = op.peer;
      if (op.bytes) cargs["bytes"] = op.bytes;
      if (op.kind == "wait" || op.kind == "notify") {
        cargs["value"] = op.value;
        cargs[op.kind == "wait" ? "cmp" : "op"] = op.mode;
      }
      if (op.is_wait()) cargs["blocked_ns"] = op.end_ns - op.start_ns;
      span(op.label(), op.is_wait() ? "wait" : "comm", d.rank,
           op.core_id >= 0 ? op.core_id : kDispatchTid, op.start_ns, op.end_ns, std::move(cargs));
    }
    // Dependency arrows, bound to the middle of each slice so both ends attach.
    for (const TimelineEdge& e : d.edges) {
      auto pred = by_id.find(e.pred);
      auto succ = by_id.find(e.succ);
      if (pred == by_id.end() || succ == by_id.end()) continue;
      const TimelineTask& p = *pred->second;
      const TimelineTask& s = *succ->second;
      const int64_t id = ++flow_id;
      const std::string name = e.reason;
      events.push_back({{"name", name}, {"cat", "dep"}, {"ph", "s"}, {"id", id}, {"pid", d.rank},
                        {"tid", p.core_id}, {"ts", us_since((p.start_ns + p.end_ns) / 2, origin)},
                        {"args", {{"why", e.why}}}});
      events.push_back({{"name", name}, {"cat", "dep"}, {"ph", "f"}, {"bp", "e"}, {"id", id},
                        {"pid", d.rank}, {"tid", s.core_id},
                        {"ts", us_since((s.start_ns + s.end_ns) / 2, origin)}});
    }
  }

  // Each dispatch's comm calls by (task, peer), in the order they started: the
  // puts and stores a notify published are the ones of its task to the same
  // peer since that task's previous notify there.
  std::map<size_t, std::map<std::pair<int64_t, int64_t>, std::vector<size_t>>> by_task_peer;
  auto published_by = [&](const CommOpRef& notify_ref) {
    const std::vector<TimelineCommOp>& ops = run.dispatches[notify_ref.first].comm_ops;
    auto [cached, fresh] = by_task_peer.try_emplace(notify_ref.first);
    if (fresh) {
      for (size_t i = 0; i < ops.size(); ++i)
        if (ops[i].ok && ops[i].peer >= 0) cached->second[{ops[i].task_id, ops[i].peer}].push_back(i);
      for (auto& [key, list] : cached->second)
        std::stable_sort(list.begin(), list.end(),
                         [&](size_t a, size_t b) { return ops[a].start_ns < ops[b].start_ns; });
    }
    const TimelineCommOp& n = ops[notify_ref.second];
    std::vector<size_t> data;
    const std::vector<size_t>& list = cached->second[{n.task_id, n.peer}];
    auto at = std::find(list.begin(), list.end(), notify_ref.second);
    while (at != list.begin()) {
      const TimelineCommOp& op = ops[*--at];
      if (op.kind == "notify") break;
      if (op.kind == "put" || op.kind == "remote_store" || op.kind == "remote_add") data.push_back(*at);
    }
    return data;
  };

  // notify -> the wait on the peer it released: the arrow leaves the middle of
  // the notify and ends where the wait returned (inside its slice); so does an
  // arrow from each put / remote_store the notify published to that peer.
  for (const auto& [wait_ref, notify_ref] : run.comm_releases()) {
    const TimelineDispatch& nd = run.dispatches[notify_ref.first];
    const TimelineDispatch& wd = run.dispatches[wait_ref.first];
    const TimelineCommOp& n = run.comm_op(notify_ref);
    const TimelineCommOp& w = run.comm_op(wait_ref);
    const int64_t id = ++flow_id;
    const int64_t wait_ts = w.end_ns - w.start_ns >= 2 ? w.end_ns - 1 : w.start_ns;
    events.push_back({{"name", "notify -> wait"}, {"cat", "comm"}, {"ph", "s"}, {"id", id},
                      {"pid", nd.rank}, {"tid", n.core_id >= 0 ? n.core_id : kDispatchTid},
                      {"ts", us_since((n.start_ns + n.end_ns) / 2, origin)},
                      {"args", {{"window", n.window}, {"cell", n.cell}, {"to_rank", wd.rank}}}});
    events.push_back({{"name", "notify -> wait"}, {"cat", "comm"}, {"ph", "f"}, {"bp", "e"},
                      {"id", id}, {"pid", wd.rank},
                      {"tid", w.core_id >= 0 ? w.core_id : kDispatchTid},
                      {"ts", us_since(wait_ts, origin)}});
    for (size_t data : published_by(notify_ref)) {
      const TimelineCommOp& op = nd.comm_ops[data];
      const int64_t data_id = ++flow_id;
      const std::string name = op.kind + " -> wait";
      events.push_back({{"name", name}, {"cat", "comm_data"}, {"ph", "s"}, {"id", data_id},
                        {"pid", nd.rank}, {"tid", op.core_id >= 0 ? op.core_id : kDispatchTid},
                        {"ts", us_since((op.start_ns + op.end_ns) / 2, origin)},
                        {"args", {{"window", op.window}, {"bytes", op.bytes}, {"to_rank", wd.rank}}}});
      events.push_back({{"name", name}, {"cat", "comm_data"}, {"ph", "f"}, {"bp", "e"},
                        {"id", data_id}, {"pid", wd.rank},
                        {"tid", w.core_id >= 0 ? w.core_id : kDispatchTid},
                        {"ts", us_since(wait_ts, origin)}});
    }
  }

  Json j;
  j["displayTimeUnit"] = "ns";
  j["traceEvents"] = std::move(events);
  j["otherData"] = {{"schema", 1},
                    {"clock", "coordinator CLOCK_MONOTONIC"},
                    {"origin_ns", origin},
                    {"world", run.world()},
                    {"dispatches", run.dispatches.size()}};
  return j;
}

fs::path write_timeline(const fs::path& dfx_root, const std::string& l2_host) {
  const Json j = timeline_json(read_run_timeline(dfx_root, l2_host));
  const fs::path file = dfx_root / "timeline.json";
  write_file_atomic(file, j.dump() + "\n");
  return file;
}

void remove_timeline(const fs::path& dfx_root) {
  std::error_code ec;
  fs::remove(dfx_root / "timeline.json", ec);
}

void write_run_timeline(const fs::path& dfx_root, std::ostream& out) {
  try {
    out << "timeline: " << write_timeline(dfx_root).string() << "\n";
  } catch (const std::exception& e) {
    log::warn("could not write the run's timeline: {}", e.what());
  }
}

}  // namespace pypto::coord
