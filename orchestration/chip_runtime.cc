#include "orchestration/chip_runtime.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <shared_mutex>

#include "common/log.h"
#include "orchestration/args_dump.h"
#include "orchestration/kernel_guard.h"
#include "orchestration/pmu.h"
#include "pypto/error.h"

namespace pypto::chip {

namespace {
// How long the orchestrator polls for the last task before sleeping on ring_cv_.
constexpr std::chrono::microseconds kDrainSpin{30};
}  // namespace

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int default_core_count() {
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp(hw / 2, 1u, 8u));
}

// One task in a ring slot. Fields written by the orchestrator at submit are
// read by a core after the task became ready (the ready queue's mutex orders
// them); `mu` guards done + successors between submit and completion.
struct ChipRuntime::Slot {
  std::atomic<int64_t> id{-1};
  std::atomic<bool> done{true};      // kernel finished, successors released
  std::atomic<bool> retired{true};   // ring resources released; slot reusable
  std::atomic<int32_t> fanin{0};
  std::mutex mu;
  std::vector<int32_t> successors;

  const KernelBinding* kernel = nullptr;
  int32_t ring = 0;
  int32_t scope_id = 0;
  uint64_t heap_bytes = 0;
  uint64_t dep_edges = 0;
  std::vector<pypto_tensor> tensors;
  std::vector<int32_t> directions;
  std::vector<int64_t> scalars;
  std::vector<std::string> tags;  // --dump-args 1: tags set by the kernel
  TaskRecord record;
};

namespace {

// Lets a core thread whose kernel outlived the dispatch deadline learn, when
// the kernel finally returns, that its dispatch was abandoned: run() threw and
// the caller may have freed the call and the kernel bindings, and the runtime
// itself may be gone. The threads share ownership, so it outlives the
// runtime. A core thread holds `mu` shared while it processes a task, except
// inside the kernel; run() at the deadline and the destructor of a poisoned
// runtime take it exclusively to set `gone`, so no thread is mid-way through
// runtime code when that happens, and every thread checks `gone` after
// taking it.
struct Liveness {
  std::shared_mutex mu;
  bool gone = false;
};

// Thrown on a core thread whose dispatch was abandoned; ends the thread.
struct RuntimeGone {};

}  // namespace

// A simulated core: one thread, one core type.
struct ChipRuntime::Core {
  int32_t id = 0;
  int32_t type = PYPTO_CORE_AIV;
  ChipRuntime* runtime = nullptr;
  Slot* current = nullptr;
  std::string error;  // set through hooks->report_error during a task
  std::vector<TaskRecord> records;
  std::vector<CorePhase> phases;
  std::unique_ptr<PmuCounters> pmu;
  std::vector<uint64_t> pmu_before;
  std::vector<uint64_t> pmu_after;
  std::shared_ptr<Liveness> liveness;                   // shared by every core of a runtime
  std::shared_lock<std::shared_mutex>* held = nullptr;  // this thread's hold on it
  bool in_kernel = false;  // written under `held`, read under the exclusive lock
};

namespace {

ChipRuntime* runtime_of(void* runtime) { return static_cast<ChipRuntime*>(runtime); }

int64_t api_submit(void* rt, int32_t func_id, int32_t core_type, const pypto_task_arg* args,
                   int32_t num_args, const int64_t* scalars, int32_t num_scalars) {
  return runtime_of(rt)->submit(func_id, core_type, args, num_args, scalars, num_scalars);
}
void api_scope_begin(void* rt, const char* name) { runtime_of(rt)->scope_begin(name); }
void api_scope_end(void* rt) { runtime_of(rt)->scope_end(); }
void api_report_error(void* rt, const char* message) {
  runtime_of(rt)->report_orchestration_error(message);
}

const pypto_orch_api kOrchApi = {api_submit, api_scope_begin, api_scope_end, api_report_error};

// Kernel hooks reach the core through ctx->runtime (a Core*).
void hook_report_error(const pypto_kernel_ctx* ctx, const char* message) {
  auto* core = static_cast<std::string*>(ctx->runtime);
  if (core->empty()) *core = message ? message : "(no message)";
}

const char* core_type_name(int32_t type) { return type == PYPTO_CORE_AIC ? "aic" : "aiv"; }

// Submits are rare compared to their cost; the orchestrator's own errors
// unwind out of the entry through this exception, caught in run().
struct SubmitAbort {};

}  // namespace

// hooks->tag_tensor needs the slot, reached through the same pointer: the
// Core's error string is its first member-free address, so keep a side table.
namespace {
thread_local std::vector<std::string>* t_tags = nullptr;
void hook_tag_tensor(const pypto_kernel_ctx*, int32_t arg_index, const char* tag) {
  if (!t_tags || arg_index < 0 || arg_index >= static_cast<int32_t>(t_tags->size())) return;
  (*t_tags)[arg_index] = tag ? tag : "";
}
const pypto_kernel_hooks kHooks = {hook_report_error, hook_tag_tensor};

int no_comm(const pypto_kernel_ctx* ctx, const char* call) {
  const std::string message = std::string(call) +
                              ": window communication needs an L3 build run on several ranks "
                              "(pypto-coord run <L3 dir>); this is a single-chip (L2) run";
  ctx->hooks->report_error(ctx, message.c_str());
  return -1;
}
const pypto_comm_api kNoComm = {
    [](const pypto_kernel_ctx* c, int32_t, int32_t, uint64_t, void*, uint64_t) {
      return no_comm(c, "remote_load");
    },
    [](const pypto_kernel_ctx* c, int32_t, int32_t, uint64_t, const void*, uint64_t, int32_t,
       int32_t) { return no_comm(c, "remote_store"); },
    [](const pypto_kernel_ctx* c, int32_t, int32_t, uint64_t, const void*, uint64_t) {
      return no_comm(c, "put");
    },
    [](const pypto_kernel_ctx* c, int32_t, int32_t, uint64_t, void*, uint64_t) {
      return no_comm(c, "get");
    },
    [](const pypto_kernel_ctx* c, int32_t, int32_t, uint64_t, int32_t, int32_t) {
      return no_comm(c, "notify");
    },
    [](const pypto_kernel_ctx* c, int32_t, uint64_t, int32_t, int32_t) {
      return no_comm(c, "wait");
    },
    [](const pypto_kernel_ctx* c) { return no_comm(c, "barrier"); },
    [](const pypto_kernel_ctx* c, int32_t, int32_t) -> void* {
      no_comm(c, "peer_pointer");
      return nullptr;
    },
    [](const pypto_kernel_ctx*, const char*, int32_t) {},  // set_call_site: no wait to name
};
}  // namespace

const pypto_comm_api* no_comm_api() { return &kNoComm; }

ChipRuntime::ChipRuntime(const RuntimeConfig& config) : config_(config) {
  if (config_.aic_cores < 1 || config_.aiv_cores < 1)
    throw UsageError("core counts must be at least 1 (aic_cores=" +
                     std::to_string(config_.aic_cores) +
                     ", aiv_cores=" + std::to_string(config_.aiv_cores) + ")");
  int32_t base = 0;
  for (size_t level = 0; level < rings_.size(); ++level) {
    rings_[level].limits = config_.rings[level];
    rings_[level].base = base;
    rings_[level].size = static_cast<int32_t>(config_.rings[level].task_window);
    base += rings_[level].size;
  }
  slots_.reserve(base);
  for (int32_t i = 0; i < base; ++i) slots_.push_back(std::make_unique<Slot>());

  auto add_cores = [&](int count, int32_t type) {
    for (int i = 0; i < count; ++i) {
      auto core = std::make_unique<Core>();
      core->id = static_cast<int32_t>(cores_.size());
      core->type = type;
      core->runtime = this;
      cores_.push_back(std::move(core));
    }
  };
  add_cores(config_.aic_cores, PYPTO_CORE_AIC);
  add_cores(config_.aiv_cores, PYPTO_CORE_AIV);
  auto liveness = std::make_shared<Liveness>();
  for (auto& core : cores_) core->liveness = liveness;
  for (auto& core : cores_)
    threads_.emplace_back([this, c = core.get(), liveness] {
      try {
        core_loop(c);
      } catch (const RuntimeGone&) {
        // The dispatch was abandoned at its deadline: touch nothing, leave.
      }
    });
}

ChipRuntime::~ChipRuntime() {
  {
    // Both queues at once: each core reads stop_ under its own queue's mutex.
    std::scoped_lock lock(ready_[0].mu, ready_[1].mu);
    stop_ = true;
  }
  for (auto& q : ready_) q.cv.notify_all();
  if (!poisoned_) {
    for (auto& t : threads_) t.join();
    return;
  }
  // A kernel stuck past the dispatch deadline cannot be joined: detach its
  // thread (it leaves through Liveness when the kernel returns) and join the
  // others, which leave on stop_ or on `gone`. Slots and cores are leaked: a
  // late kernel still reads its arguments (slot) and may call its hooks (core).
  std::vector<bool> stuck(cores_.size());
  {
    Liveness& liveness = *cores_.front()->liveness;
    std::unique_lock<std::shared_mutex> lock(liveness.mu);
    liveness.gone = true;
    for (size_t i = 0; i < cores_.size(); ++i) stuck[i] = cores_[i]->in_kernel;
  }
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (stuck[i]) threads_[i].detach();
    else threads_[i].join();
  }
  for (auto& slot : slots_) (void)slot.release();
  for (auto& core : cores_) (void)core.release();
}

bool ChipRuntime::recording() const {
  return config_.swimlane_level > 0 || config_.pmu_event_set > 0 || config_.scope_stats ||
         config_.dump_args > 0;
}

void ChipRuntime::fail(const std::string& message) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (failure_.empty()) failure_ = message;
  failed_.store(true);
}

void ChipRuntime::throw_submit_error(const std::string& message) {
  fail("program '" + call_->program + "': " + message);
  throw SubmitAbort{};
}

void ChipRuntime::report_orchestration_error(const char* message) {
  fail("program '" + call_->program + "': orchestration reported: " +
       (message ? message : "(no message)"));
}

void ChipRuntime::scope_begin(const char* name) {
  ScopeRecord scope;
  scope.scope_id = static_cast<int32_t>(record_.scopes.size());
  scope.parent_id = scope_stack_.empty() ? -1 : scope_stack_.back();
  scope.depth = static_cast<int32_t>(scope_stack_.size());
  scope.name = name ? name : "";
  scope.begin_ns = now_ns();
  scope.ring = std::min<int32_t>(scope.depth, static_cast<int32_t>(rings_.size()) - 1);
  record_.scopes.push_back(std::move(scope));
  scope_stack_.push_back(record_.scopes.back().scope_id);
}

void ChipRuntime::scope_end() {
  if (scope_stack_.size() <= 1) {
    report_orchestration_error("scope_end without a matching scope_begin");
    return;
  }
  record_.scopes[scope_stack_.back()].end_ns = now_ns();
  scope_stack_.pop_back();
}

int64_t ChipRuntime::submit(int32_t func_id, int32_t core_type, const pypto_task_arg* args,
                            int32_t num_args, const int64_t* scalars, int32_t num_scalars) {
  if (failed_.load(std::memory_order_relaxed)) return -1;
  if (held_slot_ >= 0) {  // not a lone task after all
    push_ready(held_slot_);
    held_slot_ = -1;
  }
  const int64_t submit_begin = config_.swimlane_level >= 4 ? now_ns() : 0;
  try {
    const int64_t task_id = submitted_;
    // Built only on the error paths: a string per submit costs ~0.1 us.
    auto where = [&] { return "task " + std::to_string(task_id) + ": "; };
    if (func_id < 0 || func_id >= static_cast<int32_t>(kernel_by_id_.size()) ||
        !kernel_by_id_[func_id])
      throw_submit_error(where() + "func_id " + std::to_string(func_id) +
                         " is not a kernel of this build; check kernel_config.json's kernels");
    const KernelBinding* kernel = kernel_by_id_[func_id];
    if (core_type != kernel->core_type)
      throw_submit_error(where() + "kernel '" + kernel->name + "' is an " +
                         core_type_name(kernel->core_type) + " kernel but was submitted to " +
                         core_type_name(core_type) + " cores");
    if (num_args != kernel->num_tensors || num_scalars != kernel->num_scalars)
      throw_submit_error(where() + "kernel '" + kernel->name + "' takes " +
                         std::to_string(kernel->num_tensors) + " tensors and " +
                         std::to_string(kernel->num_scalars) + " scalars, submitted with " +
                         std::to_string(num_args) + " and " + std::to_string(num_scalars));
    for (int32_t i = 0; i < num_args; ++i) {
      const pypto_tensor& v = args[i].view;
      if (v.ndim < 0 || v.ndim > PYPTO_MAX_DIMS || !v.data)
        throw_submit_error(where() + "argument " + std::to_string(i) + " of kernel '" +
                           kernel->name + "' is not a valid tensor view");
    }

    const int32_t level = static_cast<int32_t>(
        std::min<size_t>(scope_stack_.empty() ? 0 : scope_stack_.size() - 1, rings_.size() - 1));
    Ring& ring = rings_[level];
    const uint64_t heap_bytes =
        uint64_t(num_args) * sizeof(pypto_task_arg) + uint64_t(num_scalars) * sizeof(int64_t);
    if (heap_bytes > ring.limits.heap)
      throw_submit_error(where() + "kernel '" + kernel->name + "' needs " +
                         std::to_string(heap_bytes) + " bytes of argument heap but ring_heap[" +
                         std::to_string(level) + "] is " + std::to_string(ring.limits.heap) +
                         "; raise ring_heap (RunConfig or PTO2_RING_HEAP)");

    // Take the next slot of this level's ring, waiting for its previous task.
    const int32_t slot_index = ring.base + static_cast<int32_t>(ring.next_seq % ring.size);
    Slot& slot = *slots_[slot_index];
    {
      std::unique_lock<std::mutex> lock(ring_mu_);
      auto free_slot = [&] {
        return failed_.load() ||
               (slot.retired.load() && ring.heap_in_use + heap_bytes <= ring.limits.heap);
      };
      bool ok = true;
      if (!free_slot()) {
        ++ring_waiters_;
        ok = ring_cv_.wait_until(lock, deadline_, free_slot);
        --ring_waiters_;
      }
      if (!ok)
        throw_submit_error(where() + "waited past the dispatch deadline for a free slot in ring " +
                           std::to_string(level) + " (a kernel is not finishing)");
      if (failed_.load()) return -1;
      ring.heap_in_use += heap_bytes;
      ++submitted_;
      ++ring.in_flight;
      if (config_.scope_stats && !scope_stack_.empty()) {
        ScopeRecord& scope = record_.scopes[scope_stack_.back()];
        ++scope.num_tasks;
        scope.peak_tasks_in_flight = std::max(scope.peak_tasks_in_flight, ring.in_flight);
        scope.peak_heap_bytes = std::max(scope.peak_heap_bytes, ring.heap_in_use);
        scope.peak_dep_edges = std::max(scope.peak_dep_edges, ring.deps_in_use);
      }
    }
    ++ring.next_seq;

    slot.kernel = kernel;
    slot.ring = level;
    slot.scope_id = scope_stack_.empty() ? 0 : scope_stack_.back();
    slot.heap_bytes = heap_bytes;
    slot.tensors.resize(num_args);
    slot.directions.resize(num_args);
    for (int32_t i = 0; i < num_args; ++i) {
      slot.tensors[i] = args[i].view;
      slot.directions[i] = args[i].direction;
    }
    slot.scalars.assign(scalars, scalars + num_scalars);
    slot.successors.clear();
    slot.fanin.store(1);  // held by submit until every edge is in place
    slot.done.store(false);
    slot.retired.store(false);
    slot.id.store(task_id);
    if (recording()) {
      slot.record = TaskRecord{};
      slot.record.task_id = task_id;
      slot.record.func_id = func_id;
      slot.record.core_type = kernel->core_type;
      slot.record.scope_id = slot.scope_id;
      slot.record.submit_begin_ns = submit_begin;
    } else if (config_.dep_gen) {
      // --dep-gen alone: deps.json still names each task's kernel. Only the
      // orchestrator touches record_.tasks until the dispatch ends.
      TaskRecord& minimal = record_.tasks.emplace_back();
      minimal.task_id = task_id;
      minimal.func_id = func_id;
      minimal.core_type = kernel->core_type;
      minimal.scope_id = slot.scope_id;
    }

    // Dependencies from every tensor argument.
    deps_scratch_.clear();
    const TaskRef self{task_id, slot_index};
    auto is_done = [this](TaskRef t) {
      const Slot& s = *slots_[t.slot];
      return s.id.load() != t.id || s.done.load();
    };
    for (int32_t i = 0; i < num_args; ++i) {
      const int32_t dir = args[i].direction;
      const bool reads = dir == PYPTO_IN || dir == PYPTO_INOUT;
      const bool writes = dir == PYPTO_OUT || dir == PYPTO_INOUT;
      const size_t before = deps_scratch_.size();
      const int32_t tensor_id =
          tensor_map_.access(self, Region::of(args[i].view), reads, writes, is_done, deps_scratch_);
      if (config_.dep_gen) {
        if (tensor_id >= static_cast<int32_t>(record_.tensors.size())) {
          TensorRecord t;
          t.tensor_id = tensor_id;
          t.base = reinterpret_cast<uintptr_t>(args[i].view.data);
          for (size_t p = 0; p < call_->tensors.size(); ++p)
            if (call_->tensors[p].data == args[i].view.data && p < call_->tensor_names.size())
              t.name = call_->tensor_names[p];
          record_.tensors.push_back(std::move(t));
        }
        for (size_t d = before; d < deps_scratch_.size(); ++d)
          record_.edges.push_back({deps_scratch_[d].pred.id, task_id, deps_scratch_[d].tensor_id,
                                   deps_scratch_[d].reason});
      }
    }
    // One wait per distinct, unfinished predecessor. With --dep-gen the map
    // also reports finished ones (for deps.json); drop them here so that a DFX
    // switch never changes what counts against ring_dep_pool.
    if (config_.dep_gen)
      std::erase_if(deps_scratch_, [&](const Dependency& d) { return is_done(d.pred); });
    std::sort(deps_scratch_.begin(), deps_scratch_.end(),
              [](const Dependency& a, const Dependency& b) { return a.pred.id < b.pred.id; });
    uint64_t edges = 0;
    int64_t last = -1;
    for (const Dependency& dep : deps_scratch_) {
      if (dep.pred.id == last) continue;
      last = dep.pred.id;
      ++edges;
    }
    // From here on the slot is taken: an error must retire it, or the drain
    // at the end of the dispatch would wait for it forever.
    auto abandon = [&](const std::string& message) {
      slot.dep_edges = 0;
      slot.done.store(true);
      retire(slot);
      throw_submit_error(message);
    };
    if (edges > ring.limits.dep_pool)
      abandon(where() + "kernel '" + kernel->name + "' depends on " +
                         std::to_string(edges) + " tasks but ring_dep_pool[" +
                         std::to_string(level) + "] is " + std::to_string(ring.limits.dep_pool) +
                         "; raise ring_dep_pool (RunConfig or PTO2_RING_DEP_POOL)");
    if (edges > 0) {
      std::unique_lock<std::mutex> lock(ring_mu_);
      auto free_deps = [&] {
        return failed_.load() || ring.deps_in_use + edges <= ring.limits.dep_pool;
      };
      bool ok = true;
      if (!free_deps()) {
        ++ring_waiters_;
        ok = ring_cv_.wait_until(lock, deadline_, free_deps);
        --ring_waiters_;
      }
      if (!ok || failed_.load()) {
        lock.unlock();
        abandon(where() + (ok ? std::string("the dispatch failed")
                            : "waited past the dispatch deadline for ring_dep_pool[" +
                                  std::to_string(level) + "]"));
      }
      ring.deps_in_use += edges;
      if (config_.scope_stats && !scope_stack_.empty()) {
        ScopeRecord& scope = record_.scopes[scope_stack_.back()];
        scope.peak_dep_edges = std::max(scope.peak_dep_edges, ring.deps_in_use);
      }
    }
    slot.dep_edges = edges;
    last = -1;
    for (const Dependency& dep : deps_scratch_) {
      if (dep.pred.id == last) continue;
      last = dep.pred.id;
      Slot& pred = *slots_[dep.pred.slot];
      std::lock_guard<std::mutex> lock(pred.mu);
      if (pred.id.load() == dep.pred.id && !pred.done.load()) {
        pred.successors.push_back(slot_index);
        slot.fanin.fetch_add(1);
      }
    }
    if (config_.swimlane_level >= 4) slot.record.submit_end_ns = now_ns();
    if (slot.fanin.fetch_sub(1) == 1) {
      if (task_id == 0 && config_.run_lone_task_inline && !recording())
        held_slot_ = slot_index;
      else
        push_ready(slot_index);
    }
    return task_id;
  } catch (const SubmitAbort&) {
    return -1;
  } catch (const std::exception& e) {
    // Never let an exception unwind into the orchestration's C frames.
    fail("program '" + call_->program + "': submit failed: " + e.what());
    return -1;
  }
}

void ChipRuntime::push_ready(int32_t slot_index) {
  Slot& slot = *slots_[slot_index];
  if (config_.swimlane_level >= 2) slot.record.ready_ns = now_ns();
  ReadyQueue& q = ready_[slot.kernel->core_type];
  std::lock_guard<std::mutex> lock(q.mu);
  q.slots.push_back(slot_index);
  if (q.sleepers > 0) q.cv.notify_one();
}

void ChipRuntime::run_held_task() {
  const int32_t slot_index = held_slot_;
  held_slot_ = -1;
  Slot& slot = *slots_[slot_index];
  // The first core of the kernel's type lends its identity (id, error buffer):
  // its thread sleeps, as every core does between dispatches, and the ready queue
  // it waits on stays empty.
  Core* core = nullptr;
  for (auto& c : cores_)
    if (c->type == slot.kernel->core_type) {
      core = c.get();
      break;
    }
  if (!core) {  // no core of its type: the core threads report that
    push_ready(slot_index);
    return;
  }
  std::shared_lock<std::shared_mutex> held(core->liveness->mu);
  core->held = &held;
  run_task(core, slot);
  complete_task(core, slot_index);
  core->held = nullptr;
}

void ChipRuntime::core_loop(Core* core) {
  prepare_guarded_thread();
  ReadyQueue& q = ready_[core->type];
  const bool phases = config_.swimlane_level >= 3;
  for (;;) {
    int32_t slot_index;
    {
      const int64_t idle_begin = phases ? now_ns() : 0;
      std::unique_lock<std::mutex> lock(q.mu);
      if (q.slots.empty() && !stop_) {
        // Spin briefly without the lock before sleeping: tasks often arrive in
        // bursts, and a futex wake costs more than a short yield loop.
        lock.unlock();
        for (int i = 0; i < config_.idle_spins; ++i) {
          std::this_thread::yield();
          std::lock_guard<std::mutex> peek(q.mu);
          if (!q.slots.empty() || stop_) break;
        }
        lock.lock();
      }
      ++q.sleepers;
      q.cv.wait(lock, [&] { return stop_ || !q.slots.empty(); });
      --q.sleepers;
      if (stop_) return;
      slot_index = q.slots.front();
      q.slots.pop_front();
      if (phases)
        core->phases.push_back({core->id, core->type, "idle", idle_begin, now_ns()});
    }
    std::shared_lock<std::shared_mutex> held(core->liveness->mu);
    if (core->liveness->gone) throw RuntimeGone{};
    core->held = &held;
    run_task(core, *slots_[slot_index]);
    complete_task(core, slot_index);
  }
}

void ChipRuntime::run_task(Core* core, Slot& slot) {
  if (failed_.load(std::memory_order_relaxed)) return;  // the dispatch failed: skip, drain
  TaskRecord& rec = slot.record;
  const bool rec_on = recording();
  if (rec_on) {
    rec.core_id = core->id;
    if (config_.swimlane_level >= 2) rec.dispatch_ns = now_ns();
  }
  core->error.clear();
  pypto_kernel_ctx ctx{};
  ctx.rank = config_.rank;
  ctx.world = config_.world;
  ctx.core_id = core->id;
  ctx.core_type = core->type;
  ctx.task_id = slot.id.load();
  ctx.num_windows = static_cast<int32_t>(call_->windows.size());
  ctx.windows = call_->windows.data();
  ctx.hooks = &kHooks;
  ctx.runtime = &core->error;
  ctx.comm = call_->comm ? call_->comm : &kNoComm;
  ctx.comm_state = call_->comm_state;
  pypto_kernel_args kargs{};
  kargs.abi_version = PYPTO_KERNEL_ABI_VERSION;
  kargs.num_tensors = static_cast<int32_t>(slot.tensors.size());
  kargs.tensors = slot.tensors.data();
  kargs.num_scalars = static_cast<int32_t>(slot.scalars.size());
  kargs.scalars = slot.scalars.data();
  kargs.ctx = &ctx;
  if (config_.dump_args > 0) slot.tags.assign(slot.tensors.size(), std::string());
  t_tags = config_.dump_args > 0 ? &slot.tags : nullptr;

  if (config_.pmu_event_set > 0 && !core->pmu)
    core->pmu = std::make_unique<PmuCounters>(pmu_events_);  // per thread: open on the core
  if (core->pmu) core->pmu->read(core->pmu_before);
  const int64_t start = rec_on ? now_ns() : 0;
  // Not touching the runtime while user code runs (see Liveness): hold the
  // Liveness pointer locally, `core` may be gone when the kernel returns.
  std::shared_lock<std::shared_mutex>& held = *core->held;
  Liveness& liveness = *core->liveness;
  core->in_kernel = true;
  TaskBoard* const board = call_->board;
  if (board) board->task_started(core->id, core->type, ctx.task_id, slot.kernel->func_id, now_ns());
  held.unlock();
  std::optional<std::string> crash = run_guarded([&] { slot.kernel->entry(&kargs); });
  held.lock();
  if (liveness.gone) throw RuntimeGone{};
  if (board) board->task_ended(core->id);
  core->in_kernel = false;
  const int64_t end = rec_on ? now_ns() : 0;
  if (core->pmu) {
    core->pmu->read(core->pmu_after);
    rec.pmu.resize(core->pmu_after.size());
    for (size_t i = 0; i < rec.pmu.size(); ++i) rec.pmu[i] = core->pmu_after[i] - core->pmu_before[i];
  }
  t_tags = nullptr;
  if (rec_on) {
    rec.start_ns = start;
    rec.end_ns = end;
    if (config_.swimlane_level >= 3) core->phases.push_back({core->id, core->type, "execute", start, end});
  }
  std::string error = crash ? *crash : core->error;
  if (!error.empty()) {
    fail("program '" + call_->program + "': kernel '" + slot.kernel->name + "' (func_id " +
         std::to_string(slot.kernel->func_id) + ") failed in task " +
         std::to_string(slot.id.load()) + " on " + core_type_name(core->type) + " core " +
         std::to_string(core->id) + ": " + error);
    return;
  }
  if (config_.dump_args > 0) {
    for (size_t i = 0; i < slot.tensors.size(); ++i) {
      if (config_.dump_args == 1 && slot.tags[i].empty()) continue;
      ArgDump dump;
      dump.arg_index = static_cast<int32_t>(i);
      dump.tag = slot.tags[i];
      dump.direction = slot.directions[i];
      dump.dtype = slot.tensors[i].dtype;
      dump.shape.assign(slot.tensors[i].shape, slot.tensors[i].shape + slot.tensors[i].ndim);
      dump.bytes = view_bytes(slot.tensors[i]);
      rec.args.push_back(std::move(dump));
    }
  }
}

void ChipRuntime::complete_task(Core* core, int32_t slot_index) {
  Slot& slot = *slots_[slot_index];
  const bool phases = config_.swimlane_level >= 3;
  const int64_t complete_begin = phases ? now_ns() : 0;
  std::vector<int32_t> successors;
  {
    std::lock_guard<std::mutex> lock(slot.mu);
    slot.done.store(true);
    successors.swap(slot.successors);
  }
  for (int32_t succ : successors)
    if (slots_[succ]->fanin.fetch_sub(1) == 1) push_ready(succ);
  if (recording()) {
    if (config_.swimlane_level >= 2) slot.record.finish_ns = now_ns();
    core->records.push_back(std::move(slot.record));
  }
  if (phases) core->phases.push_back({core->id, core->type, "complete", complete_begin, now_ns()});
  successors.clear();
  slot.successors = std::move(successors);  // keep the capacity for the slot's next task
  retire(slot);
}

void ChipRuntime::retire(Slot& slot) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(ring_mu_);
    Ring& ring = rings_[slot.ring];
    ring.heap_in_use -= slot.heap_bytes;
    ring.deps_in_use -= slot.dep_edges;
    --ring.in_flight;
    slot.retired.store(true);
    ++completed_;
    // Wake the orchestrator only when it waits, and with hysteresis: once a
    // quarter of the ring is free (or everything is done), so that a full ring
    // costs one futex wake per ring/4 tasks, not one wake and sleep per task.
    wake = ring_waiters_ > 0 &&
           (completed_ == submitted_ || failed_.load() ||
            ring.in_flight <= uint64_t(ring.size) - uint64_t(ring.size) / 4 - 1);
  }
  if (wake) ring_cv_.notify_all();
}

DispatchRecord ChipRuntime::run(const OrchestrationCall& call,
                                const std::vector<KernelBinding>& kernels) {
  if (poisoned_)
    throw InfraError("the chip runtime is unusable: a kernel of an earlier dispatch is still "
                     "running past its deadline; restart the process");
  if (!call.entry) throw InfraError("program '" + call.program + "' has no orchestration entry");

  // Per-dispatch state. Cores are idle here: every earlier task retired.
  call_ = &call;
  kernel_by_id_.clear();
  for (const auto& k : kernels) {
    if (k.func_id >= static_cast<int32_t>(kernel_by_id_.size())) kernel_by_id_.resize(k.func_id + 1);
    kernel_by_id_[k.func_id] = &k;
  }
  if (call.board) {
    std::vector<std::string> names(kernel_by_id_.size());
    for (const auto& k : kernels) names[static_cast<size_t>(k.func_id)] = k.name;
    call.board->begin_dispatch(std::move(names));
  }
  tensor_map_ = TensorMap(config_.dep_gen);
  record_ = DispatchRecord{};
  scope_stack_.clear();
  held_slot_ = -1;
  failure_.clear();
  failed_.store(false);
  completed_ = 0;
  submitted_ = 0;
  for (auto& ring : rings_) {
    ring.next_seq = 0;
    ring.heap_in_use = 0;
    ring.deps_in_use = 0;
    ring.in_flight = 0;
  }
  for (auto& core : cores_) {
    core->records.clear();
    core->phases.clear();
  }
  deadline_ = std::chrono::steady_clock::now() + config_.dispatch_timeout;

  // PMU counters are per thread: each core opens its own at the first task.
  std::vector<PmuEvent> pmu_events;
  if (config_.pmu_event_set > 0) {
    pmu_events = pmu_event_set(config_.pmu_event_set);
    PmuCounters probe(pmu_events);
    record_.pmu_events = probe.available();
    record_.pmu_unavailable = probe.unavailable();
  }
  pmu_events_ = std::move(pmu_events);

  record_.begin_ns = now_ns();
  scope_begin(call.program.c_str());  // scope 0: the whole dispatch

  pypto_orch_args oargs{};
  oargs.abi_version = PYPTO_KERNEL_ABI_VERSION;
  oargs.num_tensors = static_cast<int32_t>(call.tensors.size());
  oargs.tensors = call.tensors.data();
  oargs.num_scalars = static_cast<int32_t>(call.scalars.size());
  oargs.scalars = call.scalars.data();
  oargs.rank = config_.rank;
  oargs.world = config_.world;
  oargs.num_windows = static_cast<int32_t>(call.windows.size());
  oargs.windows = call.windows.data();
  oargs.api = &kOrchApi;
  oargs.runtime = this;
  if (auto crash = run_guarded([&] { call.entry(&oargs); }))
    fail("program '" + call.program + "': orchestration " + *crash);
  if (scope_stack_.size() > 1)
    report_orchestration_error("returned with a scope still open (scope_begin without scope_end)");
  if (held_slot_ >= 0) run_held_task();

  // Drain: every submitted task finishes (or is skipped after a failure). A short
  // dispatch (often one task) is done within microseconds: look again for a
  // moment before sleeping, so that neither side pays for a futex wake.
  for (const auto spin_end = std::chrono::steady_clock::now() + kDrainSpin;;) {
    {
      std::lock_guard<std::mutex> lock(ring_mu_);
      if (completed_ == submitted_) break;
    }
    if (std::chrono::steady_clock::now() >= spin_end) break;
    std::this_thread::yield();
  }
  {
    std::unique_lock<std::mutex> lock(ring_mu_);
    ++ring_waiters_;
    const bool drained =
        ring_cv_.wait_until(lock, deadline_, [&] { return completed_ == submitted_; });
    --ring_waiters_;
    if (!drained) {
      poisoned_ = true;
      const int64_t left = submitted_ - completed_;
      lock.unlock();
      // Abandon the dispatch: once run() throws, the caller may free `call`
      // and `kernels`, so a kernel returning late must find its thread told to
      // leave (Liveness) rather than touch them.
      {
        Liveness& liveness = *cores_.front()->liveness;
        std::unique_lock<std::shared_mutex> abandon(liveness.mu);
        liveness.gone = true;
      }
      const int64_t ms = config_.dispatch_timeout.count();
      fail("program '" + call.program + "': " + std::to_string(left) +
           " task(s) still running after the dispatch deadline of " +
           (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms") +
           " (a kernel that never returns?); this process must be restarted");
    }
  }
  record_.scopes[0].end_ns = now_ns();
  scope_stack_.clear();
  record_.end_ns = now_ns();
  record_.num_tasks = submitted_;
  call_ = nullptr;

  if (failed_.load()) {
    std::lock_guard<std::mutex> lock(failure_mu_);
    throw KernelRuntimeError(failure_);
  }
  if (recording()) {
    for (auto& core : cores_) {
      for (auto& r : core->records) record_.tasks.push_back(std::move(r));
      for (auto& p : core->phases) record_.phases.push_back(std::move(p));
    }
    std::sort(record_.tasks.begin(), record_.tasks.end(),
              [](const TaskRecord& a, const TaskRecord& b) { return a.task_id < b.task_id; });
  }
  return std::move(record_);
}

}  // namespace pypto::chip
