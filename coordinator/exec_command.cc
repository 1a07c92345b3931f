#include "coordinator/exec_command.h"

#include <csignal>
#include <sstream>
#include <string_view>

#include "common/fs_util.h"
#include "common/subprocess.h"
#include "coordinator/exec_manifest.h"
#include "coordinator/interrupt.h"
#include "coordinator/l2_run.h"
#include "coordinator/l3_run.h"
#include "pypto/build_kind.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

constexpr std::string_view kMarkerPrefix = "PYPTO_EXEC_RESULT=";
// A batch child gets the dispatch deadline plus this much for assembling its
// kernels before it is killed; the dispatch deadline itself is the child's.
constexpr auto kChildSetupAllowance = std::chrono::minutes(10);
constexpr auto kDefaultDispatchTimeout = std::chrono::minutes(10);
// A signal to exec --manifest is passed on to the running entry, which stops its
// agents and mpirun; SIGKILL follows when it has not ended after this long.
constexpr auto kChildStopGrace = std::chrono::seconds(10);

ExecStatus status_of(const std::exception& e) {
  return exit_code_of(e) == ExitCode::kFail ? ExecStatus::kFail : ExecStatus::kInfra;
}

int exit_code_for(const std::vector<ExecStatus>& statuses) {
  bool infra = false;
  for (ExecStatus s : statuses) {
    if (s == ExecStatus::kFail) return static_cast<int>(ExitCode::kFail);
    if (s == ExecStatus::kInfra) infra = true;
  }
  return static_cast<int>(infra ? ExitCode::kInfra : ExitCode::kOk);
}

[[noreturn]] void throw_no_golden(const std::string& dir) {
  throw InfraError("exec validates against golden/, and " + dir +
                   " has no golden/; use `pypto-coord run " + dir +
                   " --input NAME=FILE.npy` to run it without validation");
}

// Runs and validates one directory in this process; diagnostics to `err`. `devices`
// becomes what the PASS line reports: the device id (L2) or every rank's, comma-separated.
ExecStatus exec_in_process(const std::string& dir, const DispatchFlags& flags,
                           const DispatchSettings& settings, std::string& devices,
                           std::ostream& err) {
  try {
    RunRequest request;
    request.validate = true;
    if (detect_build_kind(dir) == BuildKind::kL3) {
      const DistributedCompiledProgram program = load_l3_program(dir, flags.platform);
      if (!program.golden()) throw_no_golden(dir);
      run_l3_program(program, request, settings, err);
      devices = device_list(program.device_ids());
      return ExecStatus::kPass;
    }
    const CompiledProgram program = load_l2_program(dir, flags.platform, "exec");
    if (!program.golden()) throw_no_golden(dir);
    run_l2_program(program, request, settings, err);
    devices = std::to_string(settings.config.device_id);
    return ExecStatus::kPass;
  } catch (const InterruptedError&) {
    throw;  // Ctrl-C ends exec itself, not just this directory
  } catch (const std::exception& e) {
    err << "pypto-coord: error: " << e.what() << std::endl;
    return status_of(e);
  }
}

// The child's marker line; `devices` gets its device= value (L3: every rank's ids).
std::optional<ExecStatus> parse_marker(std::string_view line, std::string& devices) {
  if (line.substr(0, kMarkerPrefix.size()) != kMarkerPrefix) return std::nullopt;
  std::string_view word = line.substr(kMarkerPrefix.size());
  if (const size_t at = word.find(" device="); at != std::string_view::npos) {
    std::string_view value = word.substr(at + 8);
    devices = std::string(value.substr(0, value.find(' ')));
  }
  word = word.substr(0, word.find(' '));
  if (word == "PASS") return ExecStatus::kPass;
  if (word == "FAIL") return ExecStatus::kFail;
  return ExecStatus::kInfra;
}

// Runs one manifest entry as a child `pypto-coord exec <dir>`, forwarding its
// diagnostics (prefixed with the work_dir) and reading back its marker.
// `stopped_by` gets the signal that stopped the run (forwarded to the child), 0 otherwise.
ExecStatus exec_in_child(const ManifestEntry& entry, const ExecArgs& args,
                         const std::optional<std::string>& log_level,
                         const std::optional<std::chrono::milliseconds>& timeout,
                         std::string& devices, int& stopped_by, std::ostream& err) {
  const std::string prefix = "[" + entry.work_dir + "] ";
  std::optional<std::string> platform = entry.platform ? entry.platform : args.dispatch.platform;
  try {
    if (platform) parse_platform(*platform);
  } catch (const std::exception& e) {
    err << prefix << "pypto-coord: error: " << e.what() << std::endl;
    return ExecStatus::kInfra;
  }
  std::vector<std::string> argv = args.child_command;
  if (argv.empty()) {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      err << prefix << "pypto-coord: error: cannot find its own executable (/proc/self/exe: "
          << ec.message() << ")" << std::endl;
      return ExecStatus::kInfra;
    }
    argv = {self.string(), "exec"};
  }
  argv.push_back(fs::absolute(entry.path).string());
  if (platform) argv.insert(argv.end(), {"--platform", *platform});
  for (std::string& a : dispatch_flags_argv(args.dispatch)) argv.push_back(std::move(a));
  if (log_level) argv.insert(argv.end(), {"--log-level", *log_level});

  SubprocessOptions options;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      timeout.value_or(kDefaultDispatchTimeout) + kChildSetupAllowance);
  // The child stops its job on SIGTERM: when this process dies, even by SIGKILL, the
  // kernel sends it one; a signal to this process is forwarded to it.
  options.parent_death_signal = SIGTERM;
  options.stop_grace = kChildStopGrace;
  options.return_when_stopped = true;
  SubprocessResult result;
  try {
    result = run_subprocess(argv, options);
  } catch (const std::exception& e) {
    err << prefix << "pypto-coord: error: " << e.what() << std::endl;
    return ExecStatus::kInfra;
  }

  std::optional<ExecStatus> status;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    if (auto s = parse_marker(line, devices)) {
      status = s;
      continue;
    }
    err << prefix << line << "\n";
  }
  err.flush();
  stopped_by = result.stopped_by;
  if (stopped_by != 0) {
    err << prefix << "pypto-coord: error: stopped by " << InterruptScope::signal_name(stopped_by)
        << " (`" << format_command(argv) << "` " << result.describe() << ")" << std::endl;
    return ExecStatus::kInfra;
  }
  if (status) return *status;
  // No marker: the child died before it could report.
  err << prefix << "pypto-coord: error: `" << format_command(argv) << "` "
      << result.describe() << " without a PYPTO_EXEC_RESULT line" << std::endl;
  // A signal here is the program's doing (a kernel that aborts or exits the
  // process); a timeout or a silent exit means the run never got going.
  return result.term_signal != 0 && !result.timed_out ? ExecStatus::kFail : ExecStatus::kInfra;
}

int exec_manifest(const ExecArgs& args, const DispatchSettings& settings,
                  const std::optional<std::string>& log_level, std::ostream& out,
                  std::ostream& err) {
  std::vector<ManifestEntry> entries;
  try {
    entries = read_exec_manifest(*args.manifest);
  } catch (const std::exception& e) {
    // PyPTO's batch-level failure: one INFRA marker without a work_dir.
    err << "pypto-coord: error: " << e.what() << std::endl;
    out << kMarkerPrefix << "INFRA" << std::endl;
    return static_cast<int>(ExitCode::kInfra);
  }
  if (entries.empty())
    err << "pypto-coord: warning: " << *args.manifest << " lists no work_dir; nothing to run"
        << std::endl;
  std::vector<ExecStatus> statuses;
  for (const ManifestEntry& entry : entries) {
    std::string devices = std::to_string(settings.config.device_id);
    int stopped_by = 0;
    const ExecStatus status =
        exec_in_child(entry, args, log_level, settings.timeout, devices, stopped_by, err);
    statuses.push_back(status);
    out << kMarkerPrefix << exec_status_name(status) << " work_dir=" << entry.work_dir;
    if (status == ExecStatus::kPass) out << " device=" << devices;
    out << std::endl;
    if (stopped_by != 0)
      throw InterruptedError(std::string("interrupted by ") +
                                 InterruptScope::signal_name(stopped_by) + " while running " +
                                 entry.work_dir + "; the later entries were not run");
  }
  return exit_code_for(statuses);
}

}  // namespace

const char* exec_status_name(ExecStatus status) {
  switch (status) {
    case ExecStatus::kPass: return "PASS";
    case ExecStatus::kFail: return "FAIL";
    case ExecStatus::kInfra: return "INFRA";
  }
  return "INFRA";
}

void add_exec_args(CLI::App& cmd, ExecArgs& args) {
  auto* dir = cmd.add_option("dir", args.dir, "build directory to run and validate")
                  ->transform(normal_path);
  auto* manifest = cmd.add_option("--manifest", args.manifest,
                                  "JSON list of {\"work_dir\", \"platform\"} to run in turn");
  dir->excludes(manifest);
  manifest->excludes(dir);
  add_dispatch_flags(cmd, args.dispatch);
}

int run_exec(const ExecArgs& args, const std::optional<std::string>& log_level, std::ostream& out,
             std::ostream& err) {
  if (!args.dir && !args.manifest)
    throw UsageError("exec needs a build directory or --manifest FILE.json");
  // Flag errors are usage errors (exit 2) before any marker: nothing ran.
  const DispatchSettings settings = resolve_dispatch_flags(args.dispatch);
  if (args.manifest) return exec_manifest(args, settings, log_level, out, err);

  std::string devices;
  const ExecStatus status = exec_in_process(*args.dir, args.dispatch, settings, devices, err);
  out << kMarkerPrefix << exec_status_name(status);
  if (status == ExecStatus::kPass) out << " device=" << devices;
  out << std::endl;
  return exit_code_for({status});
}

}  // namespace pypto::coord
