#include "artifact/binary_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <regex>
#include <sstream>

#include "artifact/compiler_identity.h"
#include "artifact/include_closure.h"
#include "artifact/kernel_headers.h"
#include "artifact/loaded_binary.h"
#include "common/file_lock.h"
#include "common/fs_util.h"
#include "common/hash.h"
#include "common/json_reader.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "pypto/error.h"
#include "pypto/kernel_abi.h"

namespace pypto {

namespace {

constexpr int64_t kStampSchema = 1;
constexpr size_t kMaxDiagnosticLines = 60;
constexpr auto kCompileTimeout = std::chrono::minutes(10);

fs::path absolute_normal(const fs::path& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  return (ec ? path : abs).lexically_normal();
}

bool inside(const fs::path& path, const fs::path& dir) {
  fs::path rel = path.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

// The key from its parts; `include_dir` is where pypto/kernel_abi.h lives.
CacheKey compute_key(const fs::path& source, const fs::path& include_dir,
                     const std::string& platform, const std::string& arch) {
  CacheKey result;
  CompilerIdentity compiler;
  try {
    compiler = host_compiler_identity();
  } catch (const std::exception& e) {
    result.failure = std::string("the compiler's identity is unknown: ") + e.what();
    return result;
  }
  const std::vector<fs::path> dirs = {include_dir, source.parent_path()};
  IncludeClosure forced = include_closure(include_dir / kKernelForcedHeader, dirs);
  if (!forced.ok()) {
    result.failure = "kernel ABI header: " + forced.failure;
    return result;
  }
  IncludeClosure closure = include_closure(source, dirs);
  if (!closure.ok()) {
    result.failure = closure.failure;
    return result;
  }

  Hasher hasher;
  hasher.add("pypto-binary-cache/1");
  hasher.add("abi").add(std::to_string(PYPTO_KERNEL_ABI_VERSION));
  hasher.add("compiler").add(compiler.identity());
  hasher.add("flags").add(std::to_string(kernel_compile_flags().size()));
  for (const auto& flag : kernel_compile_flags()) hasher.add(flag);
  hasher.add("platform").add(platform).add("arch").add(arch);
  hasher.add("forced").add(kKernelForcedHeader).add(forced.source_content);
  for (const auto& file : forced.files) hasher.add(file.name).add(file.content);
  hasher.add("source").add(closure.source_content);
  hasher.add("closure").add(std::to_string(closure.files.size()));
  for (const auto& file : closure.files) hasher.add(file.name).add(file.content);
  result.key = hasher.hex();
  return result;
}

// Why `binary` may not be used, or nullopt when it loads and reports our ABI.
std::optional<std::string> abi_problem(const fs::path& binary) {
  try {
    LoadedBinary loaded(binary);
    auto version = loaded.abi_version();
    if (!version) return std::string("it does not export pypto_abi_version()");
    if (*version != PYPTO_KERNEL_ABI_VERSION)
      return "it reports kernel ABI version " + std::to_string(*version) + ", this runtime has " +
             std::to_string(PYPTO_KERNEL_ABI_VERSION);
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

std::string trim_diagnostics(const std::string& output, const std::vector<std::string>& command) {
  std::istringstream in(output);
  std::string line;
  std::string kept;
  size_t lines = 0;
  while (std::getline(in, line)) {
    if (++lines <= kMaxDiagnosticLines) kept += line + "\n";
  }
  if (lines > kMaxDiagnosticLines)
    kept += "... (trimmed: " + std::to_string(lines - kMaxDiagnosticLines) + " more of " +
            std::to_string(lines) + " lines; run the command below to see them all)\n";
  if (kept.empty()) kept = "(the compiler printed nothing)\n";
  return kept + "command: " + format_command(command);
}

// Compiles to a temporary sibling of `output`, checks it loads with our ABI,
// then renames it into place: nothing half-written is ever visible.
void compile_binary(const fs::path& compiler, const fs::path& include_dir, const fs::path& source,
                    const std::string& display, const fs::path& output) {
  const fs::path tmp = temp_sibling(output);
  const std::vector<std::string> command =
      kernel_compile_command(compiler, include_dir, source, tmp);
  log::debug("compiling {}: {}", display, format_command(command));
  // The compiler's own temporaries (cc1plus's .s, collect2's files) go to a
  // directory of ours, removed whatever happens: a compiler killed at its
  // deadline would otherwise leave them in /tmp.
  struct CompilerTemp {
    fs::path dir;
    ~CompilerTemp() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } compiler_temp{fs::path(tmp.string() + ".tmpdir")};
  {
    std::error_code ec;
    fs::create_directories(compiler_temp.dir, ec);
    if (ec)
      throw InfraError("cannot create " + compiler_temp.dir.string() +
                       " for the compiler's temporary files: " + ec.message());
  }
  SubprocessOptions options;
  options.timeout = kCompileTimeout;
  options.extra_env = {"TMPDIR=" + compiler_temp.dir.string()};
  SubprocessResult result;
  try {
    result = run_subprocess(command, options);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  if (!result.ok()) {
    fs::remove(tmp, ec);
    if (result.timed_out || result.term_signal != 0)
      throw ToolError("the C++ compiler " + compiler.string() + " " + result.describe() +
                      " while compiling " + display + "\n" +
                      trim_diagnostics(result.output, command));
    throw KernelCompileError(display, trim_diagnostics(result.output, command));
  }
  if (!fs::exists(tmp, ec))
    throw ToolError("the C++ compiler " + compiler.string() + " exited 0 but wrote no binary for " +
                    display + "\ncommand: " + format_command(command));
  if (auto problem = abi_problem(tmp)) {
    fs::remove(tmp, ec);
    throw InfraError("the freshly built binary of " + display + " is unusable: " + *problem +
                     "; check that PYPTO_INCLUDE_DIR (now " + include_dir.string() +
                     ") holds the headers of this runtime");
  }
  fs::rename(tmp, output, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw InfraError("cannot move " + tmp.string() + " to " + output.string() + ": " +
                     ec.message());
  }
}

void create_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InfraError("cannot create " + dir.string() + ": " + ec.message());
}

bool is_cache_binary_name(const std::string& name) {
  static const std::regex pattern("^([0-9a-f]{64}|uncached-[0-9]+-[0-9]+)\\.so$");
  return std::regex_match(name, pattern);
}

fs::path stamp_lock_path(const fs::path& build_dir) {
  return build_dir / "cache" / "binary_context.lock";
}

}  // namespace

fs::path default_binary_store(const fs::path& build_dir) {
  return absolute_normal(build_dir) / "cache" / "bin";
}

fs::path binary_context_path(const fs::path& build_dir) {
  return build_dir / "cache" / "binary_context.json";
}

CacheKey binary_cache_key(const fs::path& source, const std::string& platform,
                          const std::string& arch) {
  fs::path include_dir;
  try {
    include_dir = kernel_include_dir();
  } catch (const std::exception& e) {
    return {"", e.what()};
  }
  return compute_key(absolute_normal(source), include_dir, platform, arch);
}

CachedBinary obtain_binary(const fs::path& build_dir, const fs::path& source,
                           const std::string& platform, const std::string& arch,
                           const fs::path& store) {
  const fs::path abs_build = absolute_normal(build_dir);
  const fs::path abs_source = absolute_normal(source);
  const std::string display = display_path(abs_source, abs_build);
  const fs::path include_dir = kernel_include_dir();
  // Without a compiler nothing can be built, cached or not: say so first.
  const fs::path compiler = resolve_host_compiler();

  CacheKey key = compute_key(abs_source, include_dir, platform, arch);
  if (!key.ok()) {
    // Fail closed: build a private binary that nobody will ever reuse.
    static std::atomic<unsigned> counter{0};
    const fs::path private_dir = default_binary_store(abs_build);
    create_dir(private_dir);
    const fs::path output = private_dir / ("uncached-" + std::to_string(::getpid()) + "-" +
                                           std::to_string(counter++) + ".so");
    log::warn(
        "binary cache: cannot establish the cache key of {} ({}); rebuilding it outside "
        "the cache (fail closed)",
        display, key.failure);
    compile_binary(compiler, include_dir, abs_source, display, output);
    return {output, "", true};
  }

  const fs::path abs_store = absolute_normal(store);
  create_dir(abs_store);
  const fs::path binary = abs_store / (key.key + ".so");
  std::error_code ec;
  if (fs::exists(binary, ec) && !abi_problem(binary)) {
    log::debug("binary cache: hit for {} ({})", display, binary.string());
    return {binary, key.key, false};
  }

  // Whoever holds the lock builds; the others find the binary when they get it.
  FileLock lock(abs_store / (key.key + ".lock"));
  if (fs::exists(binary, ec)) {
    auto problem = abi_problem(binary);
    if (!problem) return {binary, key.key, false};
    log::warn("binary cache: {} (built from {}) is invalid: {}; deleting it and rebuilding",
              binary.string(), display, *problem);
    fs::remove(binary, ec);
  }
  compile_binary(host_compiler_identity().path, include_dir, abs_source, display, binary);
  log::debug("binary cache: compiled {} -> {}", display, binary.string());
  return {binary, key.key, true};
}

std::optional<BinaryContext> read_binary_context(const fs::path& build_dir) {
  const fs::path path = binary_context_path(build_dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const fs::path abs_build = absolute_normal(build_dir);
  try {
    Json storage;
    JsonObject stamp = load_json_object(
        path, path.string(), "it is a cache file: delete it, the next run rewrites it", storage);
    stamp.expect_schema(kStampSchema);
    BinaryContext context;
    context.abi_version = stamp.integer("abi_version");
    context.compiler = stamp.string("compiler");
    context.flags = stamp.strings("flags");
    context.platform = stamp.string("platform");
    context.arch = stamp.string("arch");
    const Json& entries = stamp.raw("entries");
    if (!entries.is_object()) stamp.fail("entries", "must be an object");
    stamp.reject_unknown_keys();
    auto source = std::make_shared<JsonSource>(stamp.source());
    for (const auto& [rel, value] : entries.items()) {
      JsonObject entry(value, source, "entries." + rel);
      BinaryContextEntry parsed;
      parsed.key = entry.string("key");
      fs::path binary = entry.string("binary");
      parsed.binary = binary.is_absolute() ? binary : (abs_build / binary).lexically_normal();
      entry.reject_unknown_keys();
      context.entries.emplace(rel, std::move(parsed));
    }
    return context;
  } catch (const std::exception& e) {
    log::warn("ignoring the binary cache stamp: {}", e.what());
    return std::nullopt;
  }
}

void record_binaries(const fs::path& build_dir, const std::map<std::string, CachedBinary>& built,
                     const std::string& platform, const std::string& arch) {
  const fs::path abs_build = absolute_normal(build_dir);
  FileLock lock(stamp_lock_path(abs_build));
  Json entries = Json::object();
  if (auto old = read_binary_context(abs_build)) {
    for (const auto& [rel, entry] : old->entries) {
      std::string binary = inside(entry.binary, abs_build)
                               ? entry.binary.lexically_relative(abs_build).generic_string()
                               : entry.binary.string();
      entries[rel] = {{"key", entry.key}, {"binary", binary}};
    }
  }
  for (const auto& [rel, cached] : built) {
    std::string binary = inside(cached.path, abs_build)
                             ? cached.path.lexically_relative(abs_build).generic_string()
                             : cached.path.string();
    entries[rel] = {{"key", cached.key}, {"binary", binary}};
  }
  std::string compiler = "unknown";
  try {
    compiler = host_compiler_identity().summary();
  } catch (const std::exception&) {
    // Already reported by the build that failed closed.
  }
  Json stamp = {{"schema", kStampSchema}, {"abi_version", PYPTO_KERNEL_ABI_VERSION},
                {"compiler", compiler},   {"flags", kernel_compile_flags()},
                {"platform", platform},   {"arch", arch},
                {"entries", entries}};
  write_json_atomic(binary_context_path(abs_build), stamp);
}

const char* cache_state_name(CacheState state) {
  switch (state) {
    case CacheState::kFresh:
      return "fresh";
    case CacheState::kStale:
      return "stale";
    case CacheState::kMissing:
      return "missing";
  }
  return "missing";
}

CacheState cache_state(const fs::path& build_dir, const std::string& rel_source,
                       const std::string& platform, const std::string& arch,
                       const std::optional<fs::path>& store) {
  auto context = read_binary_context(build_dir);
  if (!context) return CacheState::kMissing;
  auto it = context->entries.find(rel_source);
  if (it == context->entries.end()) return CacheState::kMissing;
  const BinaryContextEntry& entry = it->second;
  std::error_code ec;
  bool present = fs::exists(entry.binary, ec);
  if (!present && store && !entry.key.empty())
    present = fs::exists(*store / (entry.key + ".so"), ec);
  if (!present) return CacheState::kMissing;
  if (entry.key.empty()) return CacheState::kStale;  // an uncached build is never reused
  CacheKey now = binary_cache_key(absolute_normal(build_dir) / rel_source, platform, arch);
  return now.ok() && now.key == entry.key ? CacheState::kFresh : CacheState::kStale;
}

StoreState store_state(const fs::path& source, const std::string& platform,
                       const std::string& arch, const fs::path& store) {
  StoreState result;
  result.key = binary_cache_key(source, platform, arch);
  std::error_code ec;
  if (result.key.ok() && fs::exists(store / (result.key.key + ".so"), ec))
    result.state = CacheState::kFresh;
  return result;
}

size_t invalidate_binary_cache(const fs::path& build_dir) {
  const fs::path abs_build = absolute_normal(build_dir);
  size_t removed = 0;
  std::error_code ec;
  if (fs::is_directory(abs_build / "cache", ec)) {
    FileLock lock(stamp_lock_path(abs_build));
    if (auto context = read_binary_context(abs_build)) {
      for (const auto& [rel, entry] : context->entries) {
        // Only files named like cache binaries: a hand-edited stamp must not
        // make this delete anything else.
        if (!is_cache_binary_name(entry.binary.filename().string())) continue;
        if (fs::remove(entry.binary, ec)) ++removed;
      }
    }
    fs::remove(binary_context_path(abs_build), ec);
    // A stamp that could not be read is removed too: it is only a cache file.
    const fs::path bin = default_binary_store(abs_build);
    if (fs::is_directory(bin, ec)) {
      for (const auto& file : fs::directory_iterator(bin, ec))
        if (file.path().extension() == ".so" && file.is_regular_file(ec)) ++removed;
      fs::remove_all(bin, ec);
      if (ec) throw InfraError("cannot remove " + bin.string() + ": " + ec.message());
    }
  }
  const fs::path next_levels = abs_build / "next_levels";
  if (fs::is_directory(fs::symlink_status(next_levels, ec))) {
    std::vector<fs::path> levels;
    for (const auto& level : fs::directory_iterator(next_levels, ec))
      if (fs::is_directory(level.symlink_status(ec))) levels.push_back(level.path());
    std::sort(levels.begin(), levels.end());
    for (const auto& level : levels) removed += invalidate_binary_cache(level);
  }
  if (removed > 0)
    log::info("invalidated {} cached binaries under {}", removed, abs_build.string());
  return removed;
}

}  // namespace pypto
