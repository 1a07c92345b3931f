// Large buffers of a long-lived process reuse memory already faulted in.
//
// glibc serves big allocations with fresh mmap()s and returns them to the
// kernel on free, so every dispatch that allocates a 16 MiB tensor (or
// receives a 16 MiB ZeroMQ frame) pays a page fault per 4 KiB page, ~10 us each
// here: tens of milliseconds per dispatch (docs/performance.md). Keeping large
// blocks in the heap after free lets the next dispatch of the same size reuse
// them, with no first-touch faults.
#pragma once

#include <cstddef>

namespace pypto {

// Call once at startup, before large allocations. Blocks up to `max_block` are
// taken from the heap and kept there after free (the heap is trimmed only when
// more than `max_retained` is free at its top).
void keep_large_blocks_in_heap(size_t max_block = size_t{1} << 30,
                               size_t max_retained = size_t{2} << 30);

}  // namespace pypto
