#include "artifact/compiler_identity.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "common/subprocess.h"
#include "pypto/error.h"

namespace pypto {

namespace fs = std::filesystem;

namespace {

constexpr const char* kInstallHint =
    "install a C++ compiler (apt-get install g++) or set PYPTO_CXX to one";

struct Choice {
  std::string spec;       // the value as given ("c++", "/usr/bin/g++", "./cxx")
  std::string chosen_by;  // where it came from
};

Choice choose_compiler() {
  for (const char* var : {"PYPTO_CXX", "CXX"})
    if (const char* value = std::getenv(var); value && *value) return {value, var};
  return {"c++", "PATH"};
}

std::string describe_choice(const Choice& choice) {
  if (choice.chosen_by == "PATH") return "c++ (no PYPTO_CXX or CXX set; looked in PATH)";
  return choice.chosen_by + "=" + choice.spec;
}

fs::path resolve(const Choice& choice) {
  if (choice.spec.find('/') == std::string::npos) {
    if (auto found = find_program_in_path(choice.spec)) return *found;
    throw ToolError("no C++ compiler: " + describe_choice(choice) + " was not found in PATH; " +
                    kInstallHint);
  }
  std::error_code ec;
  fs::path path = fs::absolute(choice.spec, ec).lexically_normal();
  if (ec || !fs::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0)
    throw ToolError("no C++ compiler: " + describe_choice(choice) + " is not an executable file; " +
                    kInstallHint);
  return path;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

std::string CompilerIdentity::identity() const {
  return path.string() + "\n" + resolved.string() + "\n" + version;
}

std::string CompilerIdentity::summary() const {
  return path.string() + " (" + first_line(version) + ")";
}

fs::path resolve_host_compiler() { return resolve(choose_compiler()); }

CompilerIdentity host_compiler_identity() {
  static std::mutex mutex;
  static std::map<std::string, CompilerIdentity> cache;

  Choice choice = choose_compiler();
  fs::path path = resolve(choice);
  const std::string cache_key = choice.chosen_by + "\n" + path.string();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(cache_key); it != cache.end()) return it->second;
  }

  SubprocessOptions options;
  options.timeout = std::chrono::seconds(60);
  SubprocessResult result;
  try {
    result = run_subprocess({path.string(), "--version"}, options);
  } catch (const ToolError& e) {
    throw ToolError(std::string("no C++ compiler: ") + e.what() + "; " + kInstallHint);
  }
  if (!result.ok() || result.output.empty())
    throw ToolError("no C++ compiler: " + path.string() + " (from " + describe_choice(choice) +
                    ") does not answer --version: it " + result.describe() +
                    (result.output.empty() ? "" : ":\n" + result.output) + "\n" + kInstallHint);

  CompilerIdentity identity;
  identity.path = path;
  std::error_code ec;
  identity.resolved = fs::canonical(path, ec);
  if (ec) identity.resolved = path;
  identity.version = result.output;
  identity.chosen_by = choice.chosen_by;
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(cache_key, identity).first->second;
}

const std::vector<std::string>& kernel_compile_flags() {
  // -O2 rather than -march=native: a host-wide store may be shared by hosts
  // with different CPUs, and the key cannot see the CPU. No visibility flag:
  // kernels export their extern "C" entries with default visibility.
  static const std::vector<std::string> flags = {"-std=c++17", "-O2",      "-fPIC",
                                                 "-shared",    "-include", kKernelForcedHeader};
  return flags;
}

std::vector<std::string> kernel_compile_command(const fs::path& compiler,
                                                const fs::path& include_dir, const fs::path& source,
                                                const fs::path& output) {
  std::vector<std::string> argv = {compiler.string()};
  const auto& flags = kernel_compile_flags();
  for (size_t i = 0; i < flags.size(); ++i) {
    argv.push_back(flags[i]);
    // The forced header by absolute path: GCC would look for it in the
    // working directory first.
    if (flags[i] == "-include" && i + 1 < flags.size()) {
      argv.push_back((include_dir / flags[++i]).string());
    }
  }
  argv.push_back("-I" + include_dir.string());
  argv.push_back("-I" + source.parent_path().string());
  argv.push_back(source.string());
  argv.push_back("-o");
  argv.push_back(output.string());
  return argv;
}

}  // namespace pypto
