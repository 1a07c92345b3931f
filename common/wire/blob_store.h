// The per-host content-addressed blob store the rank agents of one host share
// (docs/protocol.md, "Blob store"). A file shared by all ranks crosses the
// coordinator link once and is stored once per host; a second run of an
// unchanged build ships nothing.
//
//   <root>/<hh>/<sha256>   content whose SHA-256 is <sha256>, <hh> its first two digits
//
// Blobs are written to a temp name and renamed, so concurrent ranks storing the
// same blob is harmless, and are read-only (0444) because workspaces hard-link
// them: nothing may write a blob in place. Read-only does not stop root, so the
// store does not trust a held blob blindly: missing() re-hashes the blobs a
// manifest needs and drops a damaged one so that it is shipped again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/wire/protocol.h"
#include "pypto/run_config.h"

namespace pypto::wire {

namespace fs = std::filesystem;

// What materialize did.
struct MaterializeStats {
  uint64_t files_linked = 0;     // hard links to the store
  uint64_t files_copied = 0;     // copies (executables, or another filesystem)
  uint64_t files_unchanged = 0;  // already the right content and mode
  uint64_t files_removed = 0;    // workspace entries the manifest does not list
  uint64_t bytes_linked = 0;
  uint64_t bytes_copied = 0;
  uint64_t bytes_written() const { return bytes_linked + bytes_copied; }
};

// The host-wide binary store of the rank agents (docs/commands.md, "pypto-rank"):
// `explicit_store` (absolute) when given, else bin/ beside the blob store that
// default_root(explicit_blob_store, env) names. pypto-coord inspect uses the same
// rule to show the store this host's agents compile into.
fs::path host_binary_store(const std::optional<fs::path>& explicit_store,
                           const std::optional<fs::path>& explicit_blob_store = std::nullopt,
                           const EnvLookup& env = process_env());

class BlobStore {
 public:
  // The store's root, first of: `explicit_root`, $PYPTO_BLOB_STORE,
  // $XDG_CACHE_HOME/pypto/blobs, $HOME/.cache/pypto/blobs. Throws InfraError when none is
  // available (no HOME).
  static fs::path default_root(const std::optional<fs::path>& explicit_root = std::nullopt,
                               const EnvLookup& env = process_env());

  // The directory that holds a host's blobs/, bin/ and workspaces/ side by side:
  // the parent of the (absolute, normalised) blob store root `root`.
  static fs::path cache_root(const fs::path& root);

  // Opens (creating it when needed) the store at `root`. Throws InfraError when it cannot.
  explicit BlobStore(const fs::path& root);

  const fs::path& root() const { return root_; }
  // <root>/<hh>/<hash>; throws InfraError when `hash` is not a SHA-256 in lowercase hex.
  fs::path path_of(std::string_view hash) const;

  bool has(std::string_view hash) const;
  // Every hash held, sorted (what HELLO may report for a small store).
  std::vector<std::string> list() const;
  // The subset of `candidates` held, in their order (cheap for a big store).
  std::vector<std::string> held(const std::vector<std::string>& candidates) const;
  // True when `hash` is held and its content still hashes to it. A damaged blob (written
  // in place through a hard link) is removed and false returned.
  bool verify(std::string_view hash);
  // The manifest's distinct hashes that are not held intact (verify): what NEED asks for.
  std::vector<std::string> missing(const Manifest& manifest);

  // Stores `bytes` under `hash` after checking that SHA-256(bytes) == hash; a mismatch
  // throws InfraError and stores nothing. Returns false when the blob was already held.
  bool put(std::string_view hash, std::string_view bytes);
  std::string read(std::string_view hash) const;

  // Makes `workspace` mirror the manifest exactly: creates or replaces every listed file
  // from the store (hard link when the file is not executable, else a copy with the
  // manifest's mode), and removes every other entry except the top-level names in `keep`.
  // Every path is validated and no link inside the workspace is followed; a file whose
  // blob is missing throws InfraError naming the path and the hash. A file already in
  // place counts as unchanged only when its content hash matches.
  MaterializeStats materialize(const Manifest& manifest, const fs::path& workspace,
                               const std::vector<std::string>& keep = {"cache"});

 private:
  fs::path root_;
};

}  // namespace pypto::wire
