// WindowSet itself needs mpirun (mpi_comm_test_main.cc); this covers what
// does not: the PYPTO_COMM switch.
#include "rank_agent/window_set.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "pypto/error.h"

namespace pypto::rank {
namespace {

TEST(CommModeTest, Parses) {
  EXPECT_EQ(parse_comm_mode(""), CommMode::kAuto);
  EXPECT_EQ(parse_comm_mode("auto"), CommMode::kAuto);
  EXPECT_EQ(parse_comm_mode("shm"), CommMode::kShm);
  EXPECT_EQ(parse_comm_mode("rma"), CommMode::kRma);
  try {
    parse_comm_mode("RMA");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("use one of auto, shm, rma"), std::string::npos);
  }
}

TEST(CommModeTest, FromEnvironment) {
  setenv("PYPTO_COMM", "rma", 1);
  EXPECT_EQ(comm_mode_from_env(), CommMode::kRma);
  unsetenv("PYPTO_COMM");
  EXPECT_EQ(comm_mode_from_env(), CommMode::kAuto);
  EXPECT_STREQ(comm_path_name(CommPath::kShm), "shm");
}

TEST(MpiThreadTest, FromEnvironment) {
  setenv("PYPTO_MPI_THREAD", "serialized", 1);
  EXPECT_EQ(MpiSession::thread_level_from_env(), MPI_THREAD_SERIALIZED);
  setenv("PYPTO_MPI_THREAD", "lots", 1);
  EXPECT_THROW(MpiSession::thread_level_from_env(), UsageError);
  unsetenv("PYPTO_MPI_THREAD");
  EXPECT_EQ(MpiSession::thread_level_from_env(), MPI_THREAD_MULTIPLE);
}

}  // namespace
}  // namespace pypto::rank
