#include "common/boot_id.h"

#include <gtest/gtest.h>

namespace pypto {
namespace {

TEST(BootIdTest, IsTheKernelsUuidAndTheSameEveryTime) {
  const std::string id = kernel_boot_id();
  ASSERT_EQ(id.size(), 36u) << id;  // a UUID: 8-4-4-4-12 hex digits
  EXPECT_EQ(id[8], '-');
  EXPECT_EQ(id.find('\n'), std::string::npos);
  EXPECT_EQ(kernel_boot_id(), id);
}

}  // namespace
}  // namespace pypto
