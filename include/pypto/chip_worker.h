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

#include "pypto/compiled_program.h"
// A host program is the runtime's side of the kernel ABI: it must not define the
// ABI version symbol every kernel binary exports (pypto/kernel_abi.h).
#ifndef PYPTO_RUNTIME_HOST
#define PYPTO_RUNTIME_HOST 1
#endif
#include "pypto/kernel_abi.h"
#include "pypto/run_config.h"
#include "pypto/tensor.h"

namespace pypto {

namespace fs = std::filesystem;

// The chip runtime (orchestration/chip_runtime.h, orchestration/dispatch_record.h):
// the runtime's own types, not installed.
namespace chip {
class ChipRuntime;
struct DispatchRecord;
class TaskBoard;
int default_core_count();  // cores of each kind a chip gets by default
}  // namespace chip

// Source path -> binary, as artifact/assembler.h's assemble() returns them.
using AssembledBinaries = std::map<std::string, std::filesystem::path>;

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
  // Where the cores post the task each runs (orchestration/task_board.h), for
  // a rank agent's state report; nullptr: nowhere.
  chip::TaskBoard* task_board = nullptr;
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
  int64_t num_tasks = 0;  // tasks the orchestration submitted and the cores ran
  // Every task's timing and dependencies: the runtime's own record (DFX).
  std::shared_ptr<const chip::DispatchRecord> record;
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
  // chip::RuntimeConfig::run_lone_task_inline: only for a caller that ends a
  // dispatch stuck past its deadline itself (a rank agent's control thread does).
  bool run_lone_task_inline = false;
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

// Checks `args` against the program's parameters; throws UsageError naming
// the parameter, the expected and the given dtype/shape.
void check_arguments(const std::vector<ParamInfo>& params, const std::vector<Tensor>& args);

// Runs `program` once, as PyPTO's CompiledProgram.__call__: with a `config`,
// the config decides everything about the run — platform, device id, DFX and
// ring sizes (a config passed only for ring sizes carries the rest too);
// without one, the recorded (or from_dir-overridden) platform and defaults.
// Out params in `args` are written in place. Prepare a ChipWorker yourself to
// run many times without re-checking the binary cache.
void call(const CompiledProgram& program, std::vector<Tensor>& args,
          const std::optional<RunConfig>& config = std::nullopt);

}  // namespace pypto
