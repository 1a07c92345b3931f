#include "artifact/assembler.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <set>

#include "artifact/binary_cache.h"
#include "common/log.h"
#include "pypto/error.h"

namespace pypto {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRemedy =
    "recompile the program into the directory (pypto-compile prog.ptl -o <dir>)";

void check_source(const fs::path& build_dir, const std::string& rel) {
  fs::path path(rel);
  const std::string shown = (build_dir / path).string();
  bool escapes = path.empty() || path.is_absolute();
  for (const auto& part : path) escapes = escapes || part == "..";
  if (escapes)
    throw ArtifactError(shown, "", "a source must be a relative path inside the build directory",
                        kRemedy);
  std::error_code ec;
  if (!fs::is_regular_file(build_dir / path, ec))
    throw ArtifactError(shown, "", "the source to compile is missing", kRemedy);
}

}  // namespace

AssembledBinaries assemble(const fs::path& build_dir, const std::vector<std::string>& rel_sources,
                           const AssembleOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  const fs::path dir = fs::absolute(build_dir, ec).lexically_normal();
  std::vector<std::string> sources;
  std::set<std::string> seen;
  for (const auto& rel : rel_sources) {
    check_source(dir, rel);
    if (seen.insert(rel).second) sources.push_back(rel);
  }
  if (sources.empty()) return {};
  const fs::path store = options.store_dir ? *options.store_dir : default_binary_store(dir);

  // A small pool: compiles are independent; sources with the same key
  // serialize on the key's lock inside obtain_binary.
  std::vector<std::optional<CachedBinary>> built(sources.size());
  std::vector<std::exception_ptr> errors(sources.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < sources.size(); i = next++) {
      try {
        built[i] = obtain_binary(dir, dir / sources[i], options.platform, options.arch, store);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t threads = std::clamp<size_t>(options.jobs, 1, sources.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();

  AssembledBinaries result;
  std::map<std::string, CachedBinary> succeeded;
  size_t compiled = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!built[i]) continue;
    result.emplace(sources[i], built[i]->path);
    succeeded.emplace(sources[i], *built[i]);
    compiled += built[i]->compiled ? 1 : 0;
  }
  if (options.stats) {
    options.stats->compiled = compiled;
    options.stats->cached = succeeded.size() - compiled;
  }
  // Record what did build even when something else failed: those binaries exist.
  if (!succeeded.empty()) {
    try {
      record_binaries(dir, succeeded, options.platform, options.arch);
    } catch (const std::exception& e) {
      log::warn("cannot update the binary cache stamp: {}", e.what());
    }
  }

  // Compile errors are the program's fault and are reported together; other
  // failures are logged so none goes unseen, and the first one is rethrown.
  std::vector<std::pair<std::string, std::string>> compile_errors;  // source, message
  std::exception_ptr first_compile_error;
  std::vector<size_t> other_errors;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const KernelCompileError& e) {
      if (!first_compile_error) first_compile_error = errors[i];
      compile_errors.emplace_back(e.source(), e.what());
    } catch (...) {
      other_errors.push_back(i);
    }
  }
  const size_t thrown_other = compile_errors.empty() ? 1 : 0;
  for (size_t k = thrown_other; k < other_errors.size(); ++k) {
    try {
      std::rethrow_exception(errors[other_errors[k]]);
    } catch (const std::exception& e) {
      log::error("assembling {} failed: {}", sources[other_errors[k]], e.what());
    } catch (...) {
      log::error("assembling {} failed", sources[other_errors[k]]);
    }
  }
  if (compile_errors.size() == 1) std::rethrow_exception(first_compile_error);
  if (compile_errors.size() > 1) {
    std::string names;
    std::string diagnostics;
    for (size_t i = 0; i < compile_errors.size(); ++i) {
      names += (i ? ", " : "") + compile_errors[i].first;
      diagnostics += "[" + std::to_string(i + 1) + "/" + std::to_string(compile_errors.size()) +
                     "] " + compile_errors[i].second + "\n";
    }
    throw KernelCompileError(names, diagnostics);
  }
  if (!other_errors.empty()) std::rethrow_exception(errors[other_errors.front()]);

  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  log::timing("assembled {} sources in {} ms ({} compiled, {} from the cache)", sources.size(), ms,
              compiled, sources.size() - compiled);
  return result;
}

}  // namespace pypto
