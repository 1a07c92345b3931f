#include "launch/reachable_address.h"

#include <gtest/gtest.h>

#include "pypto/error.h"

namespace pypto::launch {
namespace {

TEST(ReachableAddress, LoopbackNamesAreLocal) {
  EXPECT_TRUE(is_local_host("localhost"));
  EXPECT_TRUE(is_local_host("127.0.0.1"));
  EXPECT_FALSE(is_local_host("name-that-does-not-resolve.invalid"));
}

TEST(ReachableAddress, NeverAdvertisesLoopbackWhenAnotherAddressExists) {
  const std::string address = reachable_address({});
  // Either a real interface address, or 127.0.0.1 on a machine with only loopback up.
  EXPECT_FALSE(address.empty());
  if (address != "127.0.0.1") EXPECT_TRUE(is_local_host(address)) << address;
}

TEST(ReachableAddress, SkipsLocalAndUnresolvablePeers) {
  EXPECT_EQ(reachable_address({"localhost", "127.0.0.1", "name-that-does-not-resolve.invalid"}),
            reachable_address({}));
}

TEST(ReachableAddress, EndpointKinds) {
  EXPECT_TRUE(endpoint_is_wildcard("tcp://0.0.0.0:5555"));
  EXPECT_TRUE(endpoint_is_wildcard("tcp://*:*"));
  EXPECT_TRUE(endpoint_is_wildcard("tcp://[::]:7"));
  EXPECT_FALSE(endpoint_is_wildcard("tcp://198.18.0.10:5555"));
  EXPECT_TRUE(endpoint_is_loopback("tcp://127.0.0.1:*"));
  EXPECT_TRUE(endpoint_is_loopback("tcp://localhost:5555"));
  EXPECT_TRUE(endpoint_is_loopback("tcp://[::1]:5555"));
  EXPECT_FALSE(endpoint_is_loopback("tcp://0.0.0.0:5555"));
}

}  // namespace
}  // namespace pypto::launch
