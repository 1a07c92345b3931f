// ChipWorker: the execute layer's handle on one simulated chip. It runs
// CompiledPrograms (artifact layer descriptions): assembles their sources
// through the binary cache, loads the binaries, runs the orchestration on the
// chip runtime and writes the dispatch's DFX files.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artifact/assembler.h"
#include "artifact/compiled_program.h"
#include "artifact/loaded_binary.h"
#include "common/run_config.h"
#include "common/tensor.h"
#include "orchestration/chip_runtime.h"
#include "orchestration/dispatch_record.h"

namespace pypto {

namespace fs = std::filesystem;

// Where a dispatch runs: rank and windows on L3, defaults on L2.
struct DispatchContext {
  int rank = 0;
  int world = 1;
  // The dispatch's window arguments in argument order (ids index the rank's
  // window set), its scalars, and the comm table kernels reach them through
  // (nullptr: L2's table, where every call fails).
  std::vector<pypto_window> windows;
  // Scalars in the kernel ABI's encoding (ScalarValue::abi_bits); empty on L2:
  // the defaults compiled_meta.json records.
  std::vector<int64_t> scalars;
  const pypto_comm_api* comm = nullptr;
  void* comm_state = nullptr;
  // Where this dispatch's DFX files go; <build>/dfx_outputs when unset (L2).
  std::optional<fs::path> dfx_dir;
  // Host-wide binary store (rank agents); <build>/cache/bin when unset.
  std::optional<fs::path> binary_store;
  // The program's binaries assembled beforehand (a rank agent assembles every
  // source of a build once, when it prepares it): run() then loads these instead
  // of re-checking the binary cache on every dispatch. Must hold every source of
  // the program, built for its platform.
  const AssembledBinaries* binaries = nullptr;
  // Deadline of the dispatch (pypto-coord --timeout); chip::RuntimeConfig's
  // default when unset.
  std::optional<std::chrono::milliseconds> dispatch_timeout;
};

struct ChipRunResult {
  chip::DispatchRecord record;
  std::optional<fs::path> dfx_dir;  // set when a DFX switch was on
  double assemble_ms = 0;
  double run_ms = 0;
};

// Core counts: RunConfig has no field for them (they are not part of PyPTO's
// RunConfig); PYPTO_AIC_CORES / PYPTO_AIV_CORES override the defaults sized
// to the machine.
struct CoreCounts {
  int aic = chip::default_core_count();
  int aiv = chip::default_core_count();
  // chip::RuntimeConfig::idle_spins: rank agents of an oversubscribed host set 0.
  int idle_spins = 64;
  static CoreCounts from_env();
};

class ChipWorker {
 public:
  explicit ChipWorker(const RunConfig& config = RunConfig{}, CoreCounts cores = CoreCounts::from_env());
  ~ChipWorker();
  ChipWorker(const ChipWorker&) = delete;
  ChipWorker& operator=(const ChipWorker&) = delete;

  // Runs `program` once. `args` holds one tensor per parameter, in order,
  // with the declared dtype and shape (dynamic extents: any); Out params are
  // written in place. Throws UsageError for mismatched arguments,
  // KernelCompileError / KernelRuntimeError (exit 1), InfraError (exit 3).
  ChipRunResult run(const CompiledProgram& program, std::vector<Tensor>& args,
                    const DispatchContext& context = {});

  // Assembles and loads `program` now, once: later runs of it do no binary-cache
  // work (an edited source is not noticed until a new worker prepares it again,
  // which is what replay does). Returns the milliseconds spent.
  double prepare(const CompiledProgram& program, const DispatchContext& context = {});

  const RunConfig& config() const { return config_; }

 private:
  struct LoadedProgram;
  LoadedProgram& load(const CompiledProgram& program, const DispatchContext& context,
                      double& assemble_ms);

  RunConfig config_;
  CoreCounts cores_;
  std::unique_ptr<chip::ChipRuntime> runtime_;
  // Loaded binaries by build directory; reloaded when the assembled paths change.
  std::map<std::string, std::unique_ptr<LoadedProgram>> loaded_;
};

// The chip runtime configuration a RunConfig asks for (rings resolved with
// the PTO2_RING_* environment fallback, DFX switches).
chip::RuntimeConfig runtime_config_for(const RunConfig& config, const CoreCounts& cores,
                                       int rank = 0, int world = 1);

// Checks `args` against the program's parameters; throws UsageError naming
// the parameter, the expected and the given dtype/shape.
void check_arguments(const std::vector<ParamInfo>& params, const std::vector<Tensor>& args);

}  // namespace pypto
