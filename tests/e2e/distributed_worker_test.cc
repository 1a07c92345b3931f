// The C++ API of the L3 runtime: one DistributedWorker launch serves several
// programs (registered with extra_compiled) and many runs, submit() keeps at
// most two runs in flight, close() drains in order.
#include "coordinator/distributed_worker.h"

#include <gtest/gtest.h>

#include <thread>

#include "coordinator/program_inputs.h"
#include "tests/e2e/l3_util.h"
#include "tests/scoped_env.h"

namespace pypto::e2e {
namespace {

// Host arguments from golden/inputs, outputs allocated.
std::vector<Tensor> golden_args(const DistributedCompiledProgram& program) {
  return coord::prepare_arguments(program, {}).tensors;
}

void expect_golden(const DistributedCompiledProgram& program, const std::vector<Tensor>& args) {
  for (size_t i = 0; i < program.params().size(); ++i) {
    const ParamInfo& param = program.params()[i];
    if (!param.is_output()) continue;
    const Tensor expected = read_npy(GoldenSpec::expected_path(program.dir(), param.name));
    EXPECT_EQ(f32_values(args[i]), f32_values(expected))
        << program.dir() << ": output " << param.name;
  }
}

class DistributedWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One tag per test: ctest runs the tests of this suite in parallel.
    tag_ = std::string("worker_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (const std::string& entry : l3_env(tag_)) {
      const size_t eq = entry.find('=');
      env_.set(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  testing_support::ScopedEnv env_;
  std::string tag_;
};

TEST_F(DistributedWorkerTest, OneLaunchRunsSeveralProgramsManyTimes) {
  std::vector<DistributedCompiledProgram> programs;
  for (const std::string& fixture : {"l3/allreduce_w8", "l3/ring_shift_w8", "l3/mpmd_w8",
                                     "l3/allreduce_w8_edited"}) {
    programs.push_back(DistributedCompiledProgram::from_dir(
        copy_fixture(fixture, "worker_" + fs::path(fixture).filename().string())));
  }
  std::vector<const DistributedCompiledProgram*> extra;
  for (size_t i = 1; i < programs.size(); ++i) extra.push_back(&programs[i]);

  DistributedWorkerOptions options;
  options.mpirun.rank_binary = kRankBin;
  std::unique_ptr<DistributedWorker> worker =
      DistributedWorker::prepare(programs[0], options, extra);
  EXPECT_EQ(worker->world(), 8);
  EXPECT_EQ(worker->prepare_report().ranks.size(), 8u);

  for (const DistributedCompiledProgram& program : programs) {
    std::vector<Tensor> args = golden_args(program);
    const DistributedRunResult result = worker->run(program, args);
    EXPECT_FALSE(result.dispatches.empty());
    expect_golden(program, args);
  }

  // Three submits: the third waits for the first; all complete, in order.
  std::vector<RunHandle> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(worker->submit(programs[0], golden_args(programs[0])));
  EXPECT_TRUE(handles[0].done());  // the third submit had to wait for it
  for (RunHandle& handle : handles) {
    handle.wait();
    expect_golden(programs[0], handle.args());
  }

  // A program the worker was not prepared with is refused, not shipped behind its back.
  const DistributedCompiledProgram other =
      DistributedCompiledProgram::from_dir(copy_fixture("l3/allreduce_w2", "worker_other"));
  std::vector<Tensor> other_args = golden_args(other);
  EXPECT_THROW(worker->run(other, other_args), UsageError);

  worker->close();
  EXPECT_TRUE(survivors(tag_).empty());
}

TEST_F(DistributedWorkerTest, WindowsPersistAcrossRunsUnlessReset) {
  // Each run adds every rank's x into every rank's window `total` and returns it.
  const DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(
      copy_fixture("l3/accumulate_w2", "worker_accumulate"));
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = kRankBin;
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);
  const std::vector<float> once =
      f32_values(read_npy(GoldenSpec::expected_path(program.dir(), "y")));
  std::vector<float> twice = once;
  for (float& v : twice) v *= 2;

  std::vector<Tensor> args = golden_args(program);
  worker->run(program, args);
  EXPECT_EQ(f32_values(args[1]), once);
  DistributedRunOptions keep;
  keep.reset_windows = false;
  worker->run(program, args, keep);  // the windows still hold the first run's sums
  EXPECT_EQ(f32_values(args[1]), twice);
  worker->run(program, args);  // zeroed first: as a fresh launch
  EXPECT_EQ(f32_values(args[1]), once);
  worker->close();
}

TEST_F(DistributedWorkerTest, CallingTheProgramRunsItOnce) {
  const DistributedCompiledProgram program =
      DistributedCompiledProgram::from_dir(copy_fixture("l3/allreduce_w2", "worker_call"));
  std::vector<Tensor> args = golden_args(program);
  program(args);  // finds pypto-rank through $PYPTO_RANK, as pypto-coord does
  expect_golden(program, args);
  EXPECT_TRUE(survivors(tag_).empty());
}

TEST_F(DistributedWorkerTest, AnIdleWorkerKeepsItsAgents) {
  const DistributedCompiledProgram program =
      DistributedCompiledProgram::from_dir(copy_fixture("l3/allreduce_w2", "worker_idle"));
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = kRankBin;
  options.heartbeat_interval = std::chrono::milliseconds(200);
  options.heartbeat_timeout = std::chrono::milliseconds(1500);  // also the agents' deadline
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);
  // Idle for longer than either side's deadline: the worker's background thread
  // keeps both sides hearing from each other.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  std::vector<Tensor> args = golden_args(program);
  worker->run(program, args);
  expect_golden(program, args);
  // A submitted run completes while the caller does something else.
  RunHandle handle = worker->submit(program, golden_args(program));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(handle.done());
  handle.wait();
  expect_golden(program, handle.args());
  worker->close();
}

TEST_F(DistributedWorkerTest, AFailedRunLeavesTheWorkerFailedAndNothingRunning) {
  const DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(
      copy_fixture("l3_broken/kernel_error_w4", "worker_kernel_error"));
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = kRankBin;
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);
  std::vector<Tensor> args = golden_args(program);
  try {
    worker->run(program, args);
    FAIL() << "the run should fail";
  } catch (const KernelRuntimeError& e) {
    EXPECT_TRUE(contains(e.what(), "rank 2")) << e.what();
  }
  EXPECT_THROW(worker->run(program, args), KernelRuntimeError);  // the first error again
  worker.reset();
  EXPECT_TRUE(survivors(tag_).empty());
}

}  // namespace
}  // namespace pypto::e2e
