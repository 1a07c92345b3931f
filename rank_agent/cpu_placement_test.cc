#include "rank_agent/cpu_placement.h"

#include <gtest/gtest.h>

#include "pypto/error.h"
#include "tests/scoped_env.h"

namespace pypto::rank {
namespace {

using Cpus = std::vector<int>;

TEST(CpuShareTest, MoreRanksThanCpusTakeOneEachRoundRobin) {
  const Cpus two{0, 1};
  for (int r = 0; r < 8; ++r) EXPECT_EQ(cpu_share(r, 8, two), Cpus{r % 2}) << r;
  EXPECT_EQ(cpu_share(2, 3, Cpus{4, 6}), Cpus{4});
}

TEST(CpuShareTest, FewerRanksSplitTheCpusIntoBalancedContiguousShares) {
  EXPECT_EQ(cpu_share(0, 2, Cpus{0, 1}), Cpus{0});
  EXPECT_EQ(cpu_share(1, 2, Cpus{0, 1}), Cpus{1});
  EXPECT_EQ(cpu_share(0, 1, Cpus{0, 1, 2}), (Cpus{0, 1, 2}));
  const Cpus eight{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(cpu_share(0, 3, eight), (Cpus{0, 1}));
  EXPECT_EQ(cpu_share(1, 3, eight), (Cpus{2, 3, 4}));
  EXPECT_EQ(cpu_share(2, 3, eight), (Cpus{5, 6, 7}));
}

TEST(CpuShareTest, NoShareForBadArguments) {
  EXPECT_TRUE(cpu_share(0, 2, {}).empty());
  EXPECT_TRUE(cpu_share(2, 2, Cpus{0, 1}).empty());
  EXPECT_TRUE(cpu_share(-1, 2, Cpus{0, 1}).empty());
}

TEST(PlaceOnCpusTest, LeavesTheProcessAloneWhenToldOrNotUnderMpirun) {
  testing_support::ScopedEnv env;
  env.set("PYPTO_CPU_PLACEMENT", "none");
  EXPECT_EQ(place_on_cpus(), "PYPTO_CPU_PLACEMENT=none: left unbound");
  env.unset("PYPTO_CPU_PLACEMENT");
  env.unset("OMPI_COMM_WORLD_LOCAL_RANK");
  env.unset("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_EQ(place_on_cpus(), "no local rank from mpirun: left unbound");
}

TEST(PlaceOnCpusTest, AnUnknownModeIsAUsageErrorNamingTheChoices) {
  testing_support::ScopedEnv env;
  env.set("PYPTO_CPU_PLACEMENT", "spread");
  try {
    place_on_cpus();
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("PYPTO_CPU_PLACEMENT is 'spread'; it must be 'auto'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pypto::rank
