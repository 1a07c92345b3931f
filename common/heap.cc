#include "common/heap.h"

#include <malloc.h>

#include <climits>

namespace pypto {

void keep_large_blocks_in_heap(size_t max_block, size_t max_retained) {
  // mallopt takes int: clamp rather than wrap.
  auto as_int = [](size_t v) { return static_cast<int>(v > INT_MAX ? INT_MAX : v); };
  mallopt(M_MMAP_THRESHOLD, as_int(max_block));
  mallopt(M_TRIM_THRESHOLD, as_int(max_retained));
}

}  // namespace pypto
