// A host program using the installed C++ SDK (docs/cpp-api.md): loads the L3
// build of examples/allreduce.ptl, prepares a worker (the rank agents start
// once), runs the program twice with different inputs and checks every rank's
// output against the sum computed here.
//
//   pypto-compile examples/allreduce.ptl -o out/allreduce --world 8
//   out/cpp/allreduce_host out/allreduce
#include <pypto/pypto.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

namespace {

// x[r][0][i] for run `round`: different on every rank, element and run.
float input_value(int64_t rank, int64_t i, int round) {
  return static_cast<float>(rank * 100 + i % 17) * 0.25f + static_cast<float>(round);
}

// How many elements of y differ from the sum over ranks of x.
int64_t mismatches(const pypto::Tensor& x, const pypto::Tensor& y) {
  const int64_t world = x.shape()[0];
  const int64_t size = x.numel() / world;
  const float* in = x.data_as<float>();
  const float* out = y.data_as<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < size; ++i) {
    float sum = 0;
    for (int64_t r = 0; r < world; ++r) sum += in[r * size + i];
    for (int64_t r = 0; r < world; ++r)
      if (std::fabs(out[r * size + i] - sum) > 1e-3f * (1 + std::fabs(sum))) ++wrong;
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BUILD_DIR  (an L3 build of examples/allreduce.ptl)\n", argv[0]);
    return 2;
  }
  try {
    const auto program = pypto::DistributedCompiledProgram::from_dir(argv[1]);
    const std::vector<pypto::ParamInfo>& params = program.params();
    if (params.size() != 2 || params[0].name != "x" || params[1].name != "y") {
      std::fprintf(stderr, "%s is not a build of examples/allreduce.ptl (parameters: %s)\n",
                   argv[1], pypto::param_names(params).c_str());
      return 2;
    }

    std::unique_ptr<pypto::DistributedWorker> worker = pypto::DistributedWorker::prepare(program);
    for (int round = 0; round < 2; ++round) {
      std::vector<pypto::Tensor> args = {pypto::Tensor::empty(params[0].dtype, params[0].shape),
                                         pypto::Tensor::empty(params[1].dtype, params[1].shape)};
      const int64_t world = params[0].shape[0];
      const int64_t size = args[0].numel() / world;
      float* x = args[0].data_as<float>();
      for (int64_t r = 0; r < world; ++r)
        for (int64_t i = 0; i < size; ++i) x[r * size + i] = input_value(r, i, round);

      const pypto::DistributedRunResult result = worker->run(program, args);
      const int64_t wrong = mismatches(args[0], args[1]);
      std::printf("run %d: %lld ranks, %zu dispatches in %.1f ms, %lld of %lld outputs wrong\n",
                  round + 1, static_cast<long long>(world), result.dispatches.size(),
                  result.wall_ms, static_cast<long long>(wrong),
                  static_cast<long long>(args[1].numel()));
      if (wrong) return 1;
    }
    worker->close();
    std::printf("allreduce_host: both runs match the sums computed on the host\n");
    return 0;
  } catch (const pypto::Error& e) {
    std::fprintf(stderr, "allreduce_host: %s\n", e.what());
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_host: %s\n", e.what());
    return 3;
  }
}
