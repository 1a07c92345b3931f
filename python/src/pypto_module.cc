// pypto._core: the C++ core as the Python package sees it (docs/python.md).
// Only what Python cannot do itself lives here: loading builds, running them on
// workers, the compiler driver, the replay/exec commands, and the translation of
// arrays and errors at the boundary. The user-facing names (RunConfig,
// CompiledProgram, ...) are the pure-Python classes of python/pypto/, which wrap
// these.
//
// Arrays cross without copies: each argument becomes a Tensor borrowing the
// array's memory, so a kernel's outputs land in the caller's array. The GIL is
// released while a program compiles, loads or runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "artifact/binary_cache.h"
#include "artifact/splice.h"
#include "common/fs_util.h"
#include "common/log.h"
#include "common/version.h"
#include "common/wire/protocol.h"
#include "compiler/driver.h"
#include "coordinator/bench_command.h"
#include "coordinator/dispatch_flags.h"
#include "coordinator/exec_command.h"
#include "coordinator/l3_run.h"
#include "coordinator/program_data.h"
#include "coordinator/program_inputs.h"
#include "coordinator/replay_command.h"
#include "coordinator/validate.h"
#include "pypto/build_kind.h"
#include "pypto/chip_worker.h"
#include "pypto/compiled_program.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/distributed_worker.h"
#include "pypto/error.h"
#include "pypto/run_config.h"
#include "pypto/tensor.h"

namespace py = pybind11;

namespace pypto::python {

namespace {

// ---------------------------------------------------------------------------------------------
// Errors: each C++ class raises the pypto.errors class of the same name.

py::object error_class(const char* name) {
  return py::module_::import("pypto.errors").attr(name);
}

void raise_as(const char* name, const std::exception& e) {
  PyErr_SetString(error_class(name).ptr(), e.what());
}

void translate_errors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const ValidationError& e) {
    raise_as("ValidationError", e);
  } catch (const KernelRuntimeError& e) {
    raise_as("KernelRuntimeError", e);
  } catch (const KernelCompileError& e) {
    raise_as("KernelCompileError", e);
  } catch (const ProgramError& e) {
    raise_as("ProgramError", e);
  } catch (const ArtifactError& e) {
    raise_as("ArtifactError", e);
  } catch (const ToolError& e) {
    raise_as("ToolError", e);
  } catch (const InfraError& e) {
    raise_as("InfraError", e);
  } catch (const UsageError& e) {
    raise_as("UsageError", e);
  } catch (const InterruptedError& e) {
    raise_as("InterruptedError", e);
  } catch (const Error& e) {
    raise_as("Error", e);
  }
}

// ---------------------------------------------------------------------------------------------
// RunConfig from the dict pypto.runtime.RunConfig._to_core() builds: every field of the C++
// table by name (so a field the Python dataclass lacks, or one it has in excess, is an error
// here rather than a silently ignored setting).

void read_field(const py::dict& d, const char* name, std::string& out) {
  py::object v = d[name];
  out = v.is_none() ? std::string() : v.cast<std::string>();
}
void read_field(const py::dict& d, const char* name, bool& out) { out = d[name].cast<bool>(); }
void read_field(const py::dict& d, const char* name, int& out) { out = d[name].cast<int>(); }
void read_field(const py::dict& d, const char* name, double& out) {
  out = d[name].cast<double>();
}
void read_field(const py::dict& d, const char* name, std::vector<std::string>& out) {
  py::object v = d[name];
  out = v.is_none() ? std::vector<std::string>{} : v.cast<std::vector<std::string>>();
}
void read_field(const py::dict& d, const char* name, RingOverride& out) {
  py::object v = d[name];
  out = {};
  if (v.is_none()) return;
  if (py::isinstance<py::int_>(v)) {
    out = RingOverride::scalar(v.cast<uint64_t>());
    return;
  }
  out.values = v.cast<std::vector<uint64_t>>();
}
void read_field(const py::dict& d, const char* name, std::optional<DistributedConfig>& out) {
  py::object v = d[name];
  out.reset();
  if (v.is_none()) return;
  py::dict c = v.cast<py::dict>();
  DistributedConfig dc;
  dc.device_ids = c["device_ids"].cast<std::vector<int64_t>>();
  dc.runtime = c["runtime"].cast<std::string>();
  dc.aicpu_thread_num = c["aicpu_thread_num"].cast<int64_t>();
  dc.num_sub_workers = c["num_sub_workers"].cast<int64_t>();
  out = dc;
}
// The two platform axes come as one "platform" string.
void read_field(const py::dict&, const char*, Arch&) {}
void read_field(const py::dict&, const char*, ExecutionMode&) {}

RunConfig run_config_from(const py::dict& d) {
  size_t expected = 1;  // platform
  for (const FieldInfo& f : RunConfig::fields())
    if (f.owner != FieldOwner::kTarget) ++expected;
  if (d.size() != expected)
    throw UsageError("RunConfig: the Python dataclass has " + std::to_string(d.size()) +
                     " settings but the C++ RunConfig " + std::to_string(expected) +
                     "; the package and its extension are out of step (reinstall)");
  RunConfig c = RunConfig::from_platform(d["platform"].cast<std::string>());
#define PYPTO_READ_FIELD(owner, type, name, view_name, init) \
  if (FieldOwner::k##owner != FieldOwner::kTarget) read_field(d, #name, c.name);
  PYPTO_RUN_CONFIG_FIELDS(PYPTO_READ_FIELD)
#undef PYPTO_READ_FIELD
  c.validate();
  return c;
}

std::optional<RunConfig> optional_config(const py::object& d) {
  if (d.is_none()) return std::nullopt;
  return run_config_from(d.cast<py::dict>());
}

// ---------------------------------------------------------------------------------------------
// Arrays <-> tensors.

bool little_endian_host() {
  const uint16_t one = 1;
  uint8_t first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// The element type of `a` passed for `param`; bf16 parameters take ml_dtypes.bfloat16
// arrays or, without ml_dtypes, uint16 arrays holding the bf16 bits.
DType dtype_for(const py::array& a, const ParamInfo& param) {
  const py::dtype dt = a.dtype();
  const char kind = dt.attr("kind").cast<std::string>().at(0);
  const auto size = dt.attr("itemsize").cast<size_t>();
  const std::string name = py::str(dt.attr("name"));
  if (name == "bfloat16") return DType::kBF16;
  if (kind == 'f' && size == 4) return DType::kF32;
  if (kind == 'f' && size == 2) return DType::kF16;
  if (kind == 'i' && size == 1) return DType::kI8;
  if (kind == 'i' && size == 2) return DType::kI16;
  if (kind == 'i' && size == 4) return DType::kI32;
  if (kind == 'i' && size == 8) return DType::kI64;
  if (kind == 'u' && size == 1) return DType::kU8;
  if (kind == 'b' && size == 1) return DType::kBool;
  if (kind == 'u' && size == 2 && param.dtype == DType::kBF16) return DType::kBF16;
  throw UsageError("argument '" + param.name + "': numpy dtype " + name +
                   " has no pypto element type (expected " + dtype_name(param.dtype) +
                   "; pypto takes float32, float16, bfloat16 (ml_dtypes, or the bits as "
                   "uint16), int8, int16, int32, int64, uint8 and bool)");
}

// A Tensor borrowing `a`'s memory: no copy, so outputs are written into `a`.
Tensor borrow_array(const py::array& a, const ParamInfo& param) {
  const py::object flags = a.attr("flags");
  if (!flags.attr("c_contiguous").cast<bool>())
    throw UsageError("argument '" + param.name + "': the array is not C-contiguous; pypto " +
                     "passes arrays without copying, so pass numpy.ascontiguousarray(x) " +
                     "(and read outputs from that array)");
  if (!flags.attr("aligned").cast<bool>())
    throw UsageError("argument '" + param.name + "': the array's memory is not aligned to its " +
                     "element size; pass a copy (x.copy())");
  const std::string order = py::str(a.dtype().attr("byteorder"));
  const bool native = order == "=" || order == "|" || (order == "<") == little_endian_host();
  if (!native)
    throw UsageError("argument '" + param.name + "': the array is byte-swapped (dtype " +
                     std::string(py::str(a.dtype())) + "); pass x.astype(x.dtype.newbyteorder('='))");
  if (param.is_output() && !flags.attr("writeable").cast<bool>())
    throw UsageError("argument '" + param.name + "' is an " + direction_name(param.direction) +
                     " parameter, and its array is read-only; pass a writable array (the "
                     "outputs are written into it)");
  const DType dtype = dtype_for(a, param);
  Shape shape(a.shape(), a.shape() + a.ndim());
  return Tensor::borrow(const_cast<void*>(a.data()), dtype, shape);
}

std::vector<Tensor> borrow_arguments(const std::vector<ParamInfo>& params,
                                     const std::vector<py::array>& arrays,
                                     const std::string& program) {
  if (arrays.size() != params.size())
    throw UsageError(program + " takes " + std::to_string(params.size()) + " argument(s) (" +
                     param_names(params) + "), " + std::to_string(arrays.size()) + " given");
  std::vector<Tensor> tensors;
  tensors.reserve(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) tensors.push_back(borrow_array(arrays[i], params[i]));
  check_arguments(params, tensors);
  return tensors;
}

DType parse_dtype_or_throw(const std::string& name) {
  if (auto dtype = parse_dtype(name)) return *dtype;
  throw UsageError("unknown dtype '" + name +
                   "'; use one of f32, f16, bf16, i8, i16, i32, i64, u8, bool");
}

// A run's arguments: arrays (borrowed, as above) or resident tensors, which stay
// in the agents (docs/resident-tensors.md). `arrays` keeps the arrays of a run.
std::vector<RunArgument> run_arguments(const std::vector<ParamInfo>& params, const py::list& args,
                                       const std::string& program,
                                       std::vector<py::array>& arrays) {
  if (args.size() != params.size())
    throw UsageError(program + " takes " + std::to_string(params.size()) + " argument(s) (" +
                     param_names(params) + "), " + std::to_string(args.size()) + " given");
  std::vector<RunArgument> out;
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle value = args[i];
    if (py::isinstance<ResidentTensor>(value)) {
      out.emplace_back(value.cast<ResidentTensor>());
      continue;
    }
    py::array array = py::reinterpret_borrow<py::array>(value);
    out.emplace_back(borrow_array(array, params[i]));
    arrays.push_back(std::move(array));
  }
  return out;
}

// A host array for a resident tensor's copy_to (read) or copy_from (written).
Tensor resident_host_array(const ResidentTensor& resident, const py::array& array, bool written) {
  ParamInfo as_param;
  as_param.name = "host array of " + resident.describe();
  as_param.dtype = resident.dtype();
  as_param.shape = resident.shape();
  as_param.direction = written ? Direction::kOut : Direction::kIn;
  Tensor tensor = borrow_array(array, as_param);
  if (!as_param.accepts(tensor.dtype(), tensor.shape()))
    throw UsageError(resident.describe() + " and the host array " + tensor.describe() +
                     " differ in dtype or shape");
  return tensor;
}

const char* numpy_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    case DType::kBF16: return "uint16";  // pypto.tensors turns it into ml_dtypes.bfloat16
    case DType::kI8: return "int8";
    case DType::kI16: return "int16";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "uint8";
}

// A new numpy array holding a copy of `t`.
py::array to_array(const Tensor& t) {
  const Tensor packed = t.is_contiguous() ? t : t.contiguous();
  py::array out(py::dtype(numpy_dtype_name(t.dtype())),
                std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
  if (packed.nbytes() > 0) std::memcpy(out.mutable_data(), packed.data(), packed.nbytes());
  return out;
}

py::list params_list(const std::vector<ParamInfo>& params) {
  py::list out;
  for (const ParamInfo& p : params)
    out.append(py::make_tuple(p.name, direction_name(p.direction), p.shape, dtype_name(p.dtype)));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Results as dicts (pypto.runtime turns them into dataclasses).

py::dict chip_result_dict(const ChipRunResult& r) {
  py::dict d;
  d["assemble_ms"] = r.assemble_ms;
  d["run_ms"] = r.run_ms;
  d["num_tasks"] = r.num_tasks;
  d["dfx_dir"] = r.dfx_dir ? py::cast(r.dfx_dir->string()) : py::none();
  return d;
}

py::dict distributed_result_dict(const DistributedRunResult& r) {
  py::dict d;
  d["wall_ms"] = r.wall_ms;
  py::list dispatches;
  for (const DispatchOutcome& o : r.dispatches) {
    py::dict x;
    x["rank"] = o.rank;
    x["index"] = o.index;
    x["program"] = o.program;
    x["host"] = o.host;
    x["start_unix_ns"] = o.start_unix_ns;
    x["end_unix_ns"] = o.end_unix_ns;
    py::dict timings;
    for (const wire::PhaseTiming& t : o.timings) timings[py::str(t.phase)] = t.ns;
    x["timings_ns"] = timings;
    dispatches.append(x);
  }
  d["dispatches"] = dispatches;
  return d;
}

py::dict prepare_report_dict(const PrepareReport& r) {
  py::dict d;
  d["launch_ms"] = r.launch_ms;
  d["prepare_ms"] = r.prepare_ms;
  d["bytes_shipped"] = r.bytes_shipped();
  py::list ranks;
  for (const RankPrepareStats& s : r.ranks) {
    py::dict x;
    x["rank"] = s.rank;
    x["host"] = s.host;
    x["files"] = s.files;
    x["bytes_shipped"] = s.bytes_shipped;
    x["cache_hits"] = s.cache_hits;
    x["compiles"] = s.compiles;
    ranks.append(x);
  }
  d["ranks"] = ranks;
  return d;
}

// ---------------------------------------------------------------------------------------------
// Workers. Each Python call holds the program objects alive through py::object references
// kept by the Python wrappers; the C++ objects here only point at them.

// With a DFX switch on, a run's DFX files go to dfx_outputs/rank<r>/d<k>/ as
// pypto-coord run lays them out.
void write_dfx_if_asked(const DistributedWorker& worker, const DistributedCompiledProgram& program,
                        const DistributedRunOptions& options, const DistributedRunResult& result) {
  if (options.config.any_dfx_enabled())
    coord::write_dfx_outputs(program, result, worker.prepare_report());
}

class PyRunHandle {
 public:
  PyRunHandle(RunHandle handle, std::vector<py::array> arrays, const DistributedWorker& worker,
              const DistributedCompiledProgram& program, DistributedRunOptions options)
      : handle_(std::move(handle)), arrays_(std::move(arrays)), worker_(&worker),
        program_(&program), options_(std::move(options)) {}
  PyRunHandle(PyRunHandle&&) = default;
  // A run still writing into the arrays must end before they may go.
  ~PyRunHandle() {
    if (arrays_.empty()) return;
    try {
      py::gil_scoped_release release;
      handle_.wait();
    } catch (const std::exception& e) {
      log::error("a submitted run dropped without result(): {}", e.what());
    }
  }
  bool done() const { return handle_.done(); }
  py::dict wait() {
    DistributedRunResult r;
    try {
      py::gil_scoped_release release;
      r = handle_.wait();
      write_dfx_if_asked(*worker_, *program_, options_, r);
    } catch (...) {
      arrays_.clear();  // a failed run has stopped the worker: nothing writes any more
      throw;
    }
    arrays_.clear();
    return distributed_result_dict(r);
  }

 private:
  RunHandle handle_;
  std::vector<py::array> arrays_;
  // The Python wrappers keep the worker and the program alive longer than any handle.
  const DistributedWorker* worker_;
  const DistributedCompiledProgram* program_;
  DistributedRunOptions options_;
};

DistributedRunOptions distributed_run_options(const DistributedCompiledProgram& program,
                                              const py::object& config, bool reset_windows,
                                              const std::optional<double>& dispatch_timeout_s) {
  DistributedRunOptions options;
  if (std::optional<RunConfig> c = optional_config(config)) {
    check_platform_override(c->platform(), program.arch());
    options.config = *c;
  }
  options.reset_windows = reset_windows;
  if (dispatch_timeout_s) {
    if (!(*dispatch_timeout_s > 0))
      throw UsageError("dispatch_timeout_s must be a positive number of seconds");
    options.dispatch_timeout = std::chrono::milliseconds(
        static_cast<int64_t>(*dispatch_timeout_s * 1000.0 + 0.5));
  }
  return options;
}

std::chrono::milliseconds seconds(double s, const char* what) {
  if (!(s > 0)) throw UsageError(std::string(what) + " must be a positive number of seconds");
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0 + 0.5));
}

// ---------------------------------------------------------------------------------------------
// The command-line entries, parsed by the same CLI11 definitions as pypto-coord's.

int run_cli(CLI::App& app, const std::vector<std::string>& argv,
            const std::function<int()>& body) {
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  app.set_version_flag("--version", version_text(app.get_name()));
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  }
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << app.get_name() << ": error: " << e.what() << std::endl;
    return static_cast<int>(exit_code_of(e));
  }
}

int exec_main(const std::string& prog, const std::vector<std::string>& argv,
              const std::vector<std::string>& child_command) {
  CLI::App app{"Run and validate a build directory (or a batch manifest); print "
               "PYPTO_EXEC_RESULT=PASS|FAIL|INFRA",
               prog};
  coord::ExecArgs args;
  std::optional<std::string> log_level;
  // PyPTO's spelling of pypto-coord exec's `<dir>` and `--manifest`.
  CLI::Option* dir =
      app.add_option("--work-dir", args.dir, "build directory to run and validate")
          ->transform(normal_path);
  CLI::Option* manifest = app.add_option(
      "--batch-manifest", args.manifest,
      "JSON list of {\"work_dir\", \"platform\"} to run in turn, each in a child process");
  dir->excludes(manifest);
  manifest->excludes(dir);
  coord::add_dispatch_flags(app, args.dispatch);
  app.add_option("--log-level", log_level, "debug, info, timing, warn, error or null");
  return run_cli(app, argv, [&] {
    log::init(log_level);
    args.child_command = child_command;
    return coord::run_exec(args, log_level, std::cout, std::cerr);
  });
}

int replay_main(const std::string& prog, const std::vector<std::string>& argv) {
  CLI::App app{"Re-run a build directory after hand edits: splice .pto, invalidate the binary "
               "cache, run",
               prog};
  coord::ReplayArgs args;
  std::optional<std::string> log_level;
  coord::add_replay_args(app, args);
  app.add_option("--log-level", log_level, "debug, info, timing, warn, error or null");
  return run_cli(app, argv, [&] {
    log::init(log_level);
    return coord::run_replay(args, std::cout);
  });
}

}  // namespace

// What run() and submit() take from Python: the arguments (arrays kept alive
// while the run may use them) and the run options.
struct PendingRun {
  PendingRun(const DistributedCompiledProgram& program, const py::list& values,
             const py::object& config, bool reset_windows, std::optional<double> timeout_s)
      : args(run_arguments(program.params(), values, program.name(), arrays)),
        options(distributed_run_options(program, config, reset_windows, timeout_s)) {}
  std::vector<py::array> arrays;
  std::vector<RunArgument> args;
  DistributedRunOptions options;
};

}  // namespace pypto::python

using namespace pypto;
using namespace pypto::python;

PYBIND11_MODULE(_core, m) {
  m.doc() = "The C++ core of the pypto package (use pypto.ir and pypto.runtime)";
  py::register_exception_translator(translate_errors);
  log::init(std::nullopt);
  m.def("release_version", [] { return std::string(release_version()); });
  m.def("source_revision", [] { return std::string(source_revision()); });

  m.def("run_config_fields", [] {
    py::list out;
    for (const FieldInfo& f : RunConfig::fields())
      out.append(py::make_tuple(std::string(f.name), field_owner_name(f.owner),
                                std::string(f.view_name)));
    return out;
  });
  m.def("validate_run_config", [](const py::dict& d) { run_config_from(d); });
  m.def("compile_kwargs", [](const py::dict& d) {
    return run_config_from(d).compile_kwargs().dump();
  });
  m.def("parse_platform", [](const std::string& name) {
    const Platform p = parse_platform(name);
    return py::make_tuple(arch_name(p.arch), execution_mode_name(p.mode));
  });
  m.def("set_log_level", [](const std::string& level) { log::init(level); });

  m.def("build_kind", [](const std::string& dir) {
    return std::string(build_kind_name(detect_build_kind(dir)));
  });

  // The compiler driver: (exit code, stdout text, diagnostics).
  m.def(
      "compile",
      [](const std::string& input, const std::string& output, const std::string& platform,
         std::optional<int64_t> world, std::vector<int64_t> device_ids, uint64_t seed,
         bool no_golden) {
        compiler::CompileArgs args;
        args.input = input;
        args.output = output;
        args.platform = platform;
        args.world = world;
        args.device_ids = std::move(device_ids);
        args.seed = seed;
        args.no_golden = no_golden;
        std::ostringstream out, err;
        int code;
        {
          py::gil_scoped_release release;
          code = compiler::run_compile(args, out, err);
        }
        return py::make_tuple(code, out.str(), err.str());
      },
      py::arg("input"), py::arg("output"), py::arg("platform"), py::arg("world"),
      py::arg("device_ids"), py::arg("seed"), py::arg("no_golden"));

  m.def("rebuild_kernel_cpp_from_pto", [](const std::string& dir) {
    SpliceReport r;
    {
      py::gil_scoped_release release;
      r = rebuild_kernel_cpp_from_pto(dir);
    }
    py::dict d;
    d["disabled"] = r.disabled;
    d["tool_missing"] = r.tool_missing;
    d["spliced"] = r.spliced;
    d["updated_kernels"] = r.updated_kernels;
    d["summary"] = r.summary();
    return d;
  });
  m.def("invalidate_binary_cache", [](const std::string& dir) {
    return invalidate_binary_cache(dir);
  });
  m.def("round_stats", [](std::vector<double> ms) {
    const coord::RoundStats s = coord::round_stats(std::move(ms));
    py::dict d;
    d["rounds"] = s.rounds;
    d["min_ms"] = s.min;
    d["median_ms"] = s.median;
    d["mean_ms"] = s.mean;
    d["p90_ms"] = s.p90;
    d["max_ms"] = s.max;
    return d;
  });
  m.def("exec_main", &exec_main, py::arg("prog"), py::arg("argv"), py::arg("child_command"),
        py::call_guard<py::gil_scoped_release>());
  m.def("replay_main", &replay_main, py::arg("prog"), py::arg("argv"),
        py::call_guard<py::gil_scoped_release>());

  py::class_<CompiledProgram>(m, "CompiledProgram")
      .def_static(
          "from_dir",
          [](const std::string& dir, std::optional<std::string> platform) {
            py::gil_scoped_release release;
            return CompiledProgram::from_dir(dir, platform);
          },
          py::arg("dir"), py::arg("platform") = py::none())
      .def("with_platform", &CompiledProgram::with_platform)
      .def_property_readonly("name", &CompiledProgram::name)
      .def_property_readonly("dir", [](const CompiledProgram& p) { return p.dir().string(); })
      .def_property_readonly("platform", &CompiledProgram::platform)
      .def_property_readonly("recorded_platform", &CompiledProgram::recorded_platform)
      .def_property_readonly("arch", &CompiledProgram::arch)
      .def_property_readonly("has_golden",
                             [](const CompiledProgram& p) { return p.golden().has_value(); })
      .def_property_readonly("params",
                             [](const CompiledProgram& p) { return params_list(p.params()); })
      .def("golden_arguments",
           [](const CompiledProgram& p) {
             py::list out;
             for (const Tensor& t : coord::prepare_arguments(p, {}).tensors)
               out.append(to_array(t));
             return out;
           })
      .def("validate", [](const CompiledProgram& p, const std::vector<py::array>& arrays) {
        const std::vector<Tensor> args = borrow_arguments(p.params(), arrays, p.name());
        const coord::ValidationReport r = coord::validate_outputs(p, args);
        std::string text;
        for (const coord::OutputComparison& c : r.outputs)
          if (!c.ok()) text += (text.empty() ? "" : "\n") + c.describe(r.rtol, r.atol);
        return py::make_tuple(r.ok(), text);
      });

  py::class_<DistributedCompiledProgram>(m, "DistributedCompiledProgram")
      .def_static(
          "from_dir",
          [](const std::string& dir, std::optional<std::string> platform,
             std::optional<std::vector<int64_t>> device_ids) {
            py::gil_scoped_release release;
            DistributedOverrides overrides;
            overrides.platform = platform;
            overrides.device_ids = device_ids;
            return DistributedCompiledProgram::from_dir(dir, overrides);
          },
          py::arg("dir"), py::arg("platform") = py::none(), py::arg("device_ids") = py::none())
      .def_property_readonly("name", &DistributedCompiledProgram::name)
      .def_property_readonly("dir",
                             [](const DistributedCompiledProgram& p) { return p.dir().string(); })
      .def_property_readonly("platform", &DistributedCompiledProgram::platform)
      .def_property_readonly("recorded_platform", &DistributedCompiledProgram::recorded_platform)
      .def_property_readonly("arch", &DistributedCompiledProgram::arch)
      .def_property_readonly("world_size", &DistributedCompiledProgram::world_size)
      .def_property_readonly("device_ids", &DistributedCompiledProgram::device_ids)
      .def_property_readonly(
          "has_golden", [](const DistributedCompiledProgram& p) { return p.golden().has_value(); })
      .def_property_readonly(
          "params", [](const DistributedCompiledProgram& p) { return params_list(p.params()); })
      .def("golden_arguments",
           [](const DistributedCompiledProgram& p) {
             py::list out;
             for (const Tensor& t : coord::prepare_arguments(p, {}).tensors)
               out.append(to_array(t));
             return out;
           })
      .def("validate",
           [](const DistributedCompiledProgram& p, const std::vector<py::array>& arrays) {
             const std::vector<Tensor> args = borrow_arguments(p.params(), arrays, p.name());
             const coord::ValidationReport r = coord::validate_outputs(p, args);
             std::string text;
             for (const coord::OutputComparison& c : r.outputs)
               if (!c.ok()) text += (text.empty() ? "" : "\n") + c.describe(r.rtol, r.atol);
             return py::make_tuple(r.ok(), text);
           });

  py::class_<ChipWorker>(m, "ChipWorker")
      .def(py::init([](const py::dict& config) {
        return std::make_unique<ChipWorker>(run_config_from(config));
      }))
      .def("run", [](ChipWorker& worker, const CompiledProgram& program,
                     const std::vector<py::array>& arrays) {
        std::vector<Tensor> args = borrow_arguments(program.params(), arrays, program.name());
        ChipRunResult r;
        {
          py::gil_scoped_release release;
          r = worker.run(program, args);
        }
        return chip_result_dict(r);
      });

  py::class_<PyRunHandle>(m, "RunHandle")
      .def("done", &PyRunHandle::done)
      .def("wait", &PyRunHandle::wait);

  py::class_<ResidentTensor>(m, "ResidentTensor")
      .def_property_readonly("dtype", [](const ResidentTensor& t) { return dtype_name(t.dtype()); })
      .def_property_readonly("shape",
                             [](const ResidentTensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("layout",
                             [](const ResidentTensor& t) {
                               return t.layout() == ResidentLayout::kStacked ? "stacked"
                                                                             : "replicated";
                             })
      .def_property_readonly("id", &ResidentTensor::id)
      .def_property_readonly("freed", &ResidentTensor::freed)
      .def("__repr__", &ResidentTensor::describe);

  py::class_<DistributedWorker>(m, "DistributedWorker")
      .def_static(
          "prepare",
          [](const DistributedCompiledProgram& program,
             const std::vector<const DistributedCompiledProgram*>& extra, double startup_timeout_s,
             std::optional<std::string> rank_binary, std::vector<std::string> mpirun_args,
             std::optional<std::string> hostfile) {
            DistributedWorkerOptions options;
            options.startup_timeout = seconds(startup_timeout_s, "startup_timeout_s");
            if (rank_binary) options.mpirun.rank_binary = *rank_binary;
            options.mpirun.mpirun_args = std::move(mpirun_args);
            if (hostfile) options.mpirun.hostfile = *hostfile;
            py::gil_scoped_release release;
            return DistributedWorker::prepare(program, options, extra);
          },
          py::arg("program"), py::arg("extra"), py::arg("startup_timeout_s"),
          py::arg("rank_binary") = py::none(), py::arg("mpirun_args") = std::vector<std::string>{},
          py::arg("hostfile") = py::none())
      .def(
          "run",
          [](DistributedWorker& worker, const DistributedCompiledProgram& program,
             const py::list& values, const py::object& config, bool reset_windows,
             std::optional<double> dispatch_timeout_s) {
            PendingRun run(program, values, config, reset_windows, dispatch_timeout_s);
            DistributedRunResult r;
            {
              py::gil_scoped_release release;
              r = worker.run(program, run.args, run.options);
              write_dfx_if_asked(worker, program, run.options, r);
            }
            return distributed_result_dict(r);
          },
          py::arg("program"), py::arg("arrays"), py::arg("config"), py::arg("reset_windows"),
          py::arg("dispatch_timeout_s") = py::none())
      .def(
          "submit",
          [](DistributedWorker& worker, const DistributedCompiledProgram& program,
             const py::list& values, const py::object& config, bool reset_windows,
             std::optional<double> dispatch_timeout_s) {
            PendingRun run(program, values, config, reset_windows, dispatch_timeout_s);
            RunHandle handle;
            {
              py::gil_scoped_release release;
              handle = worker.submit(program, std::move(run.args), run.options);
            }
            return PyRunHandle(std::move(handle), std::move(run.arrays), worker, program,
                               run.options);
          },
          py::arg("program"), py::arg("arrays"), py::arg("config"), py::arg("reset_windows"),
          py::arg("dispatch_timeout_s") = py::none())
      .def(
          "alloc_stacked_tensor",
          [](DistributedWorker& worker, const std::string& dtype, const Shape& part_shape) {
            const DType t = parse_dtype_or_throw(dtype);
            py::gil_scoped_release release;
            return worker.alloc_stacked_tensor(t, part_shape);
          },
          py::arg("dtype"), py::arg("part_shape"))
      .def(
          "alloc_tensor",
          [](DistributedWorker& worker, const std::string& dtype, const Shape& shape) {
            const DType t = parse_dtype_or_throw(dtype);
            py::gil_scoped_release release;
            return worker.alloc_tensor(t, shape);
          },
          py::arg("dtype"), py::arg("shape"))
      .def("copy_to",
           [](DistributedWorker& worker, const ResidentTensor& dst, const py::array& src) {
             const Tensor host = resident_host_array(dst, src, false);
             py::gil_scoped_release release;
             worker.copy_to(dst, host);
           })
      .def("copy_from",
           [](DistributedWorker& worker, const ResidentTensor& src, const py::array& dst) {
             Tensor host = resident_host_array(src, dst, true);
             py::gil_scoped_release release;
             worker.copy_from(src, host);
           })
      .def("free", [](DistributedWorker& worker, ResidentTensor& tensor) { worker.free(tensor); },
           py::call_guard<py::gil_scoped_release>())
      .def("close", &DistributedWorker::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("world", &DistributedWorker::world)
      .def_property_readonly("prepare_report", [](const DistributedWorker& w) {
        return prepare_report_dict(w.prepare_report());
      });
}
