// The merged timeline of a run (docs/dfx.md "The run's timeline"): every
// rank's and dispatch's DFX records under dfx_outputs/ read into one model on
// the coordinator's clock, and written as dfx_outputs/timeline.json in the
// Chrome trace-event format (Perfetto, chrome://tracing). The run report
// (run_report.h) draws the same model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/fs_util.h"
#include "common/json_reader.h"

namespace pypto::coord {

namespace fs = std::filesystem;

// One task of a dispatch, times on the coordinator's CLOCK_MONOTONIC (ns).
struct TimelineTask {
  int64_t task_id = 0;
  int64_t func_id = 0;
  std::string kernel;
  std::string core_type;
  int64_t core_id = -1;
  int64_t scope_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::optional<int64_t> ready_ns, dispatch_ns, finish_ns;    // level >= 2
  std::optional<int64_t> submit_begin_ns, submit_end_ns;      // level 4
  std::map<std::string, int64_t> pmu;                         // --pmu: event -> count
};

struct TimelinePhase {
  int64_t core_id = 0;
  std::string core_type;
  std::string phase;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct TimelineEdge {
  int64_t pred = 0;
  int64_t succ = 0;
  std::string reason;
  std::string why;
};

// One communication call of a kernel (comm_ops.json, rank_agent/comm_log.h),
// times on the coordinator's clock.
struct TimelineCommOp {
  std::string kind;    // remote_load, remote_store, remote_add, put, get, notify, wait, barrier
  std::string window;  // empty for a barrier
  int64_t window_id = -1;
  int64_t peer = -1;  // the rank whose copy it reads or writes; -1: its own / all
  int64_t cell = 0;   // element index in the window
  int64_t offset = 0;
  int64_t bytes = 0;
  int64_t value = 0;  // notify: the value; wait: the expected value
  std::string mode;   // notify: set / add; wait: eq ne gt ge lt le
  int64_t task_id = -1;
  int64_t core_id = -1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool ok = true;

  bool is_wait() const { return kind == "wait" || kind == "barrier"; }
  // "wait 'signal'[3] ge 1", "notify 'signal'[0] of rank 2 add 1", "put 'data' to rank 1".
  std::string label() const;
};

// One dispatch: dfx_outputs/rank<r>/d<k>/ (L3) or dfx_outputs/ itself (L2).
struct TimelineDispatch {
  int rank = 0;
  int64_t index = 0;  // k
  std::string program;
  std::string host;
  fs::path dir;
  int64_t clock_offset_ns = 0;  // the host's clock minus the coordinator's
  // From dispatch_program.json (L3): the agent's whole dispatch, CLOCK_REALTIME.
  std::optional<int64_t> start_unix_ns, end_unix_ns;
  std::optional<double> wall_ms;
  Json timings = Json::object();  // "assemble_ms", "run_ms", ...
  // From chip_swimlane_records.json, when --swimlane was on.
  int level = 0;  // 0: no swimlane records
  int64_t begin_ns = 0, end_ns = 0;  // the chip runtime's run, coordinator clock
  int64_t num_tasks = 0;
  std::vector<std::pair<int64_t, std::string>> cores;  // id, type
  std::vector<TimelineTask> tasks;
  std::vector<TimelinePhase> phases;
  std::vector<TimelineEdge> edges;        // deps.json (--dep-gen)
  std::vector<std::string> pmu_events;    // pmu.csv columns (--pmu)
  std::vector<TimelineCommOp> comm_ops;   // comm_ops.json (L3 --swimlane), oldest first
  int64_t comm_ops_dropped = 0;           // recorded beyond the agent's ring

  std::string label() const { return "d" + std::to_string(index) + " " + program; }
  int64_t kernel_ns() const;  // summed end - start of the tasks that ran
  int64_t wait_ns() const;    // summed time its kernels were blocked in wait or barrier
};

// One comm call of a run: its dispatch's index in RunTimeline::dispatches and
// its index in that dispatch's comm_ops.
using CommOpRef = std::pair<size_t, size_t>;

struct RunTimeline {
  fs::path dfx_root;
  std::vector<TimelineDispatch> dispatches;  // by rank, then k
  int world() const;  // highest rank + 1
  bool has_swimlane() const;
  // The earliest dispatch begin on the coordinator's clock: time 0 of timeline.json.
  int64_t origin_ns() const;
  const TimelineCommOp& comm_op(CommOpRef ref) const {
    return dispatches[ref.first].comm_ops[ref.second];
  }
  // For every wait that some rank's notify released — the latest notify of the
  // same window and cell of the waiting rank that started before the wait
  // ended — that notify, by wait.
  std::map<CommOpRef, CommOpRef> comm_releases() const;
};

// Reads `dfx_root` (a build's dfx_outputs/): the L3 layout rank<r>/d<k>/, or an
// L2 run's files in the directory itself. `host` names the host of an L2 run
// (its files do not say). Throws UsageError when the directory holds no
// dispatch, ArtifactError naming the file and field of a record it cannot read.
RunTimeline read_run_timeline(const fs::path& dfx_root, const std::string& l2_host = "");

// The trace-event JSON (object form): one process per rank ("rank <r> (<host>)"),
// a "dispatches" thread with a span per dispatch ("d<k> <program>"), a thread per
// simulated core with a span per task, the orchestrator's submits (level 4), the
// scheduler phases (level 3), flow arrows task -> dependant (deps.json), a
// counter track per PMU event and core (pmu.csv), each comm call as a slice on
// the core that made it (waits and barriers in category "wait") and an arrow
// from each notify to the wait on the peer it released (comm_ops.json). ts in microseconds since
// origin_ns(). Throws UsageError when no dispatch has swimlane records.
Json timeline_json(const RunTimeline& run);

// Reads `dfx_root` and writes <dfx_root>/timeline.json; its path.
fs::path write_timeline(const fs::path& dfx_root, const std::string& l2_host = "");

// What run / replay / exec do with --swimlane: write_timeline, then print
// "timeline: <file>"; a timeline that cannot be written is a warning, not a
// failed run (the run's own records are in place).
void write_run_timeline(const fs::path& dfx_root, std::ostream& out);

// Removes <dfx_root>/timeline.json of an earlier run, so a run without
// --swimlane (or a failed one) leaves none that is not its own.
void remove_timeline(const fs::path& dfx_root);

// This machine's host name, as the agents report theirs.
std::string local_host_name();

}  // namespace pypto::coord
