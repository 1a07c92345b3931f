#include "common/heap.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace pypto {
namespace {

TEST(HeapTest, LargeBlocksComeFromTheHeapAndAreReusedAfterFree) {
  keep_large_blocks_in_heap();
  constexpr size_t kBytes = size_t{16} << 20;
  const size_t mapped_before = mallinfo2().hblkhd;
  void* first = std::malloc(kBytes);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, kBytes);
  EXPECT_EQ(mallinfo2().hblkhd, mapped_before) << "a 16 MiB block was mmapped";
  std::free(first);
  // Still held by the heap, so the next block of that size reuses the faulted-in pages.
  EXPECT_GE(mallinfo2().fordblks, kBytes);
  void* second = std::malloc(kBytes);
  EXPECT_EQ(second, first);
  std::free(second);
}

}  // namespace
}  // namespace pypto
