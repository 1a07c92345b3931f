#include "rank_agent/one_sided_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/scoped_env.h"

namespace pypto::rank {
namespace {

std::string value_of(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "(unset)";
}

TEST(OneSidedEnv, OutsideOpenMpiChangesNothing) {
  testing_support::ScopedEnv env;
  env.unset("OMPI_COMM_WORLD_SIZE");
  env.unset("OMPI_COMM_WORLD_LOCAL_SIZE");
  env.unset("OMPI_MCA_osc");
  const OneSidedChoice choice = choose_one_sided_component();
  EXPECT_FALSE(choice.spans_nodes);
  EXPECT_FALSE(choice.configured);
  EXPECT_EQ(value_of("OMPI_MCA_osc"), "(unset)");
}

TEST(OneSidedEnv, OneNodeKeepsOpenMpiDefaults) {
  testing_support::ScopedEnv env;
  env.set("OMPI_COMM_WORLD_SIZE", "8");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "8");
  env.unset("OMPI_MCA_osc");
  const OneSidedChoice choice = choose_one_sided_component();
  EXPECT_FALSE(choice.spans_nodes);
  EXPECT_FALSE(choice.configured);
  EXPECT_EQ(value_of("OMPI_MCA_osc"), "(unset)");
  EXPECT_NE(choice.note.find("shared memory"), std::string::npos) << choice.note;
}

TEST(OneSidedEnv, JobAcrossNodesGetsSharedMemoryAndUcx) {
  testing_support::ScopedEnv env;
  env.set("OMPI_COMM_WORLD_SIZE", "8");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
  env.unset("OMPI_MCA_osc");
  env.unset("OMPI_MCA_opal_common_ucx_tls");
  env.unset("OMPI_MCA_osc_ucx_tls");
  const OneSidedChoice choice = choose_one_sided_component();
  EXPECT_TRUE(choice.spans_nodes);
  EXPECT_TRUE(choice.configured);
  EXPECT_EQ(value_of("OMPI_MCA_osc"), "sm,ucx");
  EXPECT_EQ(value_of("OMPI_MCA_opal_common_ucx_tls"), "any");
}

TEST(OneSidedEnv, UsersChoiceWins) {
  testing_support::ScopedEnv env;
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  env.set("OMPI_MCA_osc", "pt2pt");
  env.unset("OMPI_MCA_opal_common_ucx_tls");
  const OneSidedChoice choice = choose_one_sided_component();
  EXPECT_TRUE(choice.spans_nodes);
  EXPECT_FALSE(choice.configured);
  EXPECT_EQ(value_of("OMPI_MCA_osc"), "pt2pt");
  EXPECT_EQ(value_of("OMPI_MCA_opal_common_ucx_tls"), "(unset)");
  EXPECT_NE(choice.note.find("OMPI_MCA_osc=pt2pt was set by the user"), std::string::npos)
      << choice.note;
}

TEST(OneSidedEnv, UsersTransportListWins) {
  testing_support::ScopedEnv env;
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  env.unset("OMPI_MCA_osc");
  env.set("OMPI_MCA_opal_common_ucx_tls", "tcp,self");
  choose_one_sided_component();
  EXPECT_EQ(value_of("OMPI_MCA_osc"), "sm,ucx");
  EXPECT_EQ(value_of("OMPI_MCA_opal_common_ucx_tls"), "tcp,self");
}

}  // namespace
}  // namespace pypto::rank
