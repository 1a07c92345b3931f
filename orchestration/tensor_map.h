// Dependency inference over tensor regions, as in PyPTO's tensormap runtime:
// a task that reads a region waits for the last writers of every overlapping
// region (read after write); a task that writes waits for the earlier readers
// (write after read) and writers (write after write) of overlapping regions.
// Accesses are keyed by the tensor's data pointer: views of one tensor share
// it and place themselves with `offset` (kernel_abi.h).
#pragma once

#include <cstdint>
#include <array>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "orchestration/region.h"

namespace pypto::chip {

enum class DepReason { kReadAfterWrite, kWriteAfterRead, kWriteAfterWrite };
const char* dep_reason_name(DepReason reason);

// A task as the map knows it: its id and the ring slot it occupies.
struct TaskRef {
  int64_t id;
  int32_t slot;
};

struct Dependency {
  TaskRef pred;
  int32_t tensor_id;  // id of the predecessor's access region, stable within a dispatch
  DepReason reason;
};

class TensorMap {
 public:
  // `keep_completed`: keep accesses of finished tasks so that the full logical
  // graph is reported (--dep-gen); otherwise they are dropped as soon as seen.
  explicit TensorMap(bool keep_completed) : keep_completed_(keep_completed) {}

  // Records task `task`'s access and appends the dependencies it implies to
  // `deps`. `is_done(pred)` says whether a predecessor already finished.
  // Returns the tensor id given to this access's base tensor.
  int32_t access(TaskRef task, const Region& region, bool reads, bool writes,
                 const std::function<bool(TaskRef)>& is_done, std::vector<Dependency>& deps);

  void clear();

 private:
  struct Access {
    TaskRef task;
    Region region;
    bool writes;
  };
  // Accesses of one base tensor, indexed by the start of their byte interval
  // in size classes (class c: hi - lo <= 2^c), so that finding the accesses
  // overlapping [lo, hi) visits only those starting in (lo - 2^c, hi) per
  // non-empty class: O(classes * log n + overlaps), not O(accesses in flight).
  struct Entry {
    int32_t tensor_id = 0;
    std::array<std::multimap<int64_t, Access>, 64> by_class;
    uint64_t used_classes = 0;  // bit c: by_class[c] may be non-empty
    size_t size = 0;
    size_t sweep_at = 1024;  // drop finished accesses when size reaches this
  };
  bool keep_completed_;
  int32_t next_tensor_id_ = 0;
  std::unordered_map<const void*, Entry> by_base_;
};

}  // namespace pypto::chip
