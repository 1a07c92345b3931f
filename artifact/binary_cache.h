// The binary cache: kernel and orchestration sources compiled by the host C++
// compiler into shared objects stored under a content-hash key (docs/cache-and-replay.md).
// Internal to the artifact layer; commands reach it through replay/run, and
// pypto-coord inspect through cache_state().
//
// Key: SHA-256 over the source and its whole #include closure (names relative
// to their include root, and contents), the compiler identity (path, resolved
// path, --version), the flags, platform, arch and PYPTO_KERNEL_ABI_VERSION.
// A binary lives at <store>/<key>.so, written under a temporary name and
// renamed, so its existence means it is complete. Processes building the same
// key serialize on <store>/<key>.lock: each key compiles once per store.
// A key that cannot be established means rebuild (fail closed): the binary
// goes to a fresh <build_dir>/cache/bin/uncached-<pid>-<n>.so, never reused.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pypto {

struct CacheKey {
  std::string key;      // lowercase hex SHA-256; empty when it cannot be established
  std::string failure;  // why not, when `key` is empty
  bool ok() const { return !key.empty(); }
};

struct CachedBinary {
  std::filesystem::path path;  // absolute
  std::string key;             // empty for a fail-closed (uncached) build
  bool compiled = false;       // false when the store already held it
};

// <build_dir>/cache/bin: the store unless the caller names a host-wide one.
std::filesystem::path default_binary_store(const std::filesystem::path& build_dir);
// <build_dir>/cache/binary_context.json: the stamp.
std::filesystem::path binary_context_path(const std::filesystem::path& build_dir);

// The key `source` has now. Never throws for an unknown compiler, missing
// headers or unreadable files: those leave the key empty with the reason.
CacheKey binary_cache_key(const std::filesystem::path& source, const std::string& platform,
                          const std::string& arch);

// The binary of `source` (a file inside `build_dir`), compiled when `store`
// lacks it. A stored binary whose pypto_abi_version() is missing or differs
// from PYPTO_KERNEL_ABI_VERSION is deleted and rebuilt once.
// Throws KernelCompileError (naming the source relative to build_dir and
// quoting the compiler), ToolError (no compiler) or InfraError.
CachedBinary obtain_binary(const std::filesystem::path& build_dir,
                           const std::filesystem::path& source, const std::string& platform,
                           const std::string& arch, const std::filesystem::path& store);

// ---- the stamp, cache/binary_context.json (schema 1) ----

struct BinaryContextEntry {
  std::string key;               // empty for an uncached build
  std::filesystem::path binary;  // absolute
};

struct BinaryContext {
  int64_t abi_version = 0;
  std::string compiler;
  std::vector<std::string> flags;
  std::string platform;
  std::string arch;
  std::map<std::string, BinaryContextEntry> entries;  // by source relative to the build dir
};

// nullopt when there is no stamp; a stamp that cannot be parsed is a cache
// file, not a contract: it is ignored with a warning and rewritten later.
std::optional<BinaryContext> read_binary_context(const std::filesystem::path& build_dir);

// Merges `built` (by source relative to build_dir) into the stamp, atomically
// and under <build_dir>/cache/binary_context.lock.
void record_binaries(const std::filesystem::path& build_dir,
                     const std::map<std::string, CachedBinary>& built, const std::string& platform,
                     const std::string& arch);

enum class CacheState {
  kFresh,    // the stamp's key is the current key and its binary exists
  kStale,    // a binary was recorded, but the current key differs or cannot be established
  kMissing,  // no stamp entry, or its binary is gone
};
const char* cache_state_name(CacheState state);  // "fresh", "stale", "missing"

// For pypto-coord inspect. `store`, when given, is also searched for the
// recorded key's binary (a host-wide store).
CacheState cache_state(const std::filesystem::path& build_dir, const std::string& rel_source,
                       const std::string& platform, const std::string& arch,
                       const std::optional<std::filesystem::path>& store = std::nullopt);

// For pypto-coord inspect on an L3 build: its rank agents compile into a
// host-wide `store` and leave no stamp in the build, so the state is whether
// `store` holds the binary of the key `source` has now. kFresh: the next run
// reuses it; kMissing: the next run compiles it (also when the key cannot be
// established, `key` then empty: such a source is rebuilt every run).
struct StoreState {
  CacheState state = CacheState::kMissing;
  CacheKey key;
};
StoreState store_state(const std::filesystem::path& source, const std::string& platform,
                       const std::string& arch, const std::filesystem::path& store);

// Removes the binaries the stamp lists (only files named like cache binaries),
// <build_dir>/cache/bin/ and the stamp, then does the same in every
// next_levels/<r>/. Returns how many binaries were removed.
size_t invalidate_binary_cache(const std::filesystem::path& build_dir);

}  // namespace pypto
