#include "orchestration/region.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace pypto::chip {
namespace {

// A strided view of `data` (no memory is touched: regions only do arithmetic).
pypto_tensor view(const void* data, int32_t dtype, std::initializer_list<int64_t> shape,
                  std::initializer_list<int64_t> strides, int64_t offset = 0) {
  pypto_tensor v{};
  v.data = const_cast<void*>(data);
  v.dtype = dtype;
  v.ndim = static_cast<int32_t>(shape.size());
  v.offset = offset;
  int d = 0;
  for (int64_t s : shape) v.shape[d++] = s;
  d = 0;
  for (int64_t s : strides) v.strides[d++] = s;
  return v;
}

// Tile (r, c) of size th x tw of a row-major rows x cols f32 matrix.
Region tile(const void* base, int64_t cols, int64_t r, int64_t c, int64_t th, int64_t tw) {
  return Region::of(view(base, PYPTO_F32, {th, tw}, {cols, 1}, r * cols + c));
}

alignas(64) float g_matrix[8 * 8];
alignas(64) float g_other[8 * 8];

TEST(RegionTest, ByteIntervalOfATile) {
  const Region r = tile(g_matrix, 8, 4, 4, 4, 4);  // offset 36
  EXPECT_EQ(r.element_size, 4);
  EXPECT_EQ(r.lo, 36 * 4);
  EXPECT_EQ(r.hi, (36 + 3 * 8 + 3 + 1) * 4);
  EXPECT_FALSE(r.empty());
}

TEST(RegionTest, ElementSizeFollowsDtype) {
  EXPECT_EQ(Region::of(view(g_matrix, PYPTO_F16, {4}, {1})).hi, 8);
  EXPECT_EQ(Region::of(view(g_matrix, PYPTO_I64, {4}, {1})).hi, 32);
  EXPECT_EQ(Region::of(view(g_matrix, PYPTO_U8, {4}, {1})).hi, 4);
}

TEST(RegionTest, TilesOfARowMajorMatrixAreDisjoint) {
  // The 2x2 grid of 4x4 tiles: left and right tiles share rows, so their byte
  // intervals interleave; only the box comparison tells them apart.
  const Region tiles[] = {tile(g_matrix, 8, 0, 0, 4, 4), tile(g_matrix, 8, 0, 4, 4, 4),
                          tile(g_matrix, 8, 4, 0, 4, 4), tile(g_matrix, 8, 4, 4, 4, 4)};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(overlaps(tiles[i], tiles[i])) << i;
    for (int j = 0; j < 4; ++j)
      if (i != j) {
        EXPECT_FALSE(overlaps(tiles[i], tiles[j])) << i << " vs " << j;
      }
  }
  // The intervals of the two top tiles do intersect.
  EXPECT_LT(tiles[1].lo, tiles[0].hi);
}

TEST(RegionTest, ColumnsAsTwoDimensionalViewsAreDisjoint) {
  const Region c0 = tile(g_matrix, 8, 0, 0, 8, 1);
  const Region c1 = tile(g_matrix, 8, 0, 1, 8, 1);
  EXPECT_FALSE(overlaps(c0, c1));
}

TEST(RegionTest, OverlappingSlicesOverlap) {
  // Rows 0-3 and rows 2-5 of the full width.
  EXPECT_TRUE(overlaps(tile(g_matrix, 8, 0, 0, 4, 8), tile(g_matrix, 8, 2, 0, 4, 8)));
  // Tiles offset by one row and one column share a 3x3 block.
  EXPECT_TRUE(overlaps(tile(g_matrix, 8, 0, 0, 4, 4), tile(g_matrix, 8, 1, 1, 4, 4)));
  // 1-D slices [0, 10) and [5, 15) share elements; [0, 10) and [10, 20) do not.
  const Region a = Region::of(view(g_matrix, PYPTO_F32, {10}, {1}, 0));
  const Region b = Region::of(view(g_matrix, PYPTO_F32, {10}, {1}, 5));
  const Region c = Region::of(view(g_matrix, PYPTO_F32, {10}, {1}, 10));
  EXPECT_TRUE(overlaps(a, b));
  EXPECT_TRUE(overlaps(b, a));
  EXPECT_FALSE(overlaps(a, c));
}

TEST(RegionTest, DifferentTensorsNeverOverlap) {
  EXPECT_FALSE(overlaps(tile(g_matrix, 8, 0, 0, 8, 8), tile(g_other, 8, 0, 0, 8, 8)));
}

TEST(RegionTest, EmptyViewsOverlapNothing) {
  const Region empty = Region::of(view(g_matrix, PYPTO_F32, {0, 8}, {8, 1}));
  EXPECT_TRUE(empty.empty());
  EXPECT_FALSE(overlaps(empty, tile(g_matrix, 8, 0, 0, 8, 8)));
  EXPECT_FALSE(overlaps(tile(g_matrix, 8, 0, 0, 8, 8), empty));
}

TEST(RegionTest, DifferentStridesFallBackToTheByteInterval) {
  // Even elements 0,2,4,6 against 1..4: no shared element, but the layouts
  // differ, so the answer is the conservative one.
  const Region even = Region::of(view(g_matrix, PYPTO_F32, {4}, {2}, 0));
  const Region dense = Region::of(view(g_matrix, PYPTO_F32, {4}, {1}, 1));
  EXPECT_TRUE(overlaps(even, dense));
  // A transposed view against a row: conservative as well.
  const Region transposed = Region::of(view(g_matrix, PYPTO_F32, {8, 8}, {1, 8}));
  EXPECT_TRUE(overlaps(transposed, tile(g_matrix, 8, 3, 0, 1, 8)));
  // Disjoint intervals stay disjoint whatever the strides.
  const Region far = Region::of(view(g_matrix, PYPTO_F32, {4}, {1}, 8));
  EXPECT_FALSE(overlaps(even, far));
}

TEST(RegionTest, InterleavedOneDimensionalViewsAreConservative) {
  // Odd elements with stride 2 do not start on a stride boundary: no box
  // decomposition, so even and odd are reported as overlapping.
  const Region even = Region::of(view(g_matrix, PYPTO_F32, {4}, {2}, 0));
  const Region odd = Region::of(view(g_matrix, PYPTO_F32, {4}, {2}, 1));
  EXPECT_TRUE(overlaps(even, odd));
}

TEST(RegionTest, CoveredBy) {
  const Region full = tile(g_matrix, 8, 0, 0, 8, 8);
  const Region t = tile(g_matrix, 8, 4, 4, 4, 4);
  EXPECT_TRUE(t.covered_by(full));
  EXPECT_TRUE(t.covered_by(t));
  EXPECT_FALSE(full.covered_by(t));
  EXPECT_TRUE(tile(g_matrix, 8, 1, 1, 2, 2).covered_by(tile(g_matrix, 8, 0, 0, 4, 4)));
  EXPECT_FALSE(tile(g_matrix, 8, 3, 3, 2, 2).covered_by(tile(g_matrix, 8, 0, 0, 4, 4)));
  // Another tensor, other strides or an empty view: never provably covered.
  EXPECT_FALSE(t.covered_by(tile(g_other, 8, 0, 0, 8, 8)));
  EXPECT_FALSE(Region::of(view(g_matrix, PYPTO_F32, {4}, {2}))
                   .covered_by(Region::of(view(g_matrix, PYPTO_F32, {64}, {1}))));
  EXPECT_FALSE(Region::of(view(g_matrix, PYPTO_F32, {0}, {1})).covered_by(full));
}

}  // namespace
}  // namespace pypto::chip
