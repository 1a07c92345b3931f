#include "orchestration/tensor_map.h"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace pypto::chip {

const char* dep_reason_name(DepReason reason) {
  switch (reason) {
    case DepReason::kReadAfterWrite: return "RAW";
    case DepReason::kWriteAfterRead: return "WAR";
    case DepReason::kWriteAfterWrite: return "WAW";
  }
  return "?";
}

namespace {
int size_class(int64_t span) {
  int c = 0;
  while (c < 63 && (int64_t(1) << c) < span) ++c;
  return c;
}
}  // namespace

int32_t TensorMap::access(TaskRef task, const Region& region, bool reads, bool writes,
                          const std::function<bool(TaskRef)>& is_done,
                          std::vector<Dependency>& deps) {
  auto [it, inserted] = by_base_.try_emplace(region.base);
  Entry& entry = it->second;
  if (inserted) entry.tensor_id = next_tensor_id_++;
  if (region.empty()) return entry.tensor_id;  // touches nothing: no edge either way

  const size_t first_dep = deps.size();
  for (uint64_t classes = entry.used_classes; classes != 0; classes &= classes - 1) {
    const int cls = __builtin_ctzll(classes);
    auto& index = entry.by_class[cls];
    const int64_t reach = int64_t(1) << cls;
    auto a_it = index.lower_bound(region.lo > INT64_MIN + reach ? region.lo - reach : INT64_MIN);
    while (a_it != index.end() && a_it->first < region.hi) {
      Access& a = a_it->second;
      if (!keep_completed_ && is_done(a.task)) {  // imposes no wait, not reported
        a_it = index.erase(a_it);
        --entry.size;
        continue;
      }
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
      if (writes && a.region.covered_by(region)) {
        a_it = index.erase(a_it);
        --entry.size;
        continue;
      }
      ++a_it;
    }
    if (index.empty()) entry.used_classes &= ~(uint64_t(1) << cls);
  }
  // Report in submission order, as a linear scan would.
  std::stable_sort(deps.begin() + static_cast<std::ptrdiff_t>(first_dep), deps.end(),
                   [](const Dependency& x, const Dependency& y) { return x.pred.id < y.pred.id; });

  const int cls = size_class(region.hi - region.lo);
  entry.by_class[cls].emplace(region.lo, Access{task, region, writes});
  entry.used_classes |= uint64_t(1) << cls;
  if (++entry.size >= entry.sweep_at && !keep_completed_) {
    // Accesses nobody overlaps again are never visited by a lookup: sweep the
    // finished ones now and then (amortized O(1) per access).
    for (auto& index : entry.by_class) {
      for (auto a_it = index.begin(); a_it != index.end();) {
        if (is_done(a_it->second.task)) {
          a_it = index.erase(a_it);
          --entry.size;
        } else {
          ++a_it;
        }
      }
    }
    entry.sweep_at = std::max<size_t>(1024, 2 * entry.size);
  }
  return entry.tensor_id;
}

void TensorMap::clear() {
  by_base_.clear();
  next_tensor_id_ = 0;
}

}  // namespace pypto::chip
