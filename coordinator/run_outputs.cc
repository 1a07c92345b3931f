#include "coordinator/run_outputs.h"

#include <iomanip>
#include <sstream>
#include <system_error>

#include "artifact/build_paths.h"
#include "common/error.h"
#include "common/npy.h"

namespace pypto::coord {

RunStart start_run(const ProgramData& program, const RunRequest& request) {
  if (request.validate && !program.golden)
    throw UsageError("--validate needs " + sidecar_display(program.dir, kGoldenFile) +
                     " and golden/expected/, but " + program.dir.string() +
                     " has no golden/; run without --validate, or pass inputs with --input "
                     "NAME=FILE.npy");
  RunStart start{prepare_arguments(program, request.inputs),
                 request.output_dir.value_or(program.dir / kOutputsDir)};
  remove_output_files(start.output_dir, program.params);
  return start;
}

std::string ms_text(double ms) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(ms < 10 ? 2 : 1) << ms << " ms";
  return out.str();
}

void remove_output_files(const fs::path& dir, const std::vector<ParamInfo>& params) {
  for (const ParamInfo& p : params) {
    std::error_code ec;
    if (p.is_output()) fs::remove(dir / (p.name + ".npy"), ec);
  }
}

std::vector<fs::path> write_output_files(const fs::path& dir, const std::vector<ParamInfo>& params,
                                         const std::vector<Tensor>& args, std::ostream& out) {
  std::vector<fs::path> written;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!params[i].is_output()) continue;
    const fs::path file = dir / (params[i].name + ".npy");
    write_npy(file, args[i]);
    written.push_back(file);
  }
  if (!written.empty()) {
    out << "outputs: ";
    for (size_t i = 0; i < written.size(); ++i) out << (i ? ", " : "") << written[i].string();
    out << "\n";
  }
  return written;
}

ValidationReport validate_and_report(const ProgramData& program, const std::vector<Tensor>& args,
                                     const fs::path& output_dir, std::ostream& out,
                                     const MismatchLocator& locate) {
  ValidationReport report = validate_outputs(program, args);
  if (!report.ok()) {
    out << "validation: FAILED (" << report.failures() << " of " << report.outputs.size()
        << " output(s))" << std::endl;
    std::string msg = "validation of " + program.dir.string() + " failed: " +
                      std::to_string(report.failures()) + " of " +
                      std::to_string(report.outputs.size()) +
                      " output(s) differ from golden/expected";
    for (const auto& o : report.outputs) {
      if (o.ok()) continue;
      msg += "\n  " + o.describe(report.rtol, report.atol);
      if (locate) msg += locate(o);
    }
    msg += "\nactual outputs are in " + output_dir.string() + "/";
    throw ValidationError(msg);
  }
  out << "validation: passed (";
  for (size_t i = 0; i < report.outputs.size(); ++i)
    out << (i ? ", " : "") << report.outputs[i].name << ": " << report.outputs[i].total
        << " elements";
  out << " within rtol=" << report.rtol << ", atol=" << report.atol << ")\n";
  return report;
}

}  // namespace pypto::coord
