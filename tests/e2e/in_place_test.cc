// In-place windows end to end: a user program that places a tensor in a
// window (`at`) next to the library's in-place collectives, compiled with the
// real pypto-compile, run and validated by pypto-coord at an odd world; then
// one prepared DistributedWorker runs it again and again on persistent
// windows (reset_windows = false), one run at a time and two in flight, with
// new inputs, and every result is compared with a direct computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "coordinator/program_inputs.h"
#include "pypto/distributed_worker.h"
#include "tests/e2e/l3_util.h"
#include "tests/scoped_env.h"

namespace pypto::e2e {
namespace {

// total (out, in window acc) is what acc holds once x is added into it: x
// after a fresh run, k * x after k runs on kept windows. s is allreduced, g
// gathered (library collectives, in place), m max-reduced around the ring, n
// min-reduced over the mesh.
const char* const kProgram = R"(import "collectives.ptl"
const C = 64
kernel aiv add_into(x: in f32[4, C], acc: window f32[4, C]) {
  store(add(load(acc, [0, 0], [4, C]), load(x, [0, 0], [4, C])), acc, [0, 0])
}
chip accumulate(x: in f32[4, C], total: out f32[4, C] at acc, acc: window f32[4, C]) {
  add_into(x, acc)
}
host main(x: in f32[WORLD, 4, C], total: out f32[WORLD, 4, C], s: inout f32[WORLD, 8, C],
          g: out f32[WORLD, 4 * WORLD, C], m: inout f32[WORLD, 2 * WORLD, C],
          n: inout f32[WORLD, 8, C]) {
  let acc = window_buffer(f32[4, C])
  for r in 0 .. WORLD { accumulate(x[r], total[r], acc) on r }
  allreduce_sum(s)
  allgather(x, g)
  allreduce_ring_max(m)
  allreduce_min(n)
}
)";
constexpr int kWorld = 3;
constexpr int64_t kC = 64;

fs::path compiled(const std::string& name) {
  const fs::path dir = scratch_dir(name);
  const fs::path source = dir.parent_path() / (name + ".ptl");
  spit(source, kProgram);
  CoordResult c = pypto_compile(source, dir, kWorld);
  EXPECT_EQ(c.exit_code, 0) << c.all();
  return dir;
}

TEST(InPlaceTest, AUserProgramWithInPlaceWindowsValidates) {
  const fs::path dir = compiled("in_place_run");
  const auto plan = nlohmann::json::parse(slurp(dir / "orchestration/host_orch.json"));
  EXPECT_EQ(plan["dispatches"][0]["args"][1]["window"], "acc") << plan.dump();
  CoordResult r = coord({"run", dir.string(), "--validate"}, l3_env("in_place_run"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;
  EXPECT_TRUE(survivors("in_place_run").empty());
}

// Element [r][i][j] of a [WORLD, rows, C] tensor.
float at(const Tensor& t, int64_t r, int64_t i, int64_t j) {
  return t.data_as<float>()[(r * t.shape()[1] + i) * kC + j];
}

// The run's outputs against the inputs it was given, computed here; `runs`:
// how many runs added x into the kept window acc.
void expect_results(const std::vector<Tensor>& in, const std::vector<Tensor>& out, int runs) {
  SCOPED_TRACE("after run " + std::to_string(runs) + " on the kept window acc");
  for (int64_t r = 0; r < kWorld; ++r)
    for (int64_t j = 0; j < kC; ++j) {
      for (int64_t i = 0; i < 4; ++i) ASSERT_EQ(at(out[1], r, i, j), runs * at(in[0], r, i, j));
      for (int64_t i = 0; i < 8; ++i) {
        float sum = 0;
        for (int64_t q = 0; q < kWorld; ++q) sum += at(in[2], q, i, j);
        ASSERT_EQ(at(out[2], r, i, j), sum) << "s[" << r << "][" << i << "][" << j << "]";
      }
      for (int64_t q = 0; q < kWorld; ++q)
        for (int64_t i = 0; i < 4; ++i) ASSERT_EQ(at(out[3], r, q * 4 + i, j), at(in[0], q, i, j));
      for (int64_t i = 0; i < 2 * kWorld; ++i) {
        float mx = at(in[4], 0, i, j);
        for (int64_t q = 1; q < kWorld; ++q) mx = std::max(mx, at(in[4], q, i, j));
        ASSERT_EQ(at(out[4], r, i, j), mx) << "m[" << r << "][" << i << "][" << j << "]";
      }
      for (int64_t i = 0; i < 8; ++i) {
        float mn = at(in[5], 0, i, j);
        for (int64_t q = 1; q < kWorld; ++q) mn = std::min(mn, at(in[5], q, i, j));
        ASSERT_EQ(at(out[5], r, i, j), mn) << "n[" << r << "][" << i << "][" << j << "]";
      }
    }
}

// Inputs of round k: the golden inputs, s, m and n shifted by k (exact in f32).
std::vector<Tensor> round_inputs(const DistributedCompiledProgram& program, int k) {
  std::vector<Tensor> args = coord::prepare_arguments(program, {}).tensors;
  for (size_t a : {size_t{2}, size_t{4}, size_t{5}}) {
    float* v = args[a].data_as<float>();
    for (int64_t e = 0; e < args[a].numel(); ++e) v[e] = v[e] * (k + 1) + static_cast<float>(k);
  }
  return args;
}

std::vector<Tensor> copies(const std::vector<Tensor>& args) {
  std::vector<Tensor> out;
  for (const Tensor& t : args) out.push_back(t.contiguous());
  return out;
}

TEST(InPlaceTest, PersistentWindowsKeepDataAcrossRunsOfAPreparedWorker) {
  const std::string tag = "in_place_worker";
  testing_support::ScopedEnv env;
  for (const std::string& entry : l3_env(tag)) {
    const size_t eq = entry.find('=');
    env.set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  const DistributedCompiledProgram program =
      DistributedCompiledProgram::from_dir(compiled("in_place_worker"));
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = kRankBin;
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);

  std::vector<Tensor> args = round_inputs(program, 0);
  std::vector<Tensor> inputs = copies(args);
  worker->run(program, args);  // windows reset first: as a fresh launch
  expect_results(inputs, args, 1);

  DistributedRunOptions keep;
  keep.reset_windows = false;
  for (int k = 1; k <= 2; ++k) {  // acc keeps its sums; the collectives need no reset
    args = round_inputs(program, k);
    inputs = copies(args);
    worker->run(program, args, keep);
    expect_results(inputs, args, k + 1);
  }
  // Two runs in flight: a rank may start the second while a peer is still in
  // the first; the library's closing round keeps them apart.
  std::vector<RunHandle> handles;
  std::vector<std::vector<Tensor>> given;
  for (int k = 3; k <= 4; ++k) {
    given.push_back(round_inputs(program, k));
    handles.push_back(worker->submit(program, copies(given.back()), keep));
  }
  for (size_t h = 0; h < handles.size(); ++h) {
    handles[h].wait();
    expect_results(given[h], handles[h].args(), static_cast<int>(h) + 4);
  }
  args = round_inputs(program, 5);
  inputs = copies(args);
  worker->run(program, args);  // reset again: acc starts from zero
  expect_results(inputs, args, 1);
  // A resident tensor on an in-place argument: the library allreduce of s works in
  // its window, and the result lands back in the resident part, run after run.
  std::vector<Tensor> host = round_inputs(program, 0);
  size_t si = 0;
  while (program.params()[si].name != "s") ++si;
  const Tensor s_in = host[si].contiguous();
  ResidentTensor s = worker->alloc_stacked_tensor(
      DType::kF32, Shape(s_in.shape().begin() + 1, s_in.shape().end()));
  worker->copy_to(s, s_in);
  std::vector<RunArgument> resident_args(host.begin(), host.end());
  resident_args[si] = s;
  const int64_t per_rank = s_in.numel() / kWorld;
  std::vector<float> sum(static_cast<size_t>(per_rank), 0.0f);
  for (int64_t r = 0; r < kWorld; ++r)
    for (int64_t e = 0; e < per_rank; ++e) sum[e] += s_in.data_as<float>()[r * per_rank + e];
  // s, read back, is `factor` times the allreduced sum on every rank.
  auto expect_s = [&](float factor, const std::string& when) {
    SCOPED_TRACE(when);
    Tensor s_out = Tensor::empty(DType::kF32, s_in.shape());
    worker->copy_from(s, s_out);
    for (int64_t r = 0; r < kWorld; ++r)
      for (int64_t e = 0; e < per_rank; ++e) {
        const float want = sum[e] * factor;
        ASSERT_NEAR(s_out.data_as<float>()[r * per_rank + e], want, 1e-5f * (1 + std::abs(want)))
            << "rank " << r << ", element " << e;
      }
  };
  // The part moves into the window on the first run and stays there: the
  // windows' reset before each run keeps it, and the second run reduces the
  // first one's result.
  worker->run(program, resident_args);
  expect_s(1.0f, "after the first resident run");
  worker->run(program, resident_args);
  expect_s(static_cast<float>(kWorld), "after the second resident run");
  // A run with a host tensor in that window moves the part out first, intact.
  std::vector<Tensor> shipped = round_inputs(program, 0);
  worker->run(program, shipped);
  expect_s(static_cast<float>(kWorld), "after a run with a host tensor in s's window");
  // New data written while the part lives in the window is what the next run sees.
  worker->copy_to(s, s_in);
  worker->run(program, resident_args);
  worker->copy_to(s, s_in);
  worker->run(program, resident_args);
  expect_s(1.0f, "after copy_to into the part living in the window");

  worker->close();
  EXPECT_TRUE(survivors(tag).empty());
}

}  // namespace
}  // namespace pypto::e2e
