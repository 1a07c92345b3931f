#include "orchestration/chip_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

#include "orchestration/chip_runtime_test_util.h"
#include "pypto/error.h"

namespace pypto::chip {
namespace {

using namespace ::pypto::chip::testing;

// Runs `fn` and returns the KernelRuntimeError's message ("" if none was thrown).
template <typename Fn>
std::string runtime_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const KernelRuntimeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a KernelRuntimeError";
  return "";
}

// ---- the fan-out/fan-in program ----

TEST(ChipRuntimeTest, FanOutFanInComputesTheProduct) {
  ChipRuntime rt(test_config(2));
  FanoutProgram p;
  const DispatchRecord record = rt.run(p.call, arith_kernels());
  for (float v : p.f()) EXPECT_EQ(v, 42.0f);
  EXPECT_EQ(p.buffers[2][0], 5.0f);
  EXPECT_EQ(record.num_tasks, 4);
}

TEST(ChipRuntimeTest, EverySwitchOffRecordsNothing) {
  ChipRuntime rt(test_config());
  FanoutProgram p;
  const DispatchRecord record = rt.run(p.call, arith_kernels());
  EXPECT_TRUE(record.tasks.empty());
  EXPECT_TRUE(record.phases.empty());
  EXPECT_TRUE(record.edges.empty());
  EXPECT_TRUE(record.tensors.empty());
  EXPECT_TRUE(record.pmu_events.empty());
  EXPECT_GT(record.end_ns, record.begin_ns);
}

TEST(ChipRuntimeTest, DepGenReportsTheFanOutFanInEdges) {
  RuntimeConfig config = test_config();
  config.dep_gen = true;
  ChipRuntime rt(config);
  FanoutProgram p;
  const DispatchRecord record = rt.run(p.call, arith_kernels());

  std::set<std::tuple<int64_t, int64_t, std::string>> edges;
  std::map<int32_t, std::string> tensor_name;
  for (const auto& t : record.tensors) tensor_name[t.tensor_id] = t.name;
  for (const auto& e : record.edges) {
    EXPECT_EQ(e.reason, DepReason::kReadAfterWrite);
    edges.insert({e.pred, e.succ, tensor_name[e.tensor_id]});
  }
  const std::set<std::tuple<int64_t, int64_t, std::string>> expected = {
      {0, 1, "s"}, {0, 2, "s"}, {1, 3, "t1"}, {2, 3, "t2"}};
  EXPECT_EQ(edges, expected);
  EXPECT_EQ(record.tensors.size(), 6u);

  // --dep-gen alone keeps a minimal task list, so deps.json can name kernels.
  ASSERT_EQ(record.tasks.size(), 4u);
  const int32_t func_ids[] = {kAdd, kAddScalar, kAddScalar, kMul};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(record.tasks[i].task_id, i);
    EXPECT_EQ(record.tasks[i].func_id, func_ids[i]);
  }
}

TEST(ChipRuntimeTest, RunsManyDispatchesOnOneRuntime) {
  ChipRuntime rt(test_config(2));
  for (int i = 0; i < 20; ++i) {
    FanoutProgram p;
    rt.run(p.call, arith_kernels());
    ASSERT_EQ(p.f()[3], 42.0f) << "dispatch " << i;
  }
}

// ---- ordering under concurrency ----

// Per-row "is a task running" flags: two tasks on one row at once means the
// runtime broke a dependency.
std::atomic<int> g_row_busy[2];

// counters[row, :] += 1 through a read-yield-write, so a lost ordering shows.
void k_increment(const pypto_kernel_args* a) {
  const pypto_tensor& v = a->tensors[0];
  const int row = static_cast<int>(v.offset / v.strides[0]);
  if (g_row_busy[row].fetch_add(1) != 0)
    a->ctx->hooks->report_error(a->ctx, "two tasks ran on one row at once");
  for (int64_t i = 0; i < numel(v); ++i) {
    const int64_t old = at<int64_t>(v, i);
    std::this_thread::yield();
    at<int64_t>(v, i) = old + 1;
  }
  g_row_busy[row].fetch_sub(1);
}

// Parameter 0: i64 counters [2, 8]; scalar 0: tasks per row. Alternates rows,
// so the two chains can run in parallel while each stays ordered.
void orch_two_chains(const pypto_orch_args* o) {
  const pypto_tensor& c = o->tensors[0];
  for (int64_t i = 0; i < 2 * o->scalars[0]; ++i) {
    const int64_t row = i % 2;
    submit(o, 0, PYPTO_CORE_AIV, {inout(make_view(c.data, PYPTO_I64, {1, 8}, {8, 1}, row * 8))});
  }
}

TEST(ChipRuntimeTest, ChainsStayOrderedOnConcurrentCores) {
  ChipRuntime rt(test_config(/*aiv_cores=*/2));
  std::vector<int64_t> counters(16, 0);
  OrchestrationCall call;
  call.program = "two_chains";
  call.entry = &orch_two_chains;
  call.tensors = {make_view(counters.data(), PYPTO_I64, {2, 8}, {8, 1})};
  call.scalars = {200};
  const std::vector<KernelBinding> kernels = {{0, "incr", PYPTO_CORE_AIV, &k_increment, 1, 0}};
  const DispatchRecord record = rt.run(call, kernels);
  EXPECT_EQ(record.num_tasks, 400);
  for (int64_t v : counters) EXPECT_EQ(v, 200);
}

// ---- rings ----

// Parameters: in [n], out [n]; one task per element: out[i] = in[i] + 1.
void orch_per_element(const pypto_orch_args* o) {
  const pypto_tensor& x = o->tensors[0];
  const pypto_tensor& y = o->tensors[1];
  for (int64_t i = 0; i < x.shape[0]; ++i)
    submit(o, kAddScalar, PYPTO_CORE_AIV,
           {in(make_view(x.data, PYPTO_F32, {1}, {1}, i)),
            out(make_view(y.data, PYPTO_F32, {1}, {1}, i))},
           {1});
}

TEST(ChipRuntimeTest, SmallTaskWindowAppliesBackPressure) {
  RuntimeConfig config = test_config(2);
  config.rings[0].task_window = 4;
  ChipRuntime rt(config);
  std::vector<float> x(1000), y(1000, -1);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  OrchestrationCall call;
  call.program = "per_element";
  call.entry = &orch_per_element;
  call.tensors = {vec_view(x), vec_view(y)};
  const DispatchRecord record = rt.run(call, arith_kernels());
  EXPECT_EQ(record.num_tasks, 1000);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], static_cast<float>(i) + 1) << i;
}

TEST(ChipRuntimeTest, TaskLargerThanTheRingHeapFails) {
  RuntimeConfig config = test_config();
  config.rings[0].heap = 64;  // less than one tensor argument
  ChipRuntime rt(config);
  FanoutProgram p;
  const std::string message = runtime_error_of([&] { rt.run(p.call, arith_kernels()); });
  EXPECT_CONTAINS(message, "ring_heap");
  EXPECT_CONTAINS(message, "fanout");
  EXPECT_CONTAINS(message, "vadd");
}

Gate g_gate;

// Holds its core until the gate opens.
void k_wait_gate(const pypto_kernel_args*) {
  g_gate.wait();
  g_gate.mark_returned();
}
void k_nothing(const pypto_kernel_args*) {}

int64_t g_submit_result = 0;

// Three writers of disjoint tiles, still running (gated), then one reader of
// all three: three distinct unfinished predecessors.
void orch_three_preds(const pypto_orch_args* o) {
  const pypto_tensor& m = o->tensors[0];
  auto row = [&](int64_t r) { return make_view(m.data, PYPTO_F32, {1, 4}, {4, 1}, r * 4); };
  for (int64_t r = 0; r < 3; ++r) submit(o, 0, PYPTO_CORE_AIV, {out(row(r))});
  g_submit_result = submit(o, 1, PYPTO_CORE_AIV, {in(row(0)), in(row(1)), in(row(2))});
  g_gate.open();
}

TEST(ChipRuntimeTest, MorePredecessorsThanTheDepPoolFails) {
  g_gate.reset();
  RuntimeConfig config = test_config();
  config.rings[0].dep_pool = 2;
  config.dep_gen = true;  // must not change the count (finished tasks are not waited for)
  ChipRuntime rt(config);
  std::vector<float> m(12);
  OrchestrationCall call;
  call.program = "three_preds";
  call.entry = &orch_three_preds;
  call.tensors = {vec_view(m)};
  const std::vector<KernelBinding> kernels = {
      {0, "gated_writer", PYPTO_CORE_AIV, &k_wait_gate, 1, 0},
      {1, "reader3", PYPTO_CORE_AIV, &k_nothing, 3, 0}};
  const std::string message = runtime_error_of([&] { rt.run(call, kernels); });
  EXPECT_EQ(g_submit_result, -1);
  EXPECT_CONTAINS(message, "ring_dep_pool");
  EXPECT_CONTAINS(message, "depends on 3 tasks");
  EXPECT_CONTAINS(message, "reader3");
}

// ---- kernel failures ----

void k_report_error(const pypto_kernel_args* a) {
  a->ctx->hooks->report_error(a->ctx, "boom: bad input");
}
void k_throw(const pypto_kernel_args*) { throw std::runtime_error("kaput"); }
void k_segfault(const pypto_kernel_args*) {
  volatile int* volatile p = nullptr;  // volatile both: neither load nor store may go
  *p = 42;
}

// Parameter 0: f32 [4]. A good task, then the kernel under test (func_id 1).
void orch_good_then_bad(const pypto_orch_args* o) {
  const pypto_tensor& t = o->tensors[0];
  submit(o, 0, PYPTO_CORE_AIV, {inout(t)});
  submit(o, 1, PYPTO_CORE_AIV, {inout(t)});
}

struct FailureCase {
  const char* kernel;
  pypto_kernel_entry_fn entry;
  const char* expected;
};

class KernelFailureTest : public ::testing::TestWithParam<FailureCase> {};

TEST_P(KernelFailureTest, FailsNamingProgramKernelAndTaskThenRunsAgain) {
  ChipRuntime rt(test_config());
  std::vector<float> v(4);
  OrchestrationCall call;
  call.program = "failing_prog";
  call.entry = &orch_good_then_bad;
  call.tensors = {vec_view(v)};
  const std::vector<KernelBinding> kernels = {
      {0, "fine", PYPTO_CORE_AIV, &k_nothing, 1, 0},
      {1, GetParam().kernel, PYPTO_CORE_AIV, GetParam().entry, 1, 0}};
  const std::string message = runtime_error_of([&] { rt.run(call, kernels); });
  EXPECT_CONTAINS(message, "failing_prog");
  EXPECT_CONTAINS(message, std::string("'") + GetParam().kernel + "'");
  EXPECT_CONTAINS(message, "task 1");
  EXPECT_CONTAINS(message, GetParam().expected);

  // The same runtime runs the next dispatch.
  FanoutProgram p;
  rt.run(p.call, arith_kernels());
  EXPECT_EQ(p.f()[0], 42.0f);
}

INSTANTIATE_TEST_SUITE_P(Kinds, KernelFailureTest,
                         ::testing::Values(FailureCase{"reports_error", &k_report_error,
                                                       "boom: bad input"},
                                           FailureCase{"throws", &k_throw, "kaput"},
                                           FailureCase{"segfaults", &k_segfault, "SIGSEGV"}),
                         [](const auto& info) { return std::string(info.param.kernel); });

TEST(ChipRuntimeTest, TasksAfterAFailedTaskAreSkipped) {
  ChipRuntime rt(test_config());
  std::vector<float> v = {1, 1, 1, 1};
  OrchestrationCall call;
  call.program = "failing_prog";
  call.entry = [](const pypto_orch_args* o) {
    submit(o, 1, PYPTO_CORE_AIV, {inout(o->tensors[0])});
    for (int i = 0; i < 5; ++i) submit(o, 0, PYPTO_CORE_AIV, {inout(o->tensors[0])});
  };
  call.tensors = {vec_view(v)};
  const std::vector<KernelBinding> kernels = {
      {0, "double_it", PYPTO_CORE_AIV,
       [](const pypto_kernel_args* a) { at<float>(a->tensors[0], 0) *= 2; }, 1, 0},
      {1, "reports_error", PYPTO_CORE_AIV, &k_report_error, 1, 0}};
  runtime_error_of([&] { rt.run(call, kernels); });
  EXPECT_EQ(v[0], 1.0f);  // the successors of the failed task never ran
}

// ---- orchestration failures ----

TEST(ChipRuntimeTest, OrchestrationReportError) {
  ChipRuntime rt(test_config());
  OrchestrationCall call;
  call.program = "orch_prog";
  call.entry = [](const pypto_orch_args* o) { o->api->report_error(o->runtime, "bad shapes"); };
  const std::string message = runtime_error_of([&] { rt.run(call, arith_kernels()); });
  EXPECT_CONTAINS(message, "orch_prog");
  EXPECT_CONTAINS(message, "orchestration reported: bad shapes");
}

TEST(ChipRuntimeTest, OrchestrationCrashIsCaught) {
  ChipRuntime rt(test_config());
  OrchestrationCall call;
  call.program = "orch_prog";
  call.entry = [](const pypto_orch_args*) {
    volatile int* volatile p = nullptr;  // volatile both: neither load nor store may go
    *p = 1;
  };
  const std::string message = runtime_error_of([&] { rt.run(call, arith_kernels()); });
  EXPECT_CONTAINS(message, "orchestration crashed with SIGSEGV");
  FanoutProgram p;
  rt.run(p.call, arith_kernels());
  EXPECT_EQ(p.f()[0], 42.0f);
}

// Scalar 0 selects the mistake; parameters: a b s of the fan-out program.
void orch_bad_submit(const pypto_orch_args* o) {
  const pypto_tensor* t = o->tensors;
  switch (o->scalars[0]) {
    case 0:
      g_submit_result = submit(o, 99, PYPTO_CORE_AIV, {in(t[0])});
      break;
    case 1:
      g_submit_result = submit(o, kAdd, PYPTO_CORE_AIC, {in(t[0]), in(t[1]), out(t[2])});
      break;
    case 2:
      g_submit_result = submit(o, kAdd, PYPTO_CORE_AIV, {in(t[0]), out(t[2])});
      break;
    case 3:
      g_submit_result = submit(o, kAdd, PYPTO_CORE_AIV, {in(t[0]), in(t[1]), out(t[2])}, {7});
      break;
  }
}

class BadSubmitTest : public ::testing::TestWithParam<std::pair<int, const char*>> {};

TEST_P(BadSubmitTest, FailsClearly) {
  ChipRuntime rt(test_config());
  FanoutProgram p;
  p.call.program = "bad_submit";
  p.call.entry = &orch_bad_submit;
  p.call.scalars = {GetParam().first};
  g_submit_result = 0;
  const std::string message = runtime_error_of([&] { rt.run(p.call, arith_kernels()); });
  EXPECT_EQ(g_submit_result, -1);
  EXPECT_CONTAINS(message, "bad_submit");
  EXPECT_CONTAINS(message, "task 0");
  EXPECT_CONTAINS(message, GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, BadSubmitTest,
    ::testing::Values(std::make_pair(0, "func_id 99 is not a kernel of this build"),
                      std::make_pair(1, "'vadd' is an aiv kernel but was submitted to aic cores"),
                      std::make_pair(2, "takes 3 tensors and 0 scalars, submitted with 2 and 0"),
                      std::make_pair(3, "takes 3 tensors and 0 scalars, submitted with 3 and 1")));

TEST(ChipRuntimeTest, UnbalancedScopesFail) {
  ChipRuntime rt(test_config());
  OrchestrationCall call;
  call.program = "scopes";
  call.entry = [](const pypto_orch_args* o) { o->api->scope_end(o->runtime); };
  EXPECT_CONTAINS(runtime_error_of([&] { rt.run(call, arith_kernels()); }),
                  "scope_end without a matching scope_begin");
  call.entry = [](const pypto_orch_args* o) { o->api->scope_begin(o->runtime, "open"); };
  EXPECT_CONTAINS(runtime_error_of([&] { rt.run(call, arith_kernels()); }), "scope still open");
}

TEST(ChipRuntimeTest, RejectsZeroCores) {
  RuntimeConfig config = test_config();
  config.aic_cores = 0;
  EXPECT_THROW(ChipRuntime rt(config), UsageError);
}

// ---- the dispatch deadline ----

TEST(ChipRuntimeTest, KernelPastTheDeadlineFailsAndPoisonsTheRuntime) {
  g_gate.reset();
  RuntimeConfig config = test_config();
  config.dispatch_timeout = std::chrono::milliseconds(200);
  auto rt = std::make_unique<ChipRuntime>(config);
  std::vector<float> v(4);
  OrchestrationCall call;
  call.program = "slow_prog";
  call.entry = [](const pypto_orch_args* o) {
    submit(o, 0, PYPTO_CORE_AIV, {inout(o->tensors[0])});
  };
  call.tensors = {vec_view(v)};
  const std::vector<KernelBinding> kernels = {{0, "sleeper", PYPTO_CORE_AIV, &k_wait_gate, 1, 0}};
  const std::string message = runtime_error_of([&] { rt->run(call, kernels); });
  EXPECT_CONTAINS(message, "slow_prog");
  EXPECT_CONTAINS(message, "deadline of 200 ms");
  EXPECT_CONTAINS(message, "restarted");

  // Poisoned: later dispatches are refused, not run next to the stuck kernel.
  try {
    rt->run(call, kernels);
    ADD_FAILURE() << "a poisoned runtime ran a dispatch";
  } catch (const InfraError& e) {
    EXPECT_CONTAINS(e.what(), "unusable");
  }

  // Destroy it while the kernel still runs, then let the kernel return: its
  // thread must leave without touching the destroyed runtime.
  rt.reset();
  g_gate.open();
  ASSERT_TRUE(g_gate.wait_returned(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the thread exit
}

// ---- a lone task, run inline ----

std::thread::id g_kernel_thread;
void k_note_thread(const pypto_kernel_args* a) {
  g_kernel_thread = std::this_thread::get_id();
  at<float>(a->tensors[0], 0) += static_cast<float>(a->ctx->core_id + 1);
}
void orch_one_note(const pypto_orch_args* o) {
  submit(o, 0, PYPTO_CORE_AIV, {inout(o->tensors[0])});
}

TEST(ChipRuntimeTest, ALoneTaskRunsOnTheOrchestratingThreadOnlyWhenAskedAndNotRecording) {
  const std::vector<KernelBinding> kernels = {{0, "note", PYPTO_CORE_AIV, &k_note_thread, 1, 0}};
  std::vector<float> v(1);
  OrchestrationCall call;
  call.program = "one";
  call.entry = &orch_one_note;
  call.tensors = {vec_view(v)};
  struct Case {
    bool inline_asked;
    int swimlane_level;
    bool runs_here;
  };
  for (const Case c : {Case{true, 0, true}, Case{false, 0, false}, Case{true, 2, false}}) {
    SCOPED_TRACE(std::string("inline ") + (c.inline_asked ? "asked" : "not asked") +
                 ", swimlane level " + std::to_string(c.swimlane_level));
    RuntimeConfig config = test_config(/*aiv_cores=*/2);
    config.run_lone_task_inline = c.inline_asked;
    config.swimlane_level = c.swimlane_level;
    ChipRuntime rt(config);
    for (int i = 0; i < 3; ++i) {
      v[0] = 0;
      g_kernel_thread = {};
      const DispatchRecord record = rt.run(call, kernels);
      EXPECT_EQ(record.num_tasks, 1);
      EXPECT_EQ(g_kernel_thread == std::this_thread::get_id(), c.runs_here);
      // Inline, it borrows the first AIV core's identity; the kernel sees core id 1
      // (AIC 0 comes first) as it would on that core.
      if (c.runs_here) {
        EXPECT_EQ(v[0], 2.0f);
      } else {
        EXPECT_GT(v[0], 0.0f);
      }
    }
  }
}

TEST(ChipRuntimeTest, WithInlineAskedADispatchOfSeveralTasksStillRunsThemOnTheCores) {
  RuntimeConfig config = test_config();
  config.run_lone_task_inline = true;
  ChipRuntime rt(config);
  FanoutProgram p;  // four tasks; the first is held until the second is submitted
  rt.run(p.call, arith_kernels());
  for (float f : p.f()) EXPECT_EQ(f, 42.0f);

  const std::vector<KernelBinding> kernels = {{0, "note", PYPTO_CORE_AIV, &k_note_thread, 1, 0}};
  std::vector<float> a(1), b(1);
  OrchestrationCall call;
  call.program = "two";
  call.entry = [](const pypto_orch_args* o) {
    submit(o, 0, PYPTO_CORE_AIV, {inout(o->tensors[0])});
    submit(o, 0, PYPTO_CORE_AIV, {inout(o->tensors[1])});
  };
  call.tensors = {vec_view(a), vec_view(b)};
  g_kernel_thread = {};
  EXPECT_EQ(rt.run(call, kernels).num_tasks, 2);
  EXPECT_EQ(a[0], 2.0f);
  EXPECT_EQ(b[0], 2.0f);
  EXPECT_NE(g_kernel_thread, std::this_thread::get_id());
}

// ---- DFX recording ----

TEST(ChipRuntimeTest, SwimlaneLevelsFillTheirFields) {
  for (int level = 1; level <= 4; ++level) {
    SCOPED_TRACE("level " + std::to_string(level));
    RuntimeConfig config = test_config();
    config.swimlane_level = level;
    ChipRuntime rt(config);
    FanoutProgram p;
    const DispatchRecord record = rt.run(p.call, arith_kernels());
    ASSERT_EQ(record.tasks.size(), 4u);
    for (size_t i = 0; i < record.tasks.size(); ++i) {
      const TaskRecord& t = record.tasks[i];
      EXPECT_EQ(t.task_id, static_cast<int64_t>(i));
      EXPECT_GE(t.core_id, 0);
      EXPECT_GE(t.start_ns, record.begin_ns);
      EXPECT_GE(t.end_ns, t.start_ns);
      EXPECT_LE(t.end_ns, record.end_ns);
      if (level >= 2) {
        EXPECT_GT(t.ready_ns, 0);
        EXPECT_LE(t.ready_ns, t.dispatch_ns);
        EXPECT_LE(t.dispatch_ns, t.start_ns);
        EXPECT_GE(t.finish_ns, t.end_ns);
      } else {
        EXPECT_EQ(t.ready_ns, 0);
        EXPECT_EQ(t.finish_ns, 0);
      }
      if (level >= 4) {
        EXPECT_GT(t.submit_begin_ns, 0);
        EXPECT_LE(t.submit_begin_ns, t.submit_end_ns);
        EXPECT_LE(t.submit_end_ns, t.ready_ns);
      } else {
        EXPECT_EQ(t.submit_begin_ns, 0);
        EXPECT_EQ(t.submit_end_ns, 0);
      }
    }
    // Successors start after their predecessors end.
    EXPECT_GE(record.tasks[1].start_ns, record.tasks[0].end_ns);
    EXPECT_GE(record.tasks[3].start_ns, record.tasks[1].end_ns);
    EXPECT_GE(record.tasks[3].start_ns, record.tasks[2].end_ns);
    // The mul kernel ran on the AIC core (id 0), the rest on the AIV core.
    EXPECT_EQ(record.tasks[3].core_type, PYPTO_CORE_AIC);
    EXPECT_EQ(record.tasks[3].core_id, 0);
    EXPECT_EQ(record.tasks[0].core_id, 1);

    if (level >= 3) {
      std::set<std::string> kinds;
      for (const auto& ph : record.phases) {
        kinds.insert(ph.phase);
        EXPECT_LE(ph.start_ns, ph.end_ns);
      }
      EXPECT_EQ(kinds, (std::set<std::string>{"idle", "execute", "complete"}));
    } else {
      EXPECT_TRUE(record.phases.empty());
    }
  }
}

TEST(ChipRuntimeTest, ScopeStats) {
  RuntimeConfig config = test_config();
  config.scope_stats = true;
  ChipRuntime rt(config);
  FanoutProgram p;
  p.call.program = "scoped";
  p.call.entry = [](const pypto_orch_args* o) {
    const pypto_tensor* t = o->tensors;
    o->api->scope_begin(o->runtime, "outer");
    submit(o, kAdd, PYPTO_CORE_AIV, {in(t[0]), in(t[1]), out(t[2])});
    o->api->scope_begin(o->runtime, "inner");
    submit(o, kAddScalar, PYPTO_CORE_AIV, {in(t[2]), out(t[3])}, {1});
    submit(o, kAddScalar, PYPTO_CORE_AIV, {in(t[2]), out(t[4])}, {2});
    o->api->scope_end(o->runtime);
    submit(o, kMul, PYPTO_CORE_AIC, {in(t[3]), in(t[4]), out(t[5])});
    o->api->scope_end(o->runtime);
  };
  const DispatchRecord record = rt.run(p.call, arith_kernels());
  EXPECT_EQ(p.f()[0], 42.0f);
  ASSERT_EQ(record.scopes.size(), 3u);
  const ScopeRecord& root = record.scopes[0];
  const ScopeRecord& outer = record.scopes[1];
  const ScopeRecord& inner = record.scopes[2];
  EXPECT_EQ(root.name, "scoped");
  EXPECT_EQ(root.parent_id, -1);
  EXPECT_EQ(root.num_tasks, 0);
  EXPECT_EQ(outer.name, "outer");
  EXPECT_EQ(outer.parent_id, 0);
  EXPECT_EQ(outer.depth, 1);
  EXPECT_EQ(outer.ring, 1);
  EXPECT_EQ(outer.num_tasks, 2);
  EXPECT_EQ(inner.name, "inner");
  EXPECT_EQ(inner.parent_id, 1);
  EXPECT_EQ(inner.depth, 2);
  EXPECT_EQ(inner.ring, 2);
  EXPECT_EQ(inner.num_tasks, 2);
  for (const ScopeRecord* s : {&outer, &inner}) {
    EXPECT_GE(s->peak_tasks_in_flight, 1u);
    EXPECT_GE(s->peak_heap_bytes, 2 * sizeof(pypto_task_arg));
    EXPECT_LE(s->begin_ns, s->end_ns);
    EXPECT_GE(s->begin_ns, root.begin_ns);
    EXPECT_LE(s->end_ns, root.end_ns);
  }
  EXPECT_GE(inner.begin_ns, outer.begin_ns);
  EXPECT_LE(inner.end_ns, outer.end_ns);
  // The mul task reads two predecessors: one of them may still run.
  ASSERT_EQ(record.tasks.size(), 4u);
  EXPECT_EQ(record.tasks[0].scope_id, 1);
  EXPECT_EQ(record.tasks[1].scope_id, 2);
  EXPECT_EQ(record.tasks[3].scope_id, 1);
}

TEST(ChipRuntimeTest, PmuSetOneRecordsWhatTheKernelAllows) {
  RuntimeConfig config = test_config();
  config.pmu_event_set = 1;
  ChipRuntime rt(config);
  FanoutProgram p;
  const DispatchRecord record = rt.run(p.call, arith_kernels());  // never fails for counters
  EXPECT_EQ(p.f()[0], 42.0f);

  // Every event of the set is either counted or reported with a reason.
  std::set<std::string> seen(record.pmu_events.begin(), record.pmu_events.end());
  for (const auto& why : record.pmu_unavailable) {
    const auto colon = why.find(": ");
    ASSERT_NE(colon, std::string::npos) << why;
    EXPECT_GT(why.size(), colon + 2) << "no reason in: " << why;
    seen.insert(why.substr(0, colon));
  }
  std::set<std::string> expected;
  for (const auto& e : pmu_event_set(1)) expected.insert(e.name);
  EXPECT_EQ(seen, expected);

  ASSERT_EQ(record.tasks.size(), 4u);
  for (const auto& t : record.tasks) EXPECT_EQ(t.pmu.size(), record.pmu_events.size());
  // Where software counters work (they do on these VMs even when cycles is
  // refused with ENOENT), task-clock measured something.
  const auto it = std::find(record.pmu_events.begin(), record.pmu_events.end(), "task-clock");
  if (it != record.pmu_events.end()) {
    const size_t i = static_cast<size_t>(it - record.pmu_events.begin());
    uint64_t total = 0;
    for (const auto& t : record.tasks) total += t.pmu[i];
    EXPECT_GT(total, 0u);
  }
}

TEST(ChipRuntimeTest, UnknownPmuEventSetIsAUsageError) {
  RuntimeConfig config = test_config();
  config.pmu_event_set = 9;
  ChipRuntime rt(config);
  FanoutProgram p;
  EXPECT_THROW(rt.run(p.call, arith_kernels()), UsageError);
}

TEST(ChipRuntimeTest, DumpArgsLevelOneKeepsOnlyTaggedTensors) {
  RuntimeConfig config = test_config();
  config.dump_args = 1;
  ChipRuntime rt(config);
  FanoutProgram p(/*tagged_sum=*/true);
  const DispatchRecord record = rt.run(p.call, arith_kernels());
  ASSERT_EQ(record.tasks.size(), 4u);
  ASSERT_EQ(record.tasks[0].args.size(), 1u);
  const ArgDump& d = record.tasks[0].args[0];
  EXPECT_EQ(d.arg_index, 2);
  EXPECT_EQ(d.tag, "sum");
  EXPECT_EQ(d.direction, PYPTO_OUT);
  EXPECT_EQ(d.dtype, PYPTO_F32);
  EXPECT_EQ(d.shape, (std::vector<int64_t>{4}));
  ASSERT_EQ(d.bytes.size(), 16u);
  float values[4];
  std::memcpy(values, d.bytes.data(), 16);
  for (float v : values) EXPECT_EQ(v, 5.0f);
  for (size_t i = 1; i < 4; ++i) EXPECT_TRUE(record.tasks[i].args.empty()) << i;
}

TEST(ChipRuntimeTest, DumpArgsLevelTwoKeepsEveryTensor) {
  RuntimeConfig config = test_config();
  config.dump_args = 2;
  ChipRuntime rt(config);
  FanoutProgram p(/*tagged_sum=*/true);
  const DispatchRecord record = rt.run(p.call, arith_kernels());
  ASSERT_EQ(record.tasks.size(), 4u);
  const size_t expected_args[] = {3, 2, 2, 3};
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(record.tasks[i].args.size(), expected_args[i]) << i;
    for (size_t a = 0; a < expected_args[i]; ++a)
      EXPECT_EQ(record.tasks[i].args[a].arg_index, static_cast<int32_t>(a));
  }
  EXPECT_EQ(record.tasks[0].args[2].tag, "sum");  // tags survive at level 2
  EXPECT_EQ(record.tasks[0].args[0].tag, "");
  EXPECT_EQ(record.tasks[3].args[0].direction, PYPTO_IN);
  float f0;
  std::memcpy(&f0, record.tasks[3].args[2].bytes.data(), 4);
  EXPECT_EQ(f0, 42.0f);
}

TEST(ChipRuntimeTest, DumpArgsCopiesStridedViewsInCOrder) {
  RuntimeConfig config = test_config();
  config.dump_args = 2;
  ChipRuntime rt(config);
  // Column 1 of a 3x3 matrix, doubled in place.
  std::vector<float> m = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  OrchestrationCall call;
  call.program = "column";
  call.entry = [](const pypto_orch_args* o) {
    submit(o, 0, PYPTO_CORE_AIV,
           {inout(make_view(o->tensors[0].data, PYPTO_F32, {3, 1}, {3, 1}, 1))});
  };
  call.tensors = {vec_view(m)};
  const std::vector<KernelBinding> kernels = {{0, "twice", PYPTO_CORE_AIV,
                                               [](const pypto_kernel_args* a) {
                                                 for (int64_t i = 0; i < numel(a->tensors[0]); ++i)
                                                   at<float>(a->tensors[0], i) *= 2;
                                               },
                                               1, 0}};
  const DispatchRecord record = rt.run(call, kernels);
  ASSERT_EQ(record.tasks.size(), 1u);
  ASSERT_EQ(record.tasks[0].args.size(), 1u);
  float col[3];
  ASSERT_EQ(record.tasks[0].args[0].bytes.size(), sizeof(col));
  std::memcpy(col, record.tasks[0].args[0].bytes.data(), sizeof(col));
  EXPECT_EQ(col[0], 2.0f);
  EXPECT_EQ(col[1], 8.0f);
  EXPECT_EQ(col[2], 14.0f);
  EXPECT_EQ(m[0], 0.0f);  // the rest of the matrix is untouched
}

}  // namespace
}  // namespace pypto::chip
