#include "compiler/pto/ptoas_tool.h"

#include <fstream>
#include <ostream>
#include <sstream>

#include "common/version.h"
#include "compiler/pto/pto_emit_cpp.h"
#include "compiler/pto/pto_parser.h"

namespace pypto::compiler {

namespace {
constexpr const char* kUsage =
    "usage: pypto-ptoas <unit>.pto -o <unit>.cpp\n"
    "  Translates a tile-level kernel listing (docs/pto-format.md) into the C++ body of\n"
    "  its kernel (static void ptoas_<unit>(const pypto_kernel_args*)).\n"
    "  --version  print the version and the source revision\n";
}  // namespace

int run_ptoas(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string input, output;
  bool have_output = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return 0;
    }
    if (a == "--version") {
      out << version_text("pypto-ptoas") << "\n";
      return 0;
    }
    if (a == "-o") {
      if (i + 1 >= args.size() || have_output) {
        err << "pypto-ptoas: error: " << (have_output ? "-o given twice" : "-o needs a file")
            << "\n"
            << kUsage;
        return 2;
      }
      output = args[++i];
      have_output = true;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      err << "pypto-ptoas: error: unknown option '" << a << "'\n" << kUsage;
      return 2;
    } else if (input.empty()) {
      input = a;
    } else {
      err << "pypto-ptoas: error: more than one input ('" << input << "' and '" << a << "')\n"
          << kUsage;
      return 2;
    }
  }
  if (input.empty() || !have_output || output.empty()) {
    err << "pypto-ptoas: error: " << (input.empty() ? "no input .pto" : "no output (-o)") << "\n"
        << kUsage;
    return 2;
  }
  std::ifstream in(input, std::ios::binary);
  if (!in) {
    err << "pypto-ptoas: error: cannot read '" << input << "'\n";
    return 1;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  SourceManager sources;
  const int32_t file = sources.add(input, ss.str());
  DiagnosticEngine diags(sources);
  std::optional<pto::Unit> unit = pto::parse(sources, file, diags);
  if (!unit) {
    std::string text = diags.render();
    // The engine names the front end; this is pypto-ptoas.
    const std::string from = "pypto-compile: ", to = "pypto-ptoas: ";
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()))
      text.replace(p, from.size(), to);
    err << text << diags.error_count() << " error" << (diags.error_count() == 1 ? "" : "s")
        << " generated.\n";
    return 1;
  }
  const std::string cpp = pto::emit_cpp(*unit);
  std::ofstream file_out(output, std::ios::binary | std::ios::trunc);
  if (file_out) file_out << cpp;
  file_out.close();
  if (!file_out) {
    err << "pypto-ptoas: error: cannot write '" << output << "'\n";
    return 3;
  }
  return 0;
}

}  // namespace pypto::compiler
