// The run's views of an L3 run at world 8 (docs/dfx.md "The run's timeline"):
// dfx_outputs/timeline.json written by `run --swimlane` and rebuilt by
// `pypto-coord timeline`, checked against the per-dispatch records. One mpirun
// launch serves every check.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <set>

#include "tests/e2e/chromium_render.h"
#include "tests/e2e/l3_util.h"
#include "tests/e2e/trace_format.h"

namespace pypto::e2e {
namespace {

using nlohmann::json;

json read_json(const fs::path& path) { return json::parse(slurp(path)); }

TEST(TimelineE2ETest, AllreduceAtWorld8HasOneProcessPerRankAndTheRecordsSpans) {
  const fs::path dir = copy_fixture("l3/allreduce_w8", "timeline_allreduce_w8");
  const std::string tag = "timeline_w8";
  CoordResult r = coord({"run", dir.string(), "--validate", "--swimlane", "--dep-gen", "--pmu", "1"},
                        l3_env(tag));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const fs::path file = dir / "dfx_outputs/timeline.json";
  EXPECT_TRUE(contains(r.out, "timeline: " + file.string())) << r.out;
  ASSERT_TRUE(fs::exists(file));
  const std::string written = slurp(file);
  const json trace = json::parse(written);  // valid JSON, or the test fails here
  ASSERT_TRUE(trace["traceEvents"].is_array());
  const std::vector<std::string> problems = trace_format_problems(trace);
  EXPECT_TRUE(problems.empty()) << problems.size() << " problem(s), the first: " << problems[0];
  const int64_t origin = trace["otherData"]["origin_ns"].get<int64_t>();

  std::map<int, std::string> processes;
  std::map<int, std::vector<json>> dispatch_spans, task_spans;
  size_t flow_starts = 0, flow_ends = 0, counters = 0;
  std::map<int, size_t> waits;            // wait slices per rank
  std::map<int64_t, int> comm_flow_from;  // flow id -> notifying rank
  std::vector<std::pair<int64_t, int>> comm_flow_to;
  for (const json& e : trace["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_EQ(processes.count(pid), 0u) << "two names for process " << pid;
      processes[pid] = e["args"]["name"].get<std::string>();
    }
    if (e["ph"] == "X" && e["cat"] == "dispatch") dispatch_spans[pid].push_back(e);
    if (e["ph"] == "X" && e["cat"] == "task") task_spans[pid].push_back(e);
    if (e["ph"] == "X" && e["cat"] == "wait") ++waits[pid];
    if (e.value("cat", "") == "comm" && e["ph"] == "s") comm_flow_from[e["id"]] = pid;
    if (e.value("cat", "") == "comm" && e["ph"] == "f") comm_flow_to.emplace_back(e["id"], pid);
    const bool dep = e.value("cat", "") == "dep";
    flow_starts += dep && e["ph"] == "s";
    flow_ends += dep && e["ph"] == "f";
    counters += e["ph"] == "C";
  }
  // The fixture's kernel waits once for each peer's notify: 7 wait slices per
  // rank, and an arrow from each of those notifies, on another rank, to its wait.
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(waits[rank], 7u) << "rank " << rank;
  ASSERT_EQ(comm_flow_to.size(), 56u);
  ASSERT_EQ(comm_flow_from.size(), 56u);
  std::map<int, std::set<int>> notified_by;
  for (const auto& [id, to] : comm_flow_to) {
    ASSERT_EQ(comm_flow_from.count(id), 1u) << "flow " << id << " has no start";
    EXPECT_NE(comm_flow_from[id], to);
    notified_by[to].insert(comm_flow_from[id]);
  }
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(notified_by[rank].size(), 7u) << "rank " << rank;
  ASSERT_EQ(processes.size(), 8u);
  EXPECT_EQ(flow_starts, flow_ends);
  EXPECT_GT(counters, 0u);  // --pmu 1: task-clock is a software counter, always there

  size_t deps_edges = 0;
  for (int rank = 0; rank < 8; ++rank) {
    const fs::path d0 = dir / "dfx_outputs" / ("rank" + std::to_string(rank)) / "d0";
    const json meta = read_json(d0 / "dispatch_program.json");
    const json records = read_json(d0 / "chip_swimlane_records.json");
    deps_edges += read_json(d0 / "deps.json")["edges"].size();
    const int64_t offset = meta["clock_offset_ns"].get<int64_t>();
    EXPECT_EQ(processes[rank], "rank " + std::to_string(rank) + " (" +
                                   meta["host"].get<std::string>() + ")");
    ASSERT_EQ(dispatch_spans[rank].size(), 1u) << "rank " << rank;
    const json& span = dispatch_spans[rank][0];
    EXPECT_EQ(span["name"], "d0 chip_orch");
    const int64_t begin = records["dispatch"]["begin_ns"].get<int64_t>() - offset;
    const int64_t end = records["dispatch"]["end_ns"].get<int64_t>() - offset;
    EXPECT_NEAR(span["ts"].get<double>(), static_cast<double>(begin - origin) / 1000.0, 1e-3);
    EXPECT_NEAR(span["dur"].get<double>(), static_cast<double>(end - begin) / 1000.0, 1e-3);

    // Every task that ran is a span on its core, named after its kernel.
    std::set<int64_t> ids;
    ASSERT_EQ(task_spans[rank].size(), records["tasks"].size()) << "rank " << rank;
    for (size_t i = 0; i < records["tasks"].size(); ++i) {
      const json& t = records["tasks"][i];
      const json& s = task_spans[rank][i];
      EXPECT_EQ(s["name"], t["kernel"]);
      EXPECT_EQ(s["tid"], t["core_id"]);
      EXPECT_EQ(s["args"]["task_id"], t["task_id"]);
      EXPECT_EQ(s["args"]["func_id"], t["func_id"]);
      EXPECT_NEAR(s["ts"].get<double>(),
                  static_cast<double>(t["start_ns"].get<int64_t>() - offset - origin) / 1000.0,
                  1e-3);
    }
  }
  EXPECT_EQ(flow_starts, deps_edges);  // every edge between tasks that ran

  // report/run.html: self-contained, a bar per task, the table's numbers from the records.
  const std::string html = slurp(dir / "report/run.html");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  size_t task_bars = 0;
  for (size_t at = html.find("<rect class=\"task\""); at != std::string::npos;
       at = html.find("<rect class=\"task\"", at + 1))
    ++task_bars;
  size_t tasks = 0;
  for (const auto& [rank, spans] : task_spans) tasks += spans.size();
  EXPECT_EQ(task_bars, tasks);
  const json report = read_json(dir / "report/run.json");
  for (int rank = 0; rank < 8; ++rank) {
    const std::string id = "<tr id=\"rank-" + std::to_string(rank) + "\">";
    const size_t at = html.find(id);
    ASSERT_NE(at, std::string::npos) << id;
    const std::string row = html.substr(at, html.find("</tr>", at) - at);
    const json& r = report["ranks"][rank];
    EXPECT_TRUE(contains(row, "<td>" + std::to_string(task_spans[rank].size()) + "</td><td>" +
                                  std::to_string(r["bytes_shipped"].get<uint64_t>()) + "</td><td>" +
                                  std::to_string(r["cache_hits"].get<uint64_t>()) + "</td><td>" +
                                  std::to_string(r["compiles"].get<uint64_t>()) + "</td>"))
        << row;
  }

  // Chromium renders it without a console message, and the screenshot is not blank:
  // far larger than the one of an empty page of the same size.
  if (fs::exists(kChromium)) {
    const Rendering page = render(dir / "report/run.html", "run_html");
    EXPECT_EQ(page.exit_code, 0) << page.log;
    EXPECT_FALSE(contains(page.log, ":CONSOLE")) << page.log;
    const fs::path empty = scratch_dir("empty_page") / "empty.html";
    spit(empty, "<!DOCTYPE html><html><body></body></html>");
    const Rendering blank = render(empty, "empty_page");
    ASSERT_GT(blank.png_bytes, 0u) << blank.log;
    EXPECT_GT(page.png_bytes, 3 * blank.png_bytes) << page.log;
  } else {
    std::cout << "[ note ] " << kChromium << " is absent: run.html was not rendered\n";
  }

  // `pypto-coord timeline` rebuilds the same file from the records.
  fs::remove(file);
  r = coord({"timeline", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "(8 rank(s), 8 dispatch(es)")) << r.out;
  EXPECT_EQ(slurp(file), written);
  EXPECT_TRUE(survivors(tag).empty()) << "processes of the run were left behind";
}

// bench --json at world 2: the per-round statistics, a breakdown per rank and
// dispatch whose slowest-rank counts add up to the rounds, and one traced round
// after the timed ones (DFX off in those) whose timeline has both ranks.
TEST(TimelineE2ETest, BenchJsonBreaksTheRoundsDownAndTracesOneExtraRound) {
  const fs::path dir = copy_fixture("l3/allreduce_w2", "bench_allreduce_w2");
  const std::string tag = "bench_w2";
  const CoordResult r = coord({"bench", dir.string(), "--rounds", "4", "--warmup", "1", "--json",
                               "--swimlane", "--log-level", "warn"},
                              l3_env(tag));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const json j = json::parse(r.out);  // stdout is the JSON alone
  EXPECT_EQ(j["rounds"], 4);
  EXPECT_EQ(j["dfx_in_rounds"], false);
  for (const char* key : {"min_ms", "median_ms", "mean_ms", "stdev_ms", "p90_ms", "max_ms"})
    EXPECT_TRUE(j[key].is_number()) << key;
  EXPECT_LE(j["min_ms"].get<double>(), j["median_ms"].get<double>());
  EXPECT_LE(j["p90_ms"].get<double>(), j["max_ms"].get<double>());
  ASSERT_EQ(j["per_rank"].size(), 2u);
  int slowest = 0;
  for (int rank = 0; rank < 2; ++rank) {
    const json& p = j["per_rank"][rank];
    EXPECT_EQ(p["rank"], rank);
    EXPECT_EQ(p["rounds"], 4);
    slowest += p["slowest_rounds"].get<int>();
    // A rank's dispatches are part of the round.
    EXPECT_LE(p["max_ms"].get<double>(), j["max_ms"].get<double>());
  }
  EXPECT_EQ(slowest, 4);
  ASSERT_EQ(j["per_dispatch"].size(), 2u);
  EXPECT_EQ(j["per_dispatch"][1]["program"], "chip_orch");
  const double share = j["slowest_rank_share_median"].get<double>();
  EXPECT_GT(share, 0.0);
  EXPECT_LE(share, 1.0);
  // The traced round's records and timeline.
  const fs::path timeline = j["traced_round"]["timeline"].get<std::string>();
  EXPECT_EQ(timeline, dir / "dfx_outputs/timeline.json");
  size_t processes = 0;
  const json trace = read_json(timeline);
  for (const json& e : trace["traceEvents"])
    processes += e["ph"] == "M" && e["name"] == "process_name";
  EXPECT_EQ(processes, 2u);
  EXPECT_TRUE(fs::exists(dir / "dfx_outputs/rank1/d0/chip_swimlane_records.json"));
  EXPECT_TRUE(survivors(tag).empty()) << "processes of the run were left behind";
}

TEST(TimelineE2ETest, TimelineOfADirectoryWithoutRecordsSaysToRunWithSwimlane) {
  const fs::path dir = copy_fixture("l3/allreduce_w2", "timeline_no_records");
  const CoordResult r = coord({"timeline", dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "--swimlane")) << r.err;
}

}  // namespace
}  // namespace pypto::e2e
