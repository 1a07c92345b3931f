#include "orchestration/tensor_map.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <set>

namespace pypto::chip {
namespace {

pypto_tensor row_major(const void* data, std::initializer_list<int64_t> shape,
                       std::initializer_list<int64_t> strides, int64_t offset = 0) {
  pypto_tensor v{};
  v.data = const_cast<void*>(data);
  v.dtype = PYPTO_F32;
  v.ndim = static_cast<int32_t>(shape.size());
  v.offset = offset;
  int d = 0;
  for (int64_t s : shape) v.shape[d++] = s;
  d = 0;
  for (int64_t s : strides) v.strides[d++] = s;
  return v;
}

alignas(64) float g_a[64];
alignas(64) float g_b[64];

Region whole(const void* base) { return Region::of(row_major(base, {8, 8}, {8, 1})); }
Region quarter(const void* base, int q) {
  return Region::of(row_major(base, {4, 4}, {8, 1}, (q / 2) * 32 + (q % 2) * 4));
}

// Drives a TensorMap the way submit does, with the set of finished tasks
// under the test's control.
class TensorMapTest : public ::testing::Test {
 protected:
  std::vector<Dependency> read(int64_t task, const Region& r) {
    return access(task, r, true, false);
  }
  std::vector<Dependency> write(int64_t task, const Region& r) {
    return access(task, r, false, true);
  }
  std::vector<Dependency> read_write(int64_t task, const Region& r) {
    return access(task, r, true, true);
  }
  std::vector<Dependency> access(int64_t task, const Region& r, bool reads, bool writes) {
    std::vector<Dependency> deps;
    last_tensor_id = map.access(
        {task, static_cast<int32_t>(task)}, r, reads, writes,
        [this](TaskRef t) { return done.count(t.id) > 0; }, deps);
    return deps;
  }

  TensorMap map{false};
  std::set<int64_t> done;
  int32_t last_tensor_id = -1;
};

void expect_deps(const std::vector<Dependency>& deps,
                 std::initializer_list<std::pair<int64_t, DepReason>> expected) {
  ASSERT_EQ(deps.size(), expected.size());
  size_t i = 0;
  for (const auto& [pred, reason] : expected) {
    EXPECT_EQ(deps[i].pred.id, pred) << "dependency " << i;
    EXPECT_EQ(deps[i].reason, reason) << "dependency " << i;
    ++i;
  }
}

TEST_F(TensorMapTest, ReadAfterWrite) {
  EXPECT_TRUE(write(0, whole(g_a)).empty());
  expect_deps(read(1, whole(g_a)), {{0, DepReason::kReadAfterWrite}});
}

TEST_F(TensorMapTest, WriteAfterRead) {
  EXPECT_TRUE(read(0, whole(g_a)).empty());
  expect_deps(write(1, whole(g_a)), {{0, DepReason::kWriteAfterRead}});
}

TEST_F(TensorMapTest, WriteAfterWrite) {
  write(0, whole(g_a));
  expect_deps(write(1, whole(g_a)), {{0, DepReason::kWriteAfterWrite}});
}

TEST_F(TensorMapTest, ReadsDoNotOrderReads) {
  read(0, whole(g_a));
  EXPECT_TRUE(read(1, whole(g_a)).empty());
}

TEST_F(TensorMapTest, ReadWriteAccessIsOneDependencyPerPredecessor) {
  write(0, whole(g_a));
  expect_deps(read_write(1, whole(g_a)), {{0, DepReason::kReadAfterWrite}});
}

TEST_F(TensorMapTest, NoFalseEdgesBetweenDisjointTiles) {
  for (int q = 0; q < 4; ++q) EXPECT_TRUE(write(q, quarter(g_a, q)).empty()) << q;
  for (int q = 0; q < 4; ++q)
    expect_deps(read(10 + q, quarter(g_a, q)), {{q, DepReason::kReadAfterWrite}});
  // A reader of the whole matrix waits for all four writers.
  const auto deps = read(20, whole(g_a));
  std::set<int64_t> preds;
  for (const auto& d : deps) preds.insert(d.pred.id);
  EXPECT_EQ(preds, (std::set<int64_t>{0, 1, 2, 3}));
}

TEST_F(TensorMapTest, DifferentTensorsAreIndependent) {
  write(0, whole(g_a));
  EXPECT_TRUE(write(1, whole(g_b)).empty());
  EXPECT_TRUE(read(2, whole(g_b)).size() == 1);
}

TEST_F(TensorMapTest, TensorIdsAreStablePerBase) {
  write(0, whole(g_a));
  const int32_t a = last_tensor_id;
  write(1, whole(g_b));
  const int32_t b = last_tensor_id;
  read(2, quarter(g_a, 3));
  EXPECT_EQ(last_tensor_id, a);
  EXPECT_NE(a, b);
  map.clear();
  write(3, whole(g_b));
  EXPECT_EQ(last_tensor_id, 0);  // ids restart after clear()
}

TEST_F(TensorMapTest, ATaskDoesNotDependOnItself) {
  read(0, whole(g_a));
  EXPECT_TRUE(write(0, whole(g_a)).empty());
  expect_deps(read(1, whole(g_a)), {{0, DepReason::kReadAfterWrite}});
}

TEST_F(TensorMapTest, ACoveringWriteSupersedesEarlierAccesses) {
  write(0, whole(g_a));
  read(1, quarter(g_a, 0));
  // Task 2 orders after both; later tasks need only task 2.
  const auto deps = write(2, whole(g_a));
  ASSERT_EQ(deps.size(), 2u);
  expect_deps(read(3, quarter(g_a, 1)), {{2, DepReason::kReadAfterWrite}});
}

TEST_F(TensorMapTest, APartialWriteDoesNotSupersede) {
  write(0, whole(g_a));
  write(1, quarter(g_a, 0));
  // Quarter 3 was last written by task 0 only.
  expect_deps(read(2, quarter(g_a, 3)), {{0, DepReason::kReadAfterWrite}});
  const auto deps = read(3, quarter(g_a, 0));
  std::set<int64_t> preds;
  for (const auto& d : deps) preds.insert(d.pred.id);
  EXPECT_EQ(preds, (std::set<int64_t>{0, 1}));
}

TEST_F(TensorMapTest, FinishedTasksImposeNothing) {
  write(0, whole(g_a));
  done.insert(0);
  EXPECT_TRUE(read(1, whole(g_a)).empty());
}

TEST(TensorMapKeepCompletedTest, FinishedTasksAreStillReported) {
  // --dep-gen keeps finished accesses so deps.json shows the whole graph.
  TensorMap map(true);
  std::vector<Dependency> deps;
  auto all_done = [](TaskRef) { return true; };
  map.access({0, 0}, whole(g_a), false, true, all_done, deps);
  map.access({1, 1}, whole(g_a), true, false, all_done, deps);
  ASSERT_EQ(deps.size(), 1u);
  EXPECT_EQ(deps[0].pred.id, 0);
  EXPECT_EQ(deps[0].reason, DepReason::kReadAfterWrite);
}

TEST(DepReasonTest, Names) {
  EXPECT_STREQ(dep_reason_name(DepReason::kReadAfterWrite), "RAW");
  EXPECT_STREQ(dep_reason_name(DepReason::kWriteAfterRead), "WAR");
  EXPECT_STREQ(dep_reason_name(DepReason::kWriteAfterWrite), "WAW");
}

}  // namespace
}  // namespace pypto::chip
