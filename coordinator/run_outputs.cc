#include "coordinator/run_outputs.h"

#include <cstring>
#include <iomanip>
#include <sstream>
#include <system_error>

#include "artifact/build_paths.h"
#include "pypto/error.h"
#include "pypto/npy.h"

namespace pypto::coord {

namespace {

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == cb.nbytes() && std::memcmp(ca.data(), cb.data(), ca.nbytes()) == 0;
}

// --validate compares with golden/expected, which the compiler computed from
// golden/inputs and the recorded scalars: other data needs its own expected
// outputs (--expected), or a build whose golden/ was made from it.
void check_golden_applies(const ProgramData& program, const RunRequest& request,
                          const ProgramArguments& args, const std::vector<ScalarValue>& scalars) {
  std::vector<std::string> differences;
  for (const InputOverride& o : request.inputs) {
    size_t i = 0;
    while (i < program.params.size() && program.params[i].name != o.name) ++i;
    if (i == program.params.size()) continue;  // prepare_arguments rejected it already
    const fs::path golden_input = GoldenSpec::input_path(program.dir, o.name);
    std::error_code ec;
    bool same = false;
    if (fs::exists(golden_input, ec)) {
      try {
        same = same_tensor(args.tensors[i], read_npy(golden_input));
      } catch (const Error&) {
        same = false;
      }
    }
    if (!same)
      differences.push_back("--input " + o.name + "=" + o.file.string() + " differs from golden/inputs/" +
                            o.name + ".npy");
  }
  for (size_t k = 0; k < program.scalars.size() && k < scalars.size(); ++k)
    if (!(scalars[k] == program.scalars[k].value))
      differences.push_back("--scalar " + program.scalars[k].name + "=" + scalars[k].text() +
                            " differs from the " + program.scalars[k].value.text() +
                            " golden/ was computed with");
  if (differences.empty()) return;
  std::vector<std::string> missing;
  for (const std::string& name : program.golden->outputs) {
    bool given = false;
    for (const InputOverride& e : request.expected) given = given || e.name == name;
    if (!given) missing.push_back(name);
  }
  if (missing.empty()) return;
  std::string msg = "--validate: golden/expected/ of " + program.dir.string() +
                    " was computed from other data (";
  for (size_t i = 0; i < differences.size(); ++i) msg += (i ? "; " : "") + differences[i];
  msg += "), so it cannot validate these outputs; give the expected outputs with";
  for (const std::string& name : missing) msg += " --expected " + name + "=FILE.npy";
  msg += ", or compile a build whose golden data comes from these inputs (pypto-compile "
         "--input NAME=FILE.npy --scalar NAME=VALUE)";
  throw UsageError(msg);
}

}  // namespace

RunStart start_run(const ProgramData& program, const RunRequest& request) {
  if (request.validate && !program.golden)
    throw UsageError("--validate needs " + sidecar_display(program.dir, kGoldenFile) +
                     " and golden/expected/, but " + program.dir.string() +
                     " has no golden/; run without --validate, or pass inputs with --input "
                     "NAME=FILE.npy");
  if (!request.validate && !request.expected.empty())
    throw UsageError("--expected gives expected outputs for --validate; add --validate");
  for (const InputOverride& e : request.expected) {
    const ParamInfo* p = find_param(program.params, e.name);
    if (!p || !p->is_output()) {
      std::string outputs;
      for (const ParamInfo& q : program.params)
        if (q.is_output()) outputs += (outputs.empty() ? "" : ", ") + q.name;
      throw UsageError("--expected " + e.name + "=" + e.file.string() + ": '" + e.name +
                       "' is not an output of '" + program.name + "' (its outputs: " +
                       (outputs.empty() ? "none" : outputs) + ")");
    }
  }
  RunStart start{prepare_arguments(program, request.inputs),
                 request.output_dir.value_or(program.dir / kOutputsDir),
                 scalar_values(program.scalars, request.scalars)};
  if (request.validate) check_golden_applies(program, request, start.args, start.scalars);
  remove_output_files(start.output_dir, program.params);
  return start;
}

std::string scalars_line(const ProgramData& program, const std::vector<ScalarValue>& values) {
  if (program.scalars.empty()) return "";
  std::string line = "scalars: ";
  for (size_t k = 0; k < program.scalars.size() && k < values.size(); ++k)
    line += (k ? ", " : "") + program.scalars[k].name + "=" + values[k].text();
  return line + "\n";
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
                                     const MismatchLocator& locate,
                                     const std::vector<InputOverride>& expected) {
  ValidationReport report = validate_outputs(program, args, expected);
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
