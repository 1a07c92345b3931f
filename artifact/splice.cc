#include "artifact/splice.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "common/fs_util.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "pypto/error.h"

namespace pypto {

namespace {

constexpr auto kPtoasTimeout = std::chrono::minutes(5);
constexpr size_t kMaxDiagnosticLines = 60;
constexpr const char* kSentinelRemedy =
    "put back the two sentinel lines \"// --- ptoas-generated code ---\" and "
    "\"// --- Kernel entry point ---\" (in that order, once each) around the generated body, or "
    "recompile the program into the directory (pypto-compile prog.ptl -o <dir>)";

struct PendingUnit {
  fs::path pto;
  fs::path cpp;
  fs::path level;  // the (sub-)build holding ptoas/ and kernels/
  std::string unit;
  std::string display;  // the .pto relative to the top build directory
};

std::string trimmed(std::string_view line) {
  size_t b = 0, e = line.size();
  while (b < e && std::isspace(static_cast<unsigned char>(line[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(line[e - 1]))) --e;
  return std::string(line.substr(b, e - b));
}

bool newer(const fs::path& a, const fs::path& b) {
  std::error_code ea, eb;
  auto ta = fs::last_write_time(a, ea);
  auto tb = fs::last_write_time(b, eb);
  return ea || eb || ta > tb;
}

// Collects the .pto units of `level` and its next_levels/*/ that need pypto-ptoas.
void collect(const fs::path& top, const fs::path& level, std::vector<PendingUnit>& pending,
             SpliceReport& report) {
  std::error_code ec;
  const fs::path ptoas = level / "ptoas";
  if (fs::is_directory(ptoas, ec)) {
    std::vector<fs::path> ptos;
    for (const auto& entry : fs::directory_iterator(ptoas, ec))
      if (entry.path().extension() == ".pto" && entry.is_regular_file(ec))
        ptos.push_back(entry.path());
    std::sort(ptos.begin(), ptos.end());
    for (const auto& pto : ptos) {
      PendingUnit unit{pto, fs::path(pto).replace_extension(".cpp"), level, pto.stem().string(),
                       display_path(pto, top)};
      if (fs::exists(unit.cpp, ec) && !newer(unit.pto, unit.cpp))
        report.skipped.push_back({unit.display, "up to date"});
      else
        pending.push_back(std::move(unit));
    }
  }
  const fs::path next_levels = level / "next_levels";
  if (fs::is_directory(fs::symlink_status(next_levels, ec))) {
    std::vector<fs::path> levels;
    for (const auto& entry : fs::directory_iterator(next_levels, ec))
      if (fs::is_directory(entry.symlink_status(ec))) levels.push_back(entry.path());
    std::sort(levels.begin(), levels.end());
    for (const auto& sub : levels) collect(top, sub, pending, report);
  }
}

std::string trim_output(const std::string& output) {
  std::istringstream in(output);
  std::string line, kept;
  size_t lines = 0;
  while (std::getline(in, line))
    if (++lines <= kMaxDiagnosticLines) kept += line + "\n";
  if (lines > kMaxDiagnosticLines)
    kept += "... (trimmed: " + std::to_string(lines - kMaxDiagnosticLines) + " more lines)\n";
  return kept.empty() ? "(pypto-ptoas printed nothing)\n" : kept;
}

bool has_sentinel_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trimmed(line);
    if (t == kPtoasBeginSentinel || t == kKernelEntrySentinel) return true;
  }
  return false;
}

// Runs pypto-ptoas on one unit; returns the temporary output it wrote.
fs::path run_ptoas(const fs::path& tool, const PendingUnit& unit) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = unit.pto.parent_path();
  const std::string tmp_name = "." + unit.unit + ".tmp-" + std::to_string(::getpid()) + "-" +
                               std::to_string(counter++) + ".cpp";
  const std::vector<std::string> command = {tool.string(), unit.pto.filename().string(), "-o",
                                            tmp_name};
  SubprocessOptions options;
  options.timeout = kPtoasTimeout;
  options.cwd = dir;
  log::debug("splice: {} (in {})", format_command(command), dir.string());
  SubprocessResult result = run_subprocess(command, options);
  fs::path tmp = dir / tmp_name;  // not const: returned by move
  std::error_code ec;
  if (!result.ok()) {
    fs::remove(tmp, ec);
    const std::string detail = trim_output(result.output) + "command (in " + dir.string() +
                               "): " + format_command(command);
    if (result.timed_out || result.term_signal != 0)
      throw ToolError("pypto-ptoas " + result.describe() + " on " + unit.display + "\n" + detail);
    throw KernelCompileError(unit.display, "pypto-ptoas " + result.describe() + ":\n" + detail);
  }
  if (!fs::is_regular_file(tmp, ec))
    throw ToolError("pypto-ptoas exited 0 but wrote no output for " + unit.display +
                    "\ncommand (in " + dir.string() + "): " + format_command(command));
  return tmp;
}

void splice_unit(const fs::path& tool, const fs::path& top, const PendingUnit& unit,
                 SpliceReport& report) {
  std::error_code ec;
  std::vector<fs::path> kernels;
  for (const char* core : {"aic", "aiv"}) {
    fs::path kernel = unit.level / "kernels" / core / (unit.unit + ".cpp");
    if (fs::is_regular_file(kernel, ec)) kernels.push_back(kernel);
  }
  if (kernels.empty()) {
    log::warn(
        "splice: {} has no kernels/aic/{}.cpp or kernels/aiv/{}.cpp to splice into; "
        "skipped",
        unit.display, unit.unit, unit.unit);
    report.skipped.push_back({unit.display, "no matching kernel source"});
    return;
  }
  // Check the sentinels before running the tool, so a broken kernel file
  // fails fast and leaves everything as it was.
  std::vector<std::string> texts;
  for (const auto& kernel : kernels) {
    texts.push_back(read_file(kernel));
    splice_between_sentinels(texts.back(), "", display_path(kernel, top));
  }

  const fs::path tmp = run_ptoas(tool, unit);
  try {
    const std::string body = read_file(tmp);
    if (has_sentinel_line(body))
      throw ArtifactError(unit.display, "",
                          "pypto-ptoas output contains a sentinel line, so it cannot be spliced",
                          "remove the sentinel comment from the .pto");
    std::vector<std::string> spliced;
    for (size_t i = 0; i < kernels.size(); ++i)
      spliced.push_back(splice_between_sentinels(texts[i], body, display_path(kernels[i], top)));
    for (size_t i = 0; i < kernels.size(); ++i) {
      fs::perms mode = fs::status(kernels[i], ec).permissions();
      if (ec)
        mode = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
               fs::perms::others_read;
      write_file_atomic(kernels[i], spliced[i], mode);
      report.updated_kernels.push_back(display_path(kernels[i], top));
    }
    // Last: from now on the unit counts as up to date.
    fs::rename(tmp, unit.cpp, ec);
    if (ec)
      throw InfraError("cannot move " + tmp.string() + " to " + unit.cpp.string() + ": " +
                       ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  report.spliced.push_back(unit.display);
  log::info("splice: {} -> {}", unit.display, fs::path(unit.cpp).filename().string());
}

}  // namespace

std::string SpliceReport::summary() const {
  if (disabled) return "splice disabled (PYPTO_REBUILD_FROM_PTO=0)";
  std::string text = std::to_string(spliced.size()) + " unit(s) spliced into " +
                     std::to_string(updated_kernels.size()) + " kernel source(s), " +
                     std::to_string(skipped.size()) + " skipped";
  // Each reason once, counted, in order of first appearance ("8 skipped: 8 up to date").
  std::vector<std::pair<std::string, size_t>> reasons;
  for (const SkippedUnit& s : skipped) {
    auto it = std::find_if(reasons.begin(), reasons.end(),
                           [&](const auto& r) { return r.first == s.reason; });
    if (it == reasons.end())
      reasons.emplace_back(s.reason, 1);
    else
      ++it->second;
  }
  for (size_t i = 0; i < reasons.size(); ++i)
    text += (i ? ", " : ": ") + std::to_string(reasons[i].second) + " " + reasons[i].first;
  return text;
}

bool rebuild_from_pto_enabled() {
  const char* env = std::getenv("PYPTO_REBUILD_FROM_PTO");
  if (!env) return true;
  std::string value = trimmed(env);
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return !(value == "0" || value == "false" || value == "off" || value == "no");
}

std::optional<fs::path> find_pypto_ptoas() {
  if (const char* root = std::getenv("PTOAS_ROOT"); root && *root) {
    for (const fs::path& candidate :
         {fs::path(root) / "pypto-ptoas", fs::path(root) / "bin" / "pypto-ptoas"}) {
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
        return fs::absolute(candidate, ec).lexically_normal();
    }
  }
  return find_program_in_path("pypto-ptoas");
}

std::string splice_between_sentinels(const std::string& kernel_text, const std::string& body,
                                     const std::string& kernel_file) {
  std::vector<size_t> begins, ends;  // byte offsets of the sentinel lines
  std::vector<size_t> begin_next;    // offset just past each begin line
  size_t pos = 0;
  while (pos < kernel_text.size()) {
    size_t eol = kernel_text.find('\n', pos);
    size_t next = eol == std::string::npos ? kernel_text.size() : eol + 1;
    std::string line = trimmed(std::string_view(kernel_text).substr(pos, next - pos));
    if (line == kPtoasBeginSentinel) {
      begins.push_back(pos);
      begin_next.push_back(next);
    } else if (line == kKernelEntrySentinel) {
      ends.push_back(pos);
    }
    pos = next;
  }
  auto fail = [&](const std::string& problem) {
    throw ArtifactError(kernel_file, "", problem, kSentinelRemedy);
  };
  if (begins.empty()) fail("the line \"" + std::string(kPtoasBeginSentinel) + "\" is missing");
  if (ends.empty()) fail("the line \"" + std::string(kKernelEntrySentinel) + "\" is missing");
  if (begins.size() > 1)
    fail("the line \"" + std::string(kPtoasBeginSentinel) + "\" appears " +
         std::to_string(begins.size()) + " times");
  if (ends.size() > 1)
    fail("the line \"" + std::string(kKernelEntrySentinel) + "\" appears " +
         std::to_string(ends.size()) + " times");
  if (ends[0] < begins[0])
    fail("the line \"" + std::string(kKernelEntrySentinel) + "\" comes before \"" +
         std::string(kPtoasBeginSentinel) + "\"");

  std::string out = kernel_text.substr(0, begin_next[0]);
  if (out.back() != '\n') out += '\n';
  out += body;
  if (!body.empty() && body.back() != '\n') out += '\n';
  out += kernel_text.substr(ends[0]);
  return out;
}

SpliceReport rebuild_kernel_cpp_from_pto(const fs::path& build_dir) {
  SpliceReport report;
  if (!rebuild_from_pto_enabled()) {
    report.disabled = true;
    log::info("splice: skipped, PYPTO_REBUILD_FROM_PTO={} turns it off",
              std::getenv("PYPTO_REBUILD_FROM_PTO"));
    return report;
  }
  std::error_code ec;
  const fs::path top = fs::absolute(build_dir, ec).lexically_normal();
  std::vector<PendingUnit> pending;
  collect(top, top, pending, report);
  if (pending.empty()) return report;

  report.tool = find_pypto_ptoas();
  if (!report.tool) {
    // Never silent: the user edited a .pto and would otherwise measure the old kernel.
    report.tool_missing = true;
    std::string units;
    for (const auto& unit : pending) {
      units += (units.empty() ? "" : ", ") + unit.display;
      report.skipped.push_back({unit.display, "pypto-ptoas not found"});
    }
    const char* root = std::getenv("PTOAS_ROOT");
    log::warn(
        "splice skipped: {} .pto file(s) are newer than their generated .cpp ({}), but "
        "pypto-ptoas was found neither in PTOAS_ROOT ({}) nor on PATH, so the kernels "
        "keep their current bodies; set PTOAS_ROOT to the directory holding pypto-ptoas "
        "to splice .pto edits",
        pending.size(), units, root ? root : "unset");
    return report;
  }
  for (const auto& unit : pending) splice_unit(*report.tool, top, unit, report);
  log::info("splice: {}", report.summary());
  return report;
}

}  // namespace pypto
