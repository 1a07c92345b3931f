// The C++ API of the L3 runtime: one DistributedWorker launch serves several
// programs (registered with extra_compiled) and many runs, submit() keeps at
// most two runs in flight, close() drains in order.
#include "pypto/distributed_worker.h"

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
  call(program, args);  // finds pypto-rank through $PYPTO_RANK, as pypto-coord does
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

TEST_F(DistributedWorkerTest, ResidentTensorsStayInTheAgentsAcrossRuns) {
  // allreduce_w2: y[r] = x[0] + x[1] on both ranks.
  const DistributedCompiledProgram program =
      DistributedCompiledProgram::from_dir(copy_fixture("l3/allreduce_w2", "worker_resident"));
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = kRankBin;
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);
  std::vector<Tensor> golden = golden_args(program);
  const std::vector<float> expected =
      f32_values(read_npy(GoldenSpec::expected_path(program.dir(), "y")));

  ResidentTensor x = worker->alloc_stacked_tensor(DType::kF32, {1, 256});
  ResidentTensor y = worker->alloc_stacked_tensor(DType::kF32, {1, 256});
  EXPECT_EQ(x.shape(), (Shape{2, 1, 256}));
  EXPECT_EQ(x.layout(), ResidentLayout::kStacked);
  Tensor y_host = Tensor::empty(DType::kF32, {2, 1, 256});
  worker->copy_from(y, y_host);  // allocated zero-filled
  EXPECT_EQ(f32_values(y_host), std::vector<float>(512, 0.0f));

  worker->copy_to(x, golden[0]);
  // x resident, y a host tensor: y comes back, x is not shipped.
  std::vector<RunArgument> args{x, Tensor::empty(DType::kF32, {2, 1, 256})};
  worker->run(program, args);
  EXPECT_EQ(f32_values(std::get<Tensor>(args[1])), expected);

  // Both resident, three runs: nothing comes back until copy_from.
  std::vector<RunArgument> resident_args{x, y};
  for (int i = 0; i < 3; ++i) worker->run(program, resident_args);
  worker->copy_from(y, y_host);
  EXPECT_EQ(f32_values(y_host), expected);

  // Changed data in a resident tensor is what the next run sees.
  Tensor doubled = golden[0].contiguous();
  for (int64_t i = 0; i < doubled.numel(); ++i) doubled.data_as<float>()[i] *= 2;
  worker->copy_to(x, doubled);
  worker->submit(program, resident_args).wait();
  worker->copy_from(y, y_host);
  std::vector<float> twice = expected;
  for (float& v : twice) v *= 2;
  EXPECT_EQ(f32_values(y_host), twice);

  // A replicated tensor may feed an In parameter: every rank holds all of it.
  ResidentTensor x_everywhere = worker->alloc_tensor(DType::kF32, {2, 1, 256});
  worker->copy_to(x_everywhere, golden[0]);
  std::vector<RunArgument> replicated_args{x_everywhere, y};
  worker->run(program, replicated_args);
  worker->copy_from(y, y_host);
  EXPECT_EQ(f32_values(y_host), expected);

  auto expect_usage = [](auto&& call, const std::string& fragment) {
    try {
      call();
      ADD_FAILURE() << "expected UsageError containing: " << fragment;
    } catch (const UsageError& e) {
      EXPECT_TRUE(contains(e.what(), fragment)) << e.what();
    }
  };
  // ... but not an Out one: which rank's copy would be the result?
  std::vector<RunArgument> written{x, x_everywhere};
  expect_usage([&] { worker->run(program, written); }, "which dispatches may only read, but");
  ResidentTensor small = worker->alloc_stacked_tensor(DType::kF32, {1, 128});
  std::vector<RunArgument> wrong_shape{small, y};
  expect_usage([&] { worker->run(program, wrong_shape); }, "argument 'x' must be f32[2, 1, 256]");
  expect_usage([&] { worker->copy_to(small, golden[0]); }, "differ in dtype or shape");
  ResidentTensor ints = worker->alloc_stacked_tensor(DType::kI32, {1, 256});
  std::vector<RunArgument> wrong_dtype{ints, y};
  expect_usage([&] { worker->run(program, wrong_dtype); }, "must be f32[2, 1, 256], given resident i32");
  worker->free(small);
  expect_usage([&] { worker->copy_from(small, y_host); }, "was freed");
  std::vector<RunArgument> freed{x, small};
  expect_usage([&] { worker->run(program, freed); }, "was freed");
  expect_usage([&] { worker->copy_to(ResidentTensor(), golden[0]); }, "an empty ResidentTensor");

  // The worker still works after refused calls.
  worker->run(program, resident_args);
  worker->copy_from(y, y_host);
  EXPECT_EQ(f32_values(y_host), twice);
  worker->close();
  // A closed worker's tensors are gone with its agents.
  EXPECT_THROW(worker->copy_from(y, y_host), UsageError);
  EXPECT_TRUE(survivors(tag_).empty());
}

TEST_F(DistributedWorkerTest, AResidentTensorOfAnotherWorkerOrAFailedWorkerIsRefused) {
  const DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(
      copy_fixture("l3_broken/kernel_error_w4", "worker_resident_failed"));
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = kRankBin;
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);
  std::vector<Tensor> args = golden_args(program);
  ResidentTensor x = worker->alloc_stacked_tensor(args[0].dtype(),
                                                  Shape(args[0].shape().begin() + 1, args[0].shape().end()));
  worker->copy_to(x, args[0]);

  // A second worker's agents do not hold it.
  const DistributedCompiledProgram other =
      DistributedCompiledProgram::from_dir(copy_fixture("l3/allreduce_w2", "worker_resident_other"));
  std::unique_ptr<DistributedWorker> second = DistributedWorker::prepare(other, options);
  Tensor host = Tensor::empty(x.dtype(), x.shape());
  try {
    second->copy_from(x, host);
    ADD_FAILURE() << "another worker's tensor was accepted";
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "belongs to another DistributedWorker")) << e.what();
  }
  second->close();

  // A failed run stops the job: the resident tensors went with it, and every later
  // call says why.
  std::vector<RunArgument> run_args{x};
  for (size_t i = 1; i < args.size(); ++i) run_args.push_back(args[i]);
  EXPECT_THROW(worker->run(program, run_args), KernelRuntimeError);
  EXPECT_THROW(worker->copy_from(x, host), KernelRuntimeError);
  worker.reset();
  EXPECT_TRUE(survivors(tag_).empty());
}

}  // namespace
}  // namespace pypto::e2e
