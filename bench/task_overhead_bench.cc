// Per-task overhead of the chip runtime: submit -> ready -> run -> complete ->
// retire for an EMPTY kernel, through ChipRuntime directly (in-process
// function pointers, no compiler, no ChipWorker). Target: <= 2 us/task with
// every DFX switch off (docs/performance.md).
//
// Variants: tasks without tensor arguments ("none"), and tasks with one small
// tensor each on distinct regions of one buffer, read ("in") or written
// ("out"), so the tensor map's insert/lookup is part of the cost. Each
// configuration runs --reps dispatches of --tasks tasks after one warm-up
// dispatch and reports the median (and best) microseconds per task. The
// dep-gen rows use --dep-gen-tasks tasks (default 10000): with --dep-gen the
// tensor map keeps every access, and its lookups scan them all.
//
// One line per measurement:
//   task_overhead variant=none aiv_cores=1 dfx=off tasks=100000 reps=7 median_us=.. min_us=..
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "orchestration/chip_runtime.h"
#include "pypto/error.h"
#include "pypto/kernel_abi.h"

namespace pypto::bench {
namespace {

enum Variant : int64_t { kNoTensors = 0, kInTensor = 1, kOutTensor = 2 };
constexpr int64_t kElemsPerTask = 16;  // one 64-byte region per task

const char* variant_name(int64_t v) {
  return v == kNoTensors ? "none" : v == kInTensor ? "in" : "out";
}

void empty_kernel(const pypto_kernel_args*) {}

// Scalars: [0] number of tasks, [1] variant. Tensor 0 (variants in/out): a
// 1-D f32 buffer of tasks * kElemsPerTask elements.
void orchestration(const pypto_orch_args* o) {
  const int64_t tasks = o->scalars[0];
  const int64_t variant = o->scalars[1];
  if (variant == kNoTensors) {
    for (int64_t i = 0; i < tasks; ++i)
      if (o->api->submit(o->runtime, 0, PYPTO_CORE_AIV, nullptr, 0, nullptr, 0) < 0) return;
    return;
  }
  pypto_task_arg arg{};
  arg.view = o->tensors[0];
  arg.view.shape[0] = kElemsPerTask;
  arg.direction = variant == kInTensor ? PYPTO_IN : PYPTO_OUT;
  for (int64_t i = 0; i < tasks; ++i) {
    arg.view.offset = o->tensors[0].offset + i * kElemsPerTask;
    if (o->api->submit(o->runtime, 0, PYPTO_CORE_AIV, &arg, 1, nullptr, 0) < 0) return;
  }
}

struct Config {
  std::string dfx;  // label
  int aiv_cores = 1;
  int swimlane = 0;
  bool dep_gen = false;
};

struct Result {
  double median_us = 0;
  double min_us = 0;
};

Result measure(const Config& cfg, int64_t variant, int64_t tasks, int reps) {
  chip::RuntimeConfig rc;
  rc.aic_cores = 1;
  rc.aiv_cores = cfg.aiv_cores;
  rc.swimlane_level = cfg.swimlane;
  rc.dep_gen = cfg.dep_gen;
  chip::ChipRuntime runtime(rc);

  std::vector<float> buffer(variant == kNoTensors ? 1 : size_t(tasks * kElemsPerTask));
  chip::OrchestrationCall call;
  call.program = "task_overhead";
  call.entry = &orchestration;
  call.scalars = {tasks, variant};
  if (variant != kNoTensors) {
    pypto_tensor t{};
    t.data = buffer.data();
    t.dtype = PYPTO_F32;
    t.ndim = 1;
    t.shape[0] = static_cast<int64_t>(buffer.size());
    t.strides[0] = 1;
    call.tensors.push_back(t);
    call.tensor_names.push_back("buffer");
  }
  const std::vector<chip::KernelBinding> kernels = {
      {0, "empty", PYPTO_CORE_AIV, &empty_kernel, variant == kNoTensors ? 0 : 1, 0}};

  std::vector<double> per_task;
  for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up (thread start, first-touch of slots)
    const auto start = std::chrono::steady_clock::now();
    const chip::DispatchRecord record = runtime.run(call, kernels);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (record.num_tasks != tasks)
      throw InfraError("task_overhead_bench: ran " + std::to_string(record.num_tasks) +
                       " tasks, expected " + std::to_string(tasks));
    if (r > 0) per_task.push_back(us / double(tasks));
  }
  std::sort(per_task.begin(), per_task.end());
  return {per_task[per_task.size() / 2], per_task.front()};
}

}  // namespace
}  // namespace pypto::bench

int main(int argc, char** argv) {
  using namespace pypto::bench;
  CLI::App app{"task_overhead_bench: per-task overhead of the chip runtime (empty kernels)"};
  int64_t tasks = 100000;
  int reps = 7;
  std::vector<std::string> variants = {"none", "in", "out"};
  bool quick = false;
  int64_t dep_gen_tasks = 10000;
  app.add_option("--tasks", tasks, "tasks per dispatch")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed dispatches per configuration (median)")
      ->check(CLI::PositiveNumber);
  app.add_option("--variants", variants, "none, in, out")
      ->check(CLI::IsMember({"none", "in", "out"}));
  app.add_flag("--quick", quick, "DFX off only (no swimlane / dep-gen rows)");
  app.add_option("--dep-gen-tasks", dep_gen_tasks,
                 "tasks per dispatch of the dep-gen rows (the tensor map then keeps every "
                 "access, so its cost grows with the task count)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::vector<Config> configs = {{"off", 1, 0, false}, {"off", 2, 0, false}};
  if (!quick) {
    configs.push_back({"swimlane1", 1, 1, false});
    configs.push_back({"dep_gen", 1, 0, true});
  }
  std::printf(
      "# task_overhead_bench: %lld empty-kernel tasks per dispatch, median of %d "
      "dispatches; host has %u hardware threads; target <= 2 us/task with DFX off\n",
      static_cast<long long>(tasks), reps, std::thread::hardware_concurrency());
  try {
    for (const std::string& name : variants) {
      const int64_t variant = name == "none" ? kNoTensors : name == "in" ? kInTensor : kOutTensor;
      for (const Config& cfg : configs) {
        const int64_t n = cfg.dep_gen ? std::min(tasks, dep_gen_tasks) : tasks;
        const Result r = measure(cfg, variant, n, reps);
        std::printf(
            "task_overhead variant=%s aiv_cores=%d dfx=%s tasks=%lld reps=%d "
            "median_us=%.3f min_us=%.3f%s\n",
            variant_name(variant), cfg.aiv_cores, cfg.dfx.c_str(), static_cast<long long>(n), reps,
            r.median_us, r.min_us,
            cfg.dfx == "off" && r.median_us > 2.0 ? "  (above the 2 us target)" : "");
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "task_overhead_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
