#include "coordinator/replay_command.h"

#include "artifact/binary_cache.h"
#include "artifact/splice.h"
#include "coordinator/l3_run.h"
#include "pypto/build_kind.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

void print_splice(const SpliceReport& report, std::ostream& out) {
  if (report.disabled) {
    out << "splice: off (PYPTO_REBUILD_FROM_PTO)\n";
    return;
  }
  for (const std::string& unit : report.spliced)
    out << "splice: re-ran pypto-ptoas on " << unit << "\n";
  for (const std::string& kernel : report.updated_kernels)
    out << "splice: rewrote the generated body of " << kernel << "\n";
  for (const SkippedUnit& s : report.skipped)
    if (s.reason != "up to date") out << "splice: skipped " << s.unit << " (" << s.reason << ")\n";
  if (report.tool_missing)
    out << "splice: pypto-ptoas not found; edits of stale .pto files are NOT applied (set "
           "PTOAS_ROOT to the directory holding pypto-ptoas)\n";
  if (report.spliced.empty() && !report.tool_missing)
    out << "splice: every ptoas/*.pto is older than its ptoas/*.cpp; nothing to splice\n";
}

}  // namespace

void add_replay_args(CLI::App& cmd, ReplayArgs& args) {
  add_run_args(cmd, args.run);
  cmd.add_flag("--no-rebuild-from-pto", args.no_rebuild_from_pto,
               "do not re-run pypto-ptoas on edited ptoas/*.pto files (also "
               "PYPTO_REBUILD_FROM_PTO=0)");
  cmd.add_flag("--no-recompile", args.no_recompile,
               "keep the cached binaries instead of invalidating them; a source whose content "
               "changed is still rebuilt (content-hash key)");
}

int run_replay(const ReplayArgs& args, std::ostream& out) {
  const RunRequest request = make_run_request(args.run);
  const DispatchSettings settings = resolve_dispatch_flags(args.run.dispatch);
  // Loading first: a broken sidecar or an onboard platform fails before any
  // kernel source is rewritten.
  const fs::path dir = args.run.dir;
  const bool distributed = detect_build_kind(dir) == BuildKind::kL3;
  std::optional<CompiledProgram> l2;
  std::optional<DistributedCompiledProgram> l3;
  if (distributed)
    l3 = load_l3_program(dir, args.run.dispatch.platform);
  else
    l2 = load_l2_program(dir, args.run.dispatch.platform, "replay");

  // Both recurse into every next_levels/<r>/ of an L3 build.
  if (args.no_rebuild_from_pto)
    out << "splice: off (--no-rebuild-from-pto)\n";
  else
    print_splice(rebuild_kernel_cpp_from_pto(dir), out);

  // Rank agents compile into their host's store, keyed by content, and replay
  // leaves it alone (other builds share its binaries): an edited source is a
  // new key there and compiles, unchanged ones are reused.
  const char* agents =
      "; the rank agents reuse their host store's binaries of unchanged sources and compile "
      "the sources that changed";
  if (args.no_recompile) {
    out << "cache: kept (--no-recompile)";
    out << (distributed ? agents : "; sources whose content changed are still rebuilt") << "\n";
  } else {
    const size_t removed = invalidate_binary_cache(dir);
    out << "cache: invalidated " << removed << " cached binar" << (removed == 1 ? "y" : "ies");
    out << (distributed ? std::string(" in the build directory") + agents
                        : std::string("; every source is compiled again"))
        << "\n";
  }
  if (distributed)
    run_l3_program(*l3, request, settings, out);
  else
    run_l2_program(*l2, request, settings, out);
  return 0;
}

}  // namespace pypto::coord
