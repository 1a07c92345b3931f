#include "orchestration/tensor_map.h"

#include <algorithm>

namespace pypto::chip {

const char* dep_reason_name(DepReason reason) {
  switch (reason) {
    case DepReason::kReadAfterWrite: return "RAW";
    case DepReason::kWriteAfterRead: return "WAR";
    case DepReason::kWriteAfterWrite: return "WAW";
  }
  return "?";
}

int32_t TensorMap::access(TaskRef task, const Region& region, bool reads, bool writes,
                          const std::function<bool(TaskRef)>& is_done,
                          std::vector<Dependency>& deps) {
  auto [it, inserted] = by_base_.try_emplace(region.base);
  Entry& entry = it->second;
  if (inserted) entry.tensor_id = next_tensor_id_++;
  auto& accesses = entry.accesses;

  size_t keep = 0;
  for (size_t i = 0; i < accesses.size(); ++i) {
    Access& a = accesses[i];
    const bool done = is_done(a.task);
    if (done && !keep_completed_) continue;  // drop: imposes no wait, not reported
    if (a.task.id != task.id && overlaps(a.region, region)) {
      if (reads && a.writes)
        deps.push_back({a.task, entry.tensor_id, DepReason::kReadAfterWrite});
      else if (writes && a.writes)
        deps.push_back({a.task, entry.tensor_id, DepReason::kWriteAfterWrite});
      else if (writes && !a.writes)
        deps.push_back({a.task, entry.tensor_id, DepReason::kWriteAfterRead});
    }
    // A write that covers an earlier access supersedes it: later tasks order
    // after this write, which itself orders after that access.
    if (writes && a.region.covered_by(region)) continue;
    if (keep != i) accesses[keep] = std::move(a);
    ++keep;
  }
  accesses.resize(keep);
  accesses.push_back({task, region, writes});
  return entry.tensor_id;
}

void TensorMap::clear() {
  by_base_.clear();
  next_tensor_id_ = 0;
}

}  // namespace pypto::chip
