#include "coordinator/critical_path.h"

#include <algorithm>
#include <map>
#include <optional>

namespace pypto::coord {

namespace {

// Steps end at `end` and are added walking backwards; an empty one is dropped
// and one that continues the previous step of the same task is merged into it.
void add(std::vector<CriticalStep>& steps, CriticalStep step) {
  if (step.end_ns <= step.start_ns) return;
  if (!steps.empty()) {
    CriticalStep& last = steps.back();
    if (last.kind == step.kind && last.rank == step.rank && last.dispatch == step.dispatch &&
        last.what == step.what && last.start_ns == step.end_ns) {
      last.start_ns = step.start_ns;
      return;
    }
  }
  steps.push_back(std::move(step));
}

std::string task_name(const TimelineTask& t) {
  return t.kernel + " (task " + std::to_string(t.task_id) + ")";
}

}  // namespace

std::vector<CriticalStep> critical_path(const RunTimeline& run,
                                        const std::map<CommOpRef, CommOpRef>& releases) {
  std::vector<CriticalStep> steps;
  std::optional<size_t> current;
  for (size_t i = 0; i < run.dispatches.size(); ++i)
    if (run.dispatches[i].level > 0 &&
        (!current || run.dispatches[i].end_ns > run.dispatches[*current].end_ns))
      current = i;
  if (!current) return steps;

  size_t d = *current;
  int64_t t = run.dispatches[d].end_ns;
  // Every step moves t back or jumps to an earlier notify; the bound is a guard.
  for (int guard = 0; guard < 100000; ++guard) {
    const TimelineDispatch& disp = run.dispatches[d];
    const TimelineTask* task = nullptr;
    for (const TimelineTask& x : disp.tasks)
      if (x.core_id >= 0 && x.start_ns < t &&
          (!task || std::min(x.end_ns, t) > std::min(task->end_ns, t)))
        task = &x;
    if (!task || task->end_ns <= disp.begin_ns) {
      add(steps, {CriticalStep::Kind::kIdle, disp.rank, disp.index,
                  "no task running (dispatch start, orchestration)", disp.begin_ns, t});
      // The same rank's previous dispatch, if one ended before this one began.
      std::optional<size_t> previous;
      for (size_t i = 0; i < run.dispatches.size(); ++i) {
        const TimelineDispatch& p = run.dispatches[i];
        if (i != d && p.level > 0 && p.rank == disp.rank && p.end_ns <= disp.begin_ns &&
            (!previous || p.end_ns > run.dispatches[*previous].end_ns))
          previous = i;
      }
      if (!previous) break;
      add(steps, {CriticalStep::Kind::kBetweenDispatches, disp.rank, disp.index,
                  "between dispatches (control plane)", run.dispatches[*previous].end_ns,
                  disp.begin_ns});
      d = *previous;
      t = run.dispatches[d].end_ns;
      continue;
    }
    const int64_t task_end = std::min(task->end_ns, t);
    add(steps, {CriticalStep::Kind::kIdle, disp.rank, disp.index,
                "no task running (scheduling)", task_end, t});
    t = task_end;
    // The last wait of this task that returned by t because a notify came while it waited.
    std::optional<CommOpRef> blocked_on;
    const TimelineCommOp* wait = nullptr;
    for (size_t i = 0; i < disp.comm_ops.size(); ++i) {
      const TimelineCommOp& op = disp.comm_ops[i];
      if (op.kind != "wait" || op.task_id != task->task_id || op.end_ns > t) continue;
      auto it = releases.find({d, i});
      if (it == releases.end()) continue;
      const TimelineCommOp& n = run.comm_op(it->second);
      if (n.start_ns <= op.start_ns) continue;  // already there when the wait began
      if (!wait || op.end_ns > wait->end_ns) {
        wait = &op;
        blocked_on = it->second;
      }
    }
    if (!wait) {
      add(steps, {CriticalStep::Kind::kTask, disp.rank, disp.index, task_name(*task),
                  task->start_ns, t});
      t = task->start_ns;
      continue;
    }
    add(steps, {CriticalStep::Kind::kTask, disp.rank, disp.index, task_name(*task), wait->end_ns,
                t});
    const TimelineDispatch& nd = run.dispatches[blocked_on->first];
    const TimelineCommOp& n = run.comm_op(*blocked_on);
    add(steps, {CriticalStep::Kind::kWaitRelease, disp.rank, disp.index,
                wait->label() + " released by rank " + std::to_string(nd.rank) + "'s notify",
                n.start_ns, wait->end_ns});
    d = blocked_on->first;
    t = n.start_ns;
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

}  // namespace pypto::coord
