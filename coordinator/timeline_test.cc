#include "coordinator/timeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

#include "common/fs_util.h"
#include "pypto/error.h"

namespace pypto::coord {
namespace {

// A dfx_outputs/ of a two-rank L3 run, written as the coordinator lays it out:
// rank 1 is on another host whose clock runs 5000 ns ahead of the coordinator's.
class TimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("timeline_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    for (int rank = 0; rank < 2; ++rank) write_dispatch(rank, rank == 0 ? 0 : 5000);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write_dispatch(int rank, int64_t offset) {
    const fs::path dir = root_ / ("rank" + std::to_string(rank)) / "d0";
    const int64_t base = 1'000'000 + offset + rank * 100;
    Json meta = {{"schema", 1}, {"program", "chip_orch"}, {"rank", rank},
                 {"dispatch", 0}, {"host", rank == 0 ? "node-0" : "node-1"},
                 {"clock_offset_ns", offset}, {"start_unix_ns", 7}, {"end_unix_ns", 9},
                 {"ms", 0.5}, {"timings", {{"assemble_ms", 0.1}, {"run_ms", 0.2}}}};
    write_file_atomic(dir / "dispatch_program.json", meta.dump());
    Json records = {
        {"schema", 1}, {"clock", "CLOCK_MONOTONIC ns"}, {"program", "chip_orch"}, {"rank", rank},
        {"world", 2}, {"level", 4},
        {"dispatch", {{"begin_ns", base}, {"end_ns", base + 10'000}, {"num_tasks", 2}}},
        {"cores", {{{"core_id", 0}, {"core_type", "aic"}}, {{"core_id", 1}, {"core_type", "aiv"}}}},
        {"tasks",
         {{{"task_id", 0}, {"func_id", 3}, {"kernel", "vadd"}, {"core_type", "aiv"}, {"core_id", 1},
           {"scope_id", 0}, {"start_ns", base + 1000}, {"end_ns", base + 3000},
           {"ready_ns", base + 500}, {"dispatch_ns", base + 900}, {"finish_ns", base + 3100},
           {"submit_begin_ns", base + 100}, {"submit_end_ns", base + 200}},
          {{"task_id", 1}, {"func_id", 4}, {"kernel", "matmul"}, {"core_type", "aic"},
           {"core_id", 0}, {"scope_id", 0}, {"start_ns", base + 4000}, {"end_ns", base + 9000},
           {"ready_ns", base + 3100}, {"dispatch_ns", base + 3500}, {"finish_ns", base + 9100},
           {"submit_begin_ns", base + 300}, {"submit_end_ns", base + 400}}}}};
    write_file_atomic(dir / "chip_swimlane_records.json", records.dump());
    Json deps = {{"schema", 1},
                 {"edges", Json::array({{{"pred", 0}, {"succ", 1}, {"tensor", 2}, {"reason", "RAW"},
                                         {"why", "task 1 reads a region of tensor s that task 0 "
                                                 "wrote"}}})}};
    write_file_atomic(dir / "deps.json", deps.dump());
    write_file_atomic(dir / "pmu.csv",
                      "# pypto pmu.csv schema 1\n# events: task-clock,page-faults\n"
                      "task_id,func_id,kernel,core_type,core_id,task-clock,page-faults\n"
                      "0,3,vadd,aiv,1,1900,2\n1,4,\"mat,mul\",aic,0,4900,\n");
  }

  static std::vector<Json> events(const Json& trace, const std::string& ph,
                                  const std::string& name = "") {
    std::vector<Json> found;
    for (const Json& e : trace["traceEvents"])
      if (e["ph"] == ph && (name.empty() || e["name"] == name)) found.push_back(e);
    return found;
  }
  // The flow events of phase `ph` ("s" / "f") in category `cat`.
  static std::vector<Json> flows(const Json& trace, const std::string& ph, const std::string& cat) {
    std::vector<Json> found;
    for (const Json& e : events(trace, ph))
      if (e["cat"] == cat) found.push_back(e);
    return found;
  }

  fs::path root_;
};

TEST_F(TimelineTest, OneProcessPerRankNamedWithItsHost) {
  const Json trace = timeline_json(read_run_timeline(root_));
  std::map<int, std::string> names;
  for (const Json& e : events(trace, "M", "process_name"))
    names[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
  EXPECT_EQ(names, (std::map<int, std::string>{{0, "rank 0 (node-0)"}, {1, "rank 1 (node-1)"}}));
  std::set<std::string> threads;
  for (const Json& e : events(trace, "M", "thread_name"))
    if (e["pid"] == 1) threads.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(threads, (std::set<std::string>{"dispatches", "orchestrator", "aic core 0", "aiv core 1"}));
  EXPECT_EQ(trace["otherData"]["world"], 2);
}

TEST_F(TimelineTest, SpansAreOnTheCoordinatorsClockFromTheEarliestEvent) {
  const Json trace = timeline_json(read_run_timeline(root_));
  // Time 0 is rank 0's dispatch begin, the earliest event on the coordinator's clock.
  EXPECT_EQ(trace["otherData"]["origin_ns"], 1'000'000);
  const std::vector<Json> dispatches = events(trace, "X", "d0 chip_orch");
  ASSERT_EQ(dispatches.size(), 2u);
  for (const Json& d : dispatches) {
    const int rank = d["pid"].get<int>();
    // Rank 1's records are 5000 ns ahead; the offset is taken out: only rank*100 remains.
    EXPECT_DOUBLE_EQ(d["ts"].get<double>(), rank * 0.1) << d;
    EXPECT_DOUBLE_EQ(d["dur"].get<double>(), 10.0);
    EXPECT_EQ(d["args"]["kernel_ns"], 7000);
    EXPECT_EQ(d["args"]["host"], rank == 0 ? "node-0" : "node-1");
  }
  const std::vector<Json> matmul = events(trace, "X", "matmul");
  ASSERT_EQ(matmul.size(), 2u);
  EXPECT_EQ(matmul[1]["tid"], 0);
  EXPECT_DOUBLE_EQ(matmul[1]["ts"].get<double>(), 4.1);
  EXPECT_DOUBLE_EQ(matmul[1]["dur"].get<double>(), 5.0);
  EXPECT_EQ(matmul[1]["args"]["task_id"], 1);
  EXPECT_EQ(matmul[1]["args"]["func_id"], 4);
  EXPECT_EQ(matmul[1]["args"]["queued_ns"], 400);
  EXPECT_EQ(matmul[1]["args"]["task-clock"], 4900);
  EXPECT_EQ(events(trace, "X", "submit 0").size(), 2u);
}

TEST_F(TimelineTest, DependenciesAreFlowsFromTaskToDependant) {
  const Json trace = timeline_json(read_run_timeline(root_));
  const std::vector<Json> starts = events(trace, "s");
  const std::vector<Json> ends = events(trace, "f");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(starts[0]["id"], ends[0]["id"]);
  EXPECT_NE(starts[0]["id"], starts[1]["id"]);
  EXPECT_EQ(starts[0]["tid"], 1);  // vadd's core
  EXPECT_EQ(ends[0]["tid"], 0);    // matmul's core
  EXPECT_DOUBLE_EQ(starts[0]["ts"].get<double>(), 2.0);  // inside vadd [1, 3]
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>(), 6.5);    // inside matmul [4, 9]
  EXPECT_EQ(ends[0]["bp"], "e");
}

TEST_F(TimelineTest, WaitsAreSlicesAndEachNotifyPointsAtTheWaitItReleased) {
  // Rank 1 (clock 5000 ns ahead) notifies cell 1 of rank 0's 'signal' twice and
  // cell 2 once; rank 0 waits on cell 1 inside its vadd task.
  const int64_t base1 = 1'005'100;
  auto notify = [](int64_t cell, int64_t start) {
    return Json{{"kind", "notify"}, {"window", "signal"}, {"window_id", 1}, {"offset", cell * 4},
                {"cell", cell}, {"peer", 0}, {"value", 1}, {"op", "add"}, {"task_id", 0},
                {"core_id", 1}, {"start_ns", start}, {"end_ns", start + 100}, {"ok", true}};
  };
  // The put before the second notify is what that notify published.
  auto put = [](int64_t start) {
    return Json{{"kind", "put"}, {"window", "data"}, {"window_id", 0}, {"offset", 0},
                {"cell", 0}, {"peer", 0}, {"bytes", 64}, {"task_id", 0},
                {"core_id", 1}, {"start_ns", start}, {"end_ns", start + 50}, {"ok", true}};
  };
  write_file_atomic(root_ / "rank1/d0/comm_ops.json",
                    Json{{"schema", 1}, {"rank", 1}, {"recorded", 4}, {"dropped", 0},
                         {"ops", {notify(1, base1 + 1050), put(base1 + 1100), notify(1, base1 + 1200),
                                  notify(2, base1 + 1250)}}}
                        .dump());
  write_file_atomic(
      root_ / "rank0/d0/comm_ops.json",
      Json{{"schema", 1}, {"rank", 0}, {"recorded", 2}, {"dropped", 0},
           {"ops",
            {{{"kind", "wait"}, {"window", "signal"}, {"window_id", 1}, {"offset", 4}, {"cell", 1},
              {"value", 2}, {"cmp", "ge"}, {"task_id", 0}, {"core_id", 1},
              {"start_ns", 1'001'100}, {"end_ns", 1'002'500}, {"ok", true}},
             {{"kind", "remote_load"}, {"window", "data"}, {"window_id", 0}, {"offset", 0},
              {"cell", 0}, {"peer", 1}, {"bytes", 1024}, {"task_id", 0}, {"core_id", 1},
              {"start_ns", 1'002'600}, {"end_ns", 1'002'700}, {"ok", true}}}}}
          .dump());
  const RunTimeline run = read_run_timeline(root_);
  ASSERT_EQ(run.comm_releases().size(), 1u);
  const Json trace = timeline_json(run);

  const std::vector<Json> waits = events(trace, "X", "wait 'signal'[1] ge 2");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0]["cat"], "wait");
  EXPECT_EQ(waits[0]["pid"], 0);
  EXPECT_EQ(waits[0]["tid"], 1);  // on the core of the task that waited
  EXPECT_DOUBLE_EQ(waits[0]["ts"].get<double>(), 1.1);
  EXPECT_EQ(waits[0]["args"]["blocked_ns"], 1400);
  const std::vector<Json> loads = events(trace, "X", "remote_load 'data' from rank 1");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0]["cat"], "comm");
  EXPECT_EQ(loads[0]["args"]["bytes"], 1024);
  EXPECT_EQ(events(trace, "X", "notify 'signal'[1] of rank 0 add 1").size(), 2u);

  const std::vector<Json> starts = flows(trace, "s", "comm"), ends = flows(trace, "f", "comm");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(starts[0]["id"], ends[0]["id"]);
  // From the later notify to cell 1 (coordinator clock 1'001'300..1'001'400) ...
  EXPECT_EQ(starts[0]["pid"], 1);
  EXPECT_DOUBLE_EQ(starts[0]["ts"].get<double>(), 1.35);
  EXPECT_EQ(starts[0]["args"]["to_rank"], 0);
  // ... to where the wait returned, inside its slice.
  EXPECT_EQ(ends[0]["pid"], 0);
  EXPECT_EQ(ends[0]["tid"], 1);
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>(), 2.499);
  EXPECT_EQ(ends[0]["bp"], "e");

  // The put that notify published: an arrow of its own to the same wait.
  const std::vector<Json> data_starts = flows(trace, "s", "comm_data"),
                          data_ends = flows(trace, "f", "comm_data");
  ASSERT_EQ(data_starts.size(), 1u);
  ASSERT_EQ(data_ends.size(), 1u);
  EXPECT_EQ(data_starts[0]["name"], "put -> wait");
  EXPECT_EQ(data_starts[0]["id"], data_ends[0]["id"]);
  EXPECT_EQ(data_starts[0]["pid"], 1);
  EXPECT_NEAR(data_starts[0]["ts"].get<double>(), 1.225, 1e-9);  // the put's middle
  EXPECT_EQ(data_starts[0]["args"]["bytes"], 64);
  EXPECT_EQ(data_ends[0]["pid"], 0);
  EXPECT_DOUBLE_EQ(data_ends[0]["ts"].get<double>(), 2.499);
}

TEST_F(TimelineTest, PmuCountsAreCounterTracksPerCore) {
  const Json trace = timeline_json(read_run_timeline(root_));
  const std::vector<Json> faults = events(trace, "C", "page-faults (core 1)");
  ASSERT_EQ(faults.size(), 4u);  // rising and falling edge, two ranks
  EXPECT_EQ(faults[0]["args"]["page-faults"], 2);
  EXPECT_DOUBLE_EQ(faults[0]["ts"].get<double>(), 1.0);
  EXPECT_EQ(faults[1]["args"]["page-faults"], 0);
  // The empty cell of matmul (a refused counter) makes no track.
  EXPECT_TRUE(events(trace, "C", "page-faults (core 0)").empty());
  EXPECT_EQ(read_run_timeline(root_).dispatches[0].pmu_events,
            (std::vector<std::string>{"task-clock", "page-faults"}));
}

TEST_F(TimelineTest, WriteTimelineWritesValidJsonBesideTheRecords) {
  const fs::path file = write_timeline(root_);
  EXPECT_EQ(file, root_ / "timeline.json");
  EXPECT_NO_THROW(Json::parse(read_file(file)));
}

TEST_F(TimelineTest, AnL2RunsFilesInTheRootAreOneDispatch) {
  const fs::path l2 = root_ / "l2";
  fs::create_directories(l2);
  fs::copy_file(root_ / "rank1/d0/chip_swimlane_records.json", l2 / "chip_swimlane_records.json");
  const RunTimeline run = read_run_timeline(l2, "here");
  ASSERT_EQ(run.dispatches.size(), 1u);
  EXPECT_EQ(run.dispatches[0].rank, 1);
  EXPECT_EQ(run.dispatches[0].program, "chip_orch");
  EXPECT_EQ(run.dispatches[0].tasks.size(), 2u);
  const Json trace = timeline_json(run);
  EXPECT_EQ(events(trace, "M", "process_name")[0]["args"]["name"], "rank 1 (here)");
}

TEST_F(TimelineTest, NoRecordsIsAUsageErrorSayingToRunWithSwimlane) {
  const fs::path empty = root_ / "empty";
  fs::create_directories(empty);
  try {
    read_run_timeline(empty);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--swimlane"), std::string::npos) << e.what();
  }
  fs::remove(root_ / "rank0/d0/chip_swimlane_records.json");
  fs::remove(root_ / "rank1/d0/chip_swimlane_records.json");
  EXPECT_THROW(timeline_json(read_run_timeline(root_)), UsageError);
}

TEST_F(TimelineTest, ABrokenRecordNamesTheFileAndField) {
  write_file_atomic(root_ / "rank1/d0/chip_swimlane_records.json",
                    R"({"schema": 1, "level": 1, "program": "p", "dispatch": {"begin_ns": 1}})");
  try {
    read_run_timeline(root_);
    FAIL() << "no error";
  } catch (const ArtifactError& e) {
    EXPECT_NE(e.file().find("rank1/d0/chip_swimlane_records.json"), std::string::npos);
    EXPECT_EQ(e.field(), "dispatch.end_ns");
  }
}

}  // namespace
}  // namespace pypto::coord
