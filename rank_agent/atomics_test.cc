#include "rank_agent/atomics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "pypto/error.h"
#include "pypto/kernel_abi.h"
#include "rank_agent/backoff.h"

namespace pypto::rank {
namespace {

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << std::hex << h;
      continue;
    }
    EXPECT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(HalfTest, KnownValuesAndRounding) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(f32_to_f16(1e-8f), 0x0000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
}

#if defined(__FLT16_MAX__)
TEST(HalfTest, MatchesTheCompilersFloat16OnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t x = bits(rng);
    // Mostly the range f16 can hold, some of everything else.
    if (i % 4) x = (x & 0x807fffff) | ((100 + (x >> 24) % 50) << 23);
    const float f = std::bit_cast<float>(x);
    if (std::isnan(f)) continue;
    const _Float16 reference = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &reference, 2);
    ASSERT_EQ(f32_to_f16(f), expected) << std::hexfloat << f;
  }
}
#endif

TEST(Bf16Test, RoundTripAndRounding) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_bf16(f), b) << std::hex << b;
  }
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
}

TEST(AtomicAddTest, EveryDtypeFromManyThreads) {
  constexpr int kThreads = 4, kRounds = 2000;
  alignas(8) unsigned char memory[64] = {};
  auto worker = [&] {
    const int32_t i32 = 3;
    const float f32 = 0.5f;
    const int64_t i64 = int64_t{1} << 33;
    const uint16_t f16 = f32_to_f16(1.0f), bf16 = f32_to_bf16(1.0f);
    const int8_t i8 = -1;
    const int16_t i16 = 2;
    const uint8_t u8 = 1;
    for (int i = 0; i < kRounds; ++i) {
      atomic_add(memory + 0, &i32, 1, DType::kI32);
      atomic_add(memory + 4, &f32, 1, DType::kF32);
      atomic_add(memory + 8, &i64, 1, DType::kI64);
      // Integers stay exact up to 2048 in f16 and 256 in bf16.
      if (i < 256) atomic_add(memory + 16, &f16, 1, DType::kF16);
      if (i < 64) atomic_add(memory + 18, &bf16, 1, DType::kBF16);
      atomic_add(memory + 20, &i8, 1, DType::kI8);
      atomic_add(memory + 22, &i16, 1, DType::kI16);
      atomic_add(memory + 24, &u8, 1, DType::kU8);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  int32_t i32;
  float f32;
  int64_t i64;
  uint16_t f16, bf16;
  int16_t i16;
  std::memcpy(&i32, memory, 4);
  std::memcpy(&f32, memory + 4, 4);
  std::memcpy(&i64, memory + 8, 8);
  std::memcpy(&f16, memory + 16, 2);
  std::memcpy(&bf16, memory + 18, 2);
  std::memcpy(&i16, memory + 22, 2);
  const int n = kThreads * kRounds;
  EXPECT_EQ(i32, 3 * n);
  EXPECT_EQ(f32, 0.5f * n);
  EXPECT_EQ(i64, (int64_t{1} << 33) * n);
  EXPECT_EQ(f16_to_f32(f16), 256.0f * kThreads);
  EXPECT_EQ(bf16_to_f32(bf16), 64.0f * kThreads);
  EXPECT_EQ(static_cast<int8_t>(memory[20]), static_cast<int8_t>(-n));
  EXPECT_EQ(i16, 2 * n);
  EXPECT_EQ(memory[24], static_cast<uint8_t>(n));
}

TEST(AtomicAddTest, SeveralElementsAndUnalignedSource) {
  alignas(4) float dst[3] = {1, 2, 3};
  unsigned char src[13];
  const float add[3] = {10, 20, 30};
  std::memcpy(src + 1, add, 12);
  atomic_add(dst, src + 1, 3, DType::kF32);
  EXPECT_EQ(dst[0], 11);
  EXPECT_EQ(dst[1], 22);
  EXPECT_EQ(dst[2], 33);
}

TEST(AtomicAddTest, BoolIsRefused) {
  bool b = false, one = true;
  EXPECT_THROW(atomic_add(&b, &one, 1, DType::kBool), ProgramError);
  EXPECT_TRUE(atomic_add_unsupported(DType::kBool).has_value());
  EXPECT_FALSE(atomic_add_unsupported(DType::kF16).has_value());
}

TEST(CompareTest, AllSix) {
  EXPECT_TRUE(compare(3, PYPTO_CMP_EQ, 3));
  EXPECT_FALSE(compare(3, PYPTO_CMP_NE, 3));
  EXPECT_TRUE(compare(4, PYPTO_CMP_GT, 3));
  EXPECT_TRUE(compare(3, PYPTO_CMP_GE, 3));
  EXPECT_TRUE(compare(-1, PYPTO_CMP_LT, 0));
  EXPECT_FALSE(compare(1, PYPTO_CMP_LE, 0));
  EXPECT_FALSE(compare(0, 42, 0));
  EXPECT_STREQ(cmp_name(PYPTO_CMP_GE), "ge");
  EXPECT_EQ(cmp_name(6), nullptr);
}

TEST(BackoffTest, SpinsThenYieldsThenSleepsUpToTheCap) {
  Backoff backoff({.spins = 2,
                   .yields = 2,
                   .first_sleep = std::chrono::microseconds(10),
                   .max_sleep = std::chrono::microseconds(40)});
  EXPECT_FALSE(backoff.past_spin());
  backoff.pause();
  backoff.pause();
  EXPECT_TRUE(backoff.past_spin());
  for (int i = 0; i < 2; ++i) backoff.pause();  // yields
  EXPECT_EQ(backoff.current_sleep(), std::chrono::microseconds(10));
  for (int i = 0; i < 5; ++i) backoff.pause();
  EXPECT_EQ(backoff.current_sleep(), std::chrono::microseconds(40));
}

}  // namespace
}  // namespace pypto::rank
