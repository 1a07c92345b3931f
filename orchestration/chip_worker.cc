#include "pypto/chip_worker.h"

#include <chrono>
#include <cstdlib>

#include "artifact/assembler.h"
#include "artifact/build_paths.h"
#include "artifact/kernel_config.h"
#include "artifact/loaded_binary.h"
#include "common/log.h"
#include "orchestration/chip_runtime.h"
#include "orchestration/dfx_writer.h"
#include "orchestration/dispatch_record.h"
#include "pypto/error.h"

namespace pypto {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int core_count_from_env(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (!value || !*value) return fallback;
  char* end = nullptr;
  long n = std::strtol(value, &end, 10);
  if (*end != '\0' || n < 1 || n > 256)
    throw UsageError(std::string(name) + "='" + value +
                     "' is not a core count; use an integer from 1 to 256");
  return static_cast<int>(n);
}

pypto_tensor view_of(Tensor& t) {
  pypto_tensor v{};
  v.data = t.data();
  v.dtype = static_cast<int32_t>(t.dtype());
  v.ndim = static_cast<int32_t>(t.ndim());
  v.offset = 0;
  for (int d = 0; d < v.ndim; ++d) {
    v.shape[d] = t.shape()[d];
    v.strides[d] = t.strides()[d];
  }
  return v;
}

int count_kinds(const std::vector<ArgKind>& signature, bool tensors) {
  int n = 0;
  for (ArgKind kind : signature)
    if (tensors ? is_tensor_kind(kind) : kind == ArgKind::kScalar) ++n;
  return n;
}

}  // namespace

CoreCounts CoreCounts::from_env() {
  CoreCounts counts;
  counts.aic = core_count_from_env("PYPTO_AIC_CORES", counts.aic);
  counts.aiv = core_count_from_env("PYPTO_AIV_CORES", counts.aiv);
  return counts;
}

namespace {

// The chip runtime configuration a RunConfig asks for (rings resolved with
// the PTO2_RING_* environment fallback, DFX switches).
chip::RuntimeConfig runtime_config_for(const RunConfig& config, const CoreCounts& cores, int rank,
                                       int world) {
  chip::RuntimeConfig rc;
  rc.aic_cores = cores.aic;
  rc.aiv_cores = cores.aiv;
  const RingSizes rings = config.resolved_ring_sizes();
  for (int level = 0; level < kRingLevels; ++level) {
    // 0 means "the runtime's default" (RingValue's contract).
    if (rings.task_window[level].value) rc.rings[level].task_window = rings.task_window[level].value;
    if (rings.heap[level].value) rc.rings[level].heap = rings.heap[level].value;
    if (rings.dep_pool[level].value) rc.rings[level].dep_pool = rings.dep_pool[level].value;
  }
  const DfxOptions dfx = config.dfx_options();
  rc.swimlane_level = dfx.enable_chip_swimlane;
  rc.pmu_event_set = dfx.enable_pmu;
  rc.dep_gen = dfx.enable_dep_gen;
  rc.scope_stats = dfx.enable_scope_stats;
  rc.dump_args = dfx.enable_dump_args;
  rc.rank = rank;
  rc.world = world;
  rc.idle_spins = cores.idle_spins;
  rc.run_lone_task_inline = cores.run_lone_task_inline;
  return rc;
}

}  // namespace

void check_arguments(const std::vector<ParamInfo>& params, const std::vector<Tensor>& args) {
  if (args.size() != params.size())
    throw UsageError("the program takes " + std::to_string(params.size()) + " arguments (" +
                     [&] {
                       std::string names;
                       for (const auto& p : params) names += (names.empty() ? "" : ", ") + p.name;
                       return names;
                     }() +
                     "), given " + std::to_string(args.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    const Tensor& t = args[i];
    if (!p.accepts(t.dtype(), t.shape()))
      throw UsageError("argument '" + p.name + "' must be " + p.type_string() + ", given " +
                       t.describe());
  }
}

struct ChipWorker::LoadedProgram {
  AssembledBinaries paths;
  std::unique_ptr<LoadedBinary> orchestration;
  pypto_orch_entry_fn entry = nullptr;
  std::vector<std::unique_ptr<LoadedBinary>> kernel_binaries;
  std::vector<chip::KernelBinding> kernels;
  chip::NameMap names;
  bool prepared = false;  // by prepare(): later runs skip the binary cache
};

ChipWorker::ChipWorker(const RunConfig& config, CoreCounts cores)
    : config_(config), cores_(cores) {
  config_.validate();
}

ChipWorker::~ChipWorker() = default;

ChipWorker::LoadedProgram& ChipWorker::load(const CompiledProgram& program,
                                            const DispatchContext& context,
                                            double& assemble_ms) {
  const auto start = std::chrono::steady_clock::now();
  const KernelConfig& kc = program.kernel_config();
  const OrchestrationInfo& orch = program.orchestration();
  auto& slot = loaded_[fs::absolute(program.dir()).lexically_normal().string() + "#" + orch.name];
  if (slot && slot->prepared) {  // prepare() checked the binaries once: no cache work per run
    assemble_ms = ms_since(start);
    return *slot;
  }
  std::vector<std::string> sources{orch.source};
  for (const auto& k : kc.kernels) sources.push_back(k.source);

  AssembledBinaries paths;
  if (context.binaries) {
    for (const std::string& source : sources) {
      auto it = context.binaries->find(source);
      if (it == context.binaries->end())
        throw InfraError(program.name() + ": the prepared binaries lack " + source +
                         "; prepare the build again");
      paths.emplace(source, it->second);
    }
  } else {
    AssembleOptions options;
    options.platform = program.platform();
    options.arch = program.arch();
    options.store_dir = context.binary_store;
    paths = assemble(program.dir(), sources, options);
  }
  assemble_ms = ms_since(start);

  if (slot && slot->paths == paths) return *slot;  // same binaries: keep them loaded

  auto loaded = std::make_unique<LoadedProgram>();
  loaded->paths = paths;
  loaded->orchestration = std::make_unique<LoadedBinary>(paths.at(orch.source));
  loaded->entry = loaded->orchestration->function<pypto_orch_entry_fn>(orch.function_name);
  for (const auto& k : kc.kernels) {
    auto binary = std::make_unique<LoadedBinary>(paths.at(k.source));
    chip::KernelBinding binding;
    binding.func_id = static_cast<int32_t>(k.func_id);
    binding.name = k.name;
    binding.core_type = k.core_type == CoreType::kAic ? PYPTO_CORE_AIC : PYPTO_CORE_AIV;
    binding.entry = binary->function<pypto_kernel_entry_fn>("kernel_entry");
    binding.num_tensors = count_kinds(k.signature, true);
    binding.num_scalars = count_kinds(k.signature, false);
    loaded->kernels.push_back(std::move(binding));
    loaded->names[static_cast<int32_t>(k.func_id)] = k.name;
    loaded->kernel_binaries.push_back(std::move(binary));
  }
  slot = std::move(loaded);
  return *slot;
}

double ChipWorker::prepare(const CompiledProgram& program, const DispatchContext& context) {
  require_executable_here(parse_platform(program.platform()));
  double assemble_ms = 0;
  load(program, context, assemble_ms).prepared = true;
  return assemble_ms;
}

ChipRunResult ChipWorker::run(const CompiledProgram& program, std::vector<Tensor>& args,
                              const DispatchContext& context) {
  require_executable_here(parse_platform(program.platform()));
  check_arguments(program.params(), args);

  ChipRunResult result;
  LoadedProgram& loaded = load(program, context, result.assemble_ms);

  chip::RuntimeConfig wanted = runtime_config_for(config_, cores_, context.rank, context.world);
  if (context.dispatch_timeout) wanted.dispatch_timeout = *context.dispatch_timeout;
  if (!runtime_ || runtime_->config().rank != wanted.rank ||
      runtime_->config().world != wanted.world ||
      runtime_->config().dispatch_timeout != wanted.dispatch_timeout) {
    runtime_.reset();
    runtime_ = std::make_unique<chip::ChipRuntime>(wanted);
  }

  chip::OrchestrationCall call;
  call.program = program.name();
  call.entry = loaded.entry;
  for (size_t i = 0; i < args.size(); ++i) {
    call.tensors.push_back(view_of(args[i]));
    call.tensor_names.push_back(program.params()[i].name);
  }
  call.windows = context.windows;
  call.scalars = context.scalars;
  const int expected_scalars = count_kinds(program.orchestration().signature, false);
  if (call.scalars.empty() && expected_scalars > 0 &&
      program.scalars().size() == static_cast<size_t>(expected_scalars)) {
    // No scalars given: the defaults the build records (compiled_meta.json "scalars").
    for (const ScalarParam& s : program.scalars()) call.scalars.push_back(s.value.abi_bits());
  }
  if (call.scalars.size() != static_cast<size_t>(expected_scalars))
    throw UsageError("program '" + program.name() + "' takes " +
                     std::to_string(expected_scalars) + " scalar(s), but " +
                     std::to_string(call.scalars.size()) + " were given");
  call.comm = context.comm;
  call.comm_state = context.comm_state;
  call.board = context.task_board;

  const DfxOptions dfx = config_.dfx_options();
  std::optional<fs::path> dfx_dir;
  if (dfx.any()) {
    dfx_dir = context.dfx_dir.value_or(program.dir() / kDfxOutputsDir);
    // The directory holds the diagnostics of the last run only.
    std::error_code ec;
    fs::remove_all(*dfx_dir, ec);
  }

  const auto start = std::chrono::steady_clock::now();
  auto record = std::make_shared<chip::DispatchRecord>(runtime_->run(call, loaded.kernels));
  result.run_ms = ms_since(start);
  result.num_tasks = record->num_tasks;
  log::timing("{}: assembled in {:.1f} ms, ran {} tasks in {:.3f} ms", program.name(),
              result.assemble_ms, result.num_tasks, result.run_ms);

  if (dfx_dir) {
    chip::DfxContext dfx_context{program.name(), context.rank, context.world, loaded.names};
    chip::write_dispatch_dfx(*dfx_dir, *record, dfx, dfx_context);
    result.dfx_dir = dfx_dir;
  }
  result.record = std::move(record);
  return result;
}

}  // namespace pypto
