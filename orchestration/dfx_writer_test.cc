#include "orchestration/dfx_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/fs_util.h"
#include "common/json_reader.h"
#include "orchestration/chip_runtime.h"
#include "orchestration/chip_runtime_test_util.h"
#include "pypto/error.h"

namespace pypto::chip {
namespace {

namespace fs = std::filesystem;

// A record small enough to check every byte of the files it produces.
DispatchRecord synthetic_record() {
  DispatchRecord r;
  r.begin_ns = 1000;
  r.end_ns = 9000;
  r.num_tasks = 3;

  TaskRecord t0;
  t0.task_id = 0;
  t0.func_id = 0;
  t0.core_type = PYPTO_CORE_AIV;
  t0.core_id = 1;
  t0.scope_id = 1;
  t0.submit_begin_ns = 1100;
  t0.submit_end_ns = 1150;
  t0.ready_ns = 1200;
  t0.dispatch_ns = 1300;
  t0.start_ns = 1400;
  t0.end_ns = 2400;
  t0.finish_ns = 2500;
  t0.pmu = {100, 2};
  ArgDump sum;
  sum.arg_index = 2;
  sum.tag = "sum";
  sum.direction = PYPTO_OUT;
  sum.dtype = PYPTO_F32;
  sum.shape = {2};
  sum.bytes = std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // 1.0f, 2.0f
  t0.args = {sum};

  TaskRecord t1 = t0;
  t1.task_id = 1;
  t1.func_id = 1;
  t1.core_type = PYPTO_CORE_AIC;
  t1.core_id = 0;
  t1.start_ns = 2600;
  t1.end_ns = 5600;
  t1.pmu = {300, 0};
  ArgDump idx;
  idx.arg_index = 0;
  idx.direction = PYPTO_IN;
  idx.dtype = PYPTO_I32;
  idx.shape = {1};
  idx.bytes = std::string("\x07\x00\x00\x00", 4);
  t1.args = {idx};

  TaskRecord t2 = t0;
  t2.task_id = 2;
  t2.func_id = 7;  // not in the name map
  t2.core_id = 2;
  t2.scope_id = 0;
  t2.start_ns = 6000;
  t2.end_ns = 6500;
  t2.pmu = {50, 1};
  t2.args.clear();
  r.tasks = {t0, t1, t2};

  r.phases = {{1, PYPTO_CORE_AIV, "idle", 500, 1300},
              {1, PYPTO_CORE_AIV, "execute", 1400, 2400},
              {1, PYPTO_CORE_AIV, "complete", 2400, 2500}};

  ScopeRecord root;
  root.scope_id = 0;
  root.parent_id = -1;
  root.name = "prog";
  root.begin_ns = 1000;
  root.end_ns = 9000;
  root.num_tasks = 1;
  ScopeRecord outer;
  outer.scope_id = 1;
  outer.parent_id = 0;
  outer.depth = 1;
  outer.name = "outer";
  outer.begin_ns = 1050;
  outer.end_ns = 5800;
  outer.num_tasks = 2;
  outer.ring = 1;
  outer.peak_tasks_in_flight = 2;
  outer.peak_heap_bytes = 320;
  outer.peak_dep_edges = 1;
  r.scopes = {root, outer};

  r.edges = {{0, 1, 0, DepReason::kReadAfterWrite},
             {0, 2, 1, DepReason::kWriteAfterRead},
             {1, 2, 1, DepReason::kWriteAfterWrite}};
  r.tensors = {{0, "a", 0x1000}, {1, "", 0x2000}};
  r.pmu_events = {"task-clock", "page-faults"};
  r.pmu_unavailable = {"cycles: No such file or directory"};
  return r;
}

DfxContext synthetic_context() {
  DfxContext c;
  c.program = "prog";
  c.rank = 3;
  c.world = 4;
  c.names = {{0, "vadd"}, {1, "matmul"}};
  return c;
}

class DfxWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    root_ = fs::temp_directory_path() / ("pypto_dfx_writer_test_" + std::to_string(::getpid()) +
                                         "_" + std::to_string(counter++));
    fs::remove_all(root_);
    dir_ = root_ / "dfx_outputs";
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const DfxOptions& dfx, const DispatchRecord& record = synthetic_record()) {
    write_dispatch_dfx(dir_, record, dfx, synthetic_context());
  }
  Json json(const std::string& file) const { return Json::parse(read_file(dir_ / file)); }
  // Every regular file under the directory, relative.
  std::set<std::string> files() const {
    std::set<std::string> out;
    if (!fs::exists(dir_)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir_).string());
    return out;
  }

  fs::path root_;
  fs::path dir_;
};

// ---- switches and files ----

TEST_F(DfxWriterTest, EverySwitchOffWritesNothing) {
  write(DfxOptions{});
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(DfxWriterTest, EachSwitchWritesOnlyItsFiles) {
  struct Case {
    DfxOptions dfx;
    std::set<std::string> files;
  };
  DfxOptions swimlane, dump, pmu, deps, scopes;
  swimlane.enable_chip_swimlane = 1;
  dump.enable_dump_args = 2;
  pmu.enable_pmu = 1;
  deps.enable_dep_gen = true;
  scopes.enable_scope_stats = true;
  const Case cases[] = {
      {swimlane, {"chip_swimlane_records.json", "chip_swimlane_trace.json", "name_map.json"}},
      {dump, {"args_dump/args_dump.json", "args_dump/args.bin", "name_map.json"}},
      {pmu, {"pmu.csv", "name_map.json"}},
      {deps, {"deps.json", "name_map.json"}},
      {scopes, {"scope_stats/scope_stats.jsonl", "name_map.json"}},
  };
  for (const auto& c : cases) {
    fs::remove_all(dir_);
    write(c.dfx);
    EXPECT_EQ(files(), c.files);
  }
}

TEST_F(DfxWriterTest, ASwitchTurnedOffRemovesItsFileOfAnEarlierRun) {
  DfxOptions all;
  all.enable_chip_swimlane = 4;
  all.enable_dump_args = 2;
  all.enable_pmu = 1;
  all.enable_dep_gen = true;
  all.enable_scope_stats = true;
  write(all);
  EXPECT_EQ(files().size(), 8u);
  DfxOptions pmu_only;
  pmu_only.enable_pmu = 1;
  write(pmu_only);
  EXPECT_EQ(files(), (std::set<std::string>{"pmu.csv", "name_map.json"}));
  EXPECT_FALSE(fs::exists(dir_ / "args_dump"));
  EXPECT_FALSE(fs::exists(dir_ / "scope_stats"));
}

TEST_F(DfxWriterTest, UnwritableDirectoryIsAnInfraError) {
  write_file_atomic(root_ / "file", "x");
  DfxOptions dfx;
  dfx.enable_dep_gen = true;
  try {
    write_dispatch_dfx(root_ / "file" / "dfx_outputs", synthetic_record(), dfx,
                       synthetic_context());
    ADD_FAILURE() << "wrote under a regular file";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("dfx_outputs"), std::string::npos) << e.what();
  }
}

TEST_F(DfxWriterTest, NameMap) {
  DfxOptions dfx;
  dfx.enable_dep_gen = true;
  write(dfx);
  const Json j = json("name_map.json");
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["program"], "prog");
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["kernels"], Json({{"0", "vadd"}, {"1", "matmul"}}));
}

// ---- swimlane ----

TEST_F(DfxWriterTest, SwimlaneLevelOneHasStartAndEndPerCore) {
  DfxOptions dfx;
  dfx.enable_chip_swimlane = 1;
  write(dfx);
  const Json j = json("chip_swimlane_records.json");
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["clock"], "CLOCK_MONOTONIC ns");
  EXPECT_EQ(j["program"], "prog");
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["world"], 4);
  EXPECT_EQ(j["level"], 1);
  EXPECT_EQ(j["dispatch"], Json({{"begin_ns", 1000}, {"end_ns", 9000}, {"num_tasks", 3}}));
  EXPECT_EQ(j["cores"], Json::parse(R"([{"core_id":0,"core_type":"aic"},
                                        {"core_id":1,"core_type":"aiv"},
                                        {"core_id":2,"core_type":"aiv"}])"));
  ASSERT_EQ(j["tasks"].size(), 3u);
  EXPECT_EQ(j["tasks"][0], Json::parse(R"({"task_id":0,"func_id":0,"kernel":"vadd",
      "core_type":"aiv","core_id":1,"scope_id":1,"start_ns":1400,"end_ns":2400})"));
  EXPECT_EQ(j["tasks"][1]["kernel"], "matmul");
  EXPECT_EQ(j["tasks"][1]["core_type"], "aic");
  EXPECT_EQ(j["tasks"][2]["kernel"], "func7");
  EXPECT_FALSE(j.contains("phases"));
}

TEST_F(DfxWriterTest, SwimlaneLevelsAddSchedulerPhasesAndSubmitRecords) {
  for (int level = 2; level <= 4; ++level) {
    SCOPED_TRACE("level " + std::to_string(level));
    DfxOptions dfx;
    dfx.enable_chip_swimlane = level;
    write(dfx);
    const Json j = json("chip_swimlane_records.json");
    EXPECT_EQ(j["level"], level);
    const Json& t0 = j["tasks"][0];
    EXPECT_EQ(t0["ready_ns"], 1200);
    EXPECT_EQ(t0["dispatch_ns"], 1300);
    EXPECT_EQ(t0["finish_ns"], 2500);
    EXPECT_EQ(t0.contains("submit_begin_ns"), level >= 4);
    if (level >= 4) {
      EXPECT_EQ(t0["submit_begin_ns"], 1100);
      EXPECT_EQ(t0["submit_end_ns"], 1150);
    }
    EXPECT_EQ(j.contains("phases"), level >= 3);
    if (level >= 3) {
      ASSERT_EQ(j["phases"].size(), 3u);
      // The idle phase that began before the dispatch is clipped to it.
      EXPECT_EQ(j["phases"][0], Json::parse(R"({"core_id":1,"core_type":"aiv","phase":"idle",
          "start_ns":1000,"end_ns":1300})"));
      EXPECT_EQ(j["phases"][1]["phase"], "execute");
    }
  }
}

TEST_F(DfxWriterTest, ChromeTraceHasOneTrackPerCore) {
  DfxOptions dfx;
  dfx.enable_chip_swimlane = 4;
  write(dfx);
  const Json j = json("chip_swimlane_trace.json");
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["displayTimeUnit"], "ns");
  const Json& events = j["traceEvents"];
  std::map<int, std::string> thread_names;
  std::vector<Json> tasks, submits, phases;
  for (const auto& e : events) {
    EXPECT_EQ(e["pid"], 3);
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread_names[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] != "X") continue;
    if (e["cat"] == "task") tasks.push_back(e);
    if (e["cat"] == "submit") submits.push_back(e);
    if (e["cat"] == "phase") phases.push_back(e);
  }
  EXPECT_EQ(
      thread_names,
      (std::map<int, std::string>{
          {0, "aic core 0"}, {1, "aiv core 1"}, {2, "aiv core 2"}, {1 << 20, "orchestrator"}}));
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0]["name"], "vadd");
  EXPECT_EQ(tasks[0]["tid"], 1);
  EXPECT_DOUBLE_EQ(tasks[0]["ts"].get<double>(), 1.4);  // microseconds
  EXPECT_DOUBLE_EQ(tasks[0]["dur"].get<double>(), 1.0);
  EXPECT_EQ(tasks[0]["args"]["task_id"], 0);
  EXPECT_EQ(tasks[0]["args"]["queued_ns"], 100);
  EXPECT_EQ(submits.size(), 3u);
  EXPECT_EQ(submits[0]["tid"], 1 << 20);
  // "execute" is the task span itself; only idle and complete are extra.
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0]["name"], "idle");
  EXPECT_EQ(phases[1]["name"], "complete");
}

// ---- deps ----

TEST_F(DfxWriterTest, DepsListsTasksTensorsAndExplainedEdges) {
  DfxOptions dfx;
  dfx.enable_dep_gen = true;
  write(dfx);
  const Json j = json("deps.json");
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["program"], "prog");
  EXPECT_EQ(j["tasks"], Json::parse(R"([{"task_id":0,"func_id":0,"kernel":"vadd"},
                                        {"task_id":1,"func_id":1,"kernel":"matmul"},
                                        {"task_id":2,"func_id":7,"kernel":"func7"}])"));
  EXPECT_EQ(j["tensors"], Json::parse(R"([{"tensor_id":0,"name":"a","base":"0x1000"},
                                          {"tensor_id":1,"name":null,"base":"0x2000"}])"));
  ASSERT_EQ(j["edges"].size(), 3u);
  EXPECT_EQ(j["edges"][0], Json::parse(R"({"pred":0,"succ":1,"tensor":0,"reason":"RAW",
      "why":"task 1 reads a region of tensor a that task 0 wrote"})"));
  EXPECT_EQ(j["edges"][1]["reason"], "WAR");
  EXPECT_EQ(j["edges"][1]["why"], "task 2 writes a region of tensor #1 that task 0 read");
  EXPECT_EQ(j["edges"][2]["reason"], "WAW");
  EXPECT_EQ(j["edges"][2]["why"], "task 2 writes a region of tensor #1 that task 1 also wrote");
}

TEST_F(DfxWriterTest, DepsWithoutTaskRecordsListsIdsOnly) {
  DispatchRecord record = synthetic_record();
  record.tasks.clear();
  DfxOptions dfx;
  dfx.enable_dep_gen = true;
  write(dfx, record);
  const Json j = json("deps.json");
  EXPECT_EQ(j["tasks"], Json::parse(R"([{"task_id":0,"func_id":null,"kernel":null},
                                        {"task_id":1,"func_id":null,"kernel":null},
                                        {"task_id":2,"func_id":null,"kernel":null}])"));
}

// ---- pmu ----

TEST_F(DfxWriterTest, PmuCsv) {
  DfxOptions dfx;
  dfx.enable_pmu = 1;
  write(dfx);
  EXPECT_EQ(read_file(dir_ / "pmu.csv"),
            "# pypto pmu.csv schema 1\n"
            "# program: prog, rank 3 of 4\n"
            "# event set: 1\n"
            "# events: task-clock,page-faults\n"
            "# unavailable: cycles: No such file or directory\n"
            "task_id,func_id,kernel,core_type,core_id,task-clock,page-faults\n"
            "0,0,vadd,aiv,1,100,2\n"
            "1,1,matmul,aic,0,300,0\n"
            "2,7,func7,aiv,2,50,1\n");
}

TEST_F(DfxWriterTest, PmuCsvQuotesOddKernelNamesAndLeavesMissingCountersEmpty) {
  DispatchRecord record = synthetic_record();
  record.tasks.resize(1);
  record.tasks[0].pmu.clear();  // never ran
  DfxContext context = synthetic_context();
  context.names[0] = "add,\"fast\"";
  DfxOptions dfx;
  dfx.enable_pmu = 2;
  write_dispatch_dfx(dir_, record, dfx, context);
  const std::string csv = read_file(dir_ / "pmu.csv");
  EXPECT_NE(csv.find("# event set: 2\n"), std::string::npos);
  EXPECT_NE(csv.find("\n0,0,\"add,\"\"fast\"\"\",aiv,1,,\n"), std::string::npos) << csv;
}

// ---- scope stats ----

TEST_F(DfxWriterTest, ScopeStatsOneObjectPerLine) {
  DfxOptions dfx;
  dfx.enable_scope_stats = true;
  write(dfx);
  std::istringstream in(read_file(dir_ / "scope_stats/scope_stats.jsonl"));
  std::vector<Json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], Json::parse(R"({"schema":1,"scope_id":0,"parent_id":-1,"depth":0,
      "name":"prog","begin_ns":1000,"end_ns":9000,"duration_ns":8000,"num_tasks":1,"ring":0,
      "peak_tasks_in_flight":0,"peak_heap_bytes":0,"peak_dep_edges":0,"busy_ns":500})"));
  EXPECT_EQ(lines[1]["name"], "outer");
  EXPECT_EQ(lines[1]["parent_id"], 0);
  EXPECT_EQ(lines[1]["ring"], 1);
  EXPECT_EQ(lines[1]["peak_tasks_in_flight"], 2);
  EXPECT_EQ(lines[1]["peak_heap_bytes"], 320);
  EXPECT_EQ(lines[1]["peak_dep_edges"], 1);
  EXPECT_EQ(lines[1]["duration_ns"], 4750);
  EXPECT_EQ(lines[1]["busy_ns"], 1000 + 3000);  // tasks 0 and 1
}

// ---- args dump ----

TEST_F(DfxWriterTest, ArgsDumpIndexesTheBinaryFile) {
  DfxOptions dfx;
  dfx.enable_dump_args = 1;
  write(dfx);
  const Json j = json("args_dump/args_dump.json");
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["level"], 1);
  EXPECT_EQ(j["data_file"], "args.bin");
  EXPECT_EQ(j["args"], Json::parse(R"([
      {"task_id":0,"func_id":0,"kernel":"vadd","arg_index":2,"tag":"sum","direction":"Out",
       "dtype":"f32","shape":[2],"offset":0,"nbytes":8},
      {"task_id":1,"func_id":1,"kernel":"matmul","arg_index":0,"tag":"","direction":"In",
       "dtype":"i32","shape":[1],"offset":8,"nbytes":4}])"));
  const std::string bin = read_file(dir_ / "args_dump/args.bin");
  EXPECT_EQ(bin, std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x07\x00\x00\x00", 12));
}

// ---- from a real dispatch ----

TEST_F(DfxWriterTest, FilesOfARealDispatchAreConsistent) {
  using namespace ::pypto::chip::testing;
  DfxOptions dfx;
  dfx.enable_chip_swimlane = 4;
  dfx.enable_dump_args = 2;
  dfx.enable_pmu = 1;
  dfx.enable_dep_gen = true;
  dfx.enable_scope_stats = true;
  RuntimeConfig config = test_config(2);
  config.swimlane_level = dfx.enable_chip_swimlane;
  config.dump_args = dfx.enable_dump_args;
  config.pmu_event_set = dfx.enable_pmu;
  config.dep_gen = dfx.enable_dep_gen;
  config.scope_stats = dfx.enable_scope_stats;
  ChipRuntime rt(config);
  FanoutProgram p;
  const auto kernels = arith_kernels();
  const DispatchRecord record = rt.run(p.call, kernels);
  DfxContext context;
  context.program = p.call.program;
  for (const auto& k : kernels) context.names[k.func_id] = k.name;
  write_dispatch_dfx(dir_, record, dfx, context);

  const Json swim = json("chip_swimlane_records.json");
  ASSERT_EQ(swim["tasks"].size(), 4u);
  EXPECT_EQ(swim["tasks"][3]["kernel"], "matmul_ew");
  EXPECT_EQ(swim["tasks"][3]["core_type"], "aic");
  const Json deps = json("deps.json");
  EXPECT_EQ(deps["edges"].size(), 4u);
  EXPECT_EQ(deps["edges"][3]["why"], "task 3 reads a region of tensor t2 that task 2 wrote");
  const Json args = json("args_dump/args_dump.json");
  EXPECT_EQ(args["args"].size(), 10u);
  size_t total = 0;
  for (const auto& a : args["args"]) total += a["nbytes"].get<size_t>();
  EXPECT_EQ(fs::file_size(dir_ / "args_dump/args.bin"), total);
  // pmu.csv: one header row plus one row per task after the comments.
  std::istringstream csv(read_file(dir_ / "pmu.csv"));
  int rows = 0;
  for (std::string line; std::getline(csv, line);)
    if (!line.empty() && line[0] != '#') ++rows;
  EXPECT_EQ(rows, 5);
  EXPECT_EQ(json("name_map.json")["kernels"]["2"], "matmul_ew");
}

}  // namespace
}  // namespace pypto::chip
