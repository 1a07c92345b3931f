#include "common/wire/blob_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <unordered_map>

#include "common/fs_util.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/wire/manifest.h"
#include "pypto/error.h"

namespace pypto::wire {

namespace {

constexpr fs::perms kBlobPerms =
    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;

bool lstat_path(const fs::path& path, struct stat& st) { return ::lstat(path.c_str(), &st) == 0; }

// `path` lies under `root` (both canonical), component by component.
bool is_within(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

// Creates the directories of `rel`'s parent under `root` one component at a time, refusing
// to pass through anything that is not a real directory (a link planted in the workspace
// must not redirect a write outside it).
void make_parent_dirs(const fs::path& root, const std::string& rel) {
  fs::path current = root;
  const fs::path parent = fs::path(rel).parent_path();
  for (const fs::path& part : parent) {
    current /= part;
    struct stat st;
    if (!lstat_path(current, st)) {
      if (::mkdir(current.c_str(), 0755) != 0 && errno != EEXIST) {
        throw InfraError("cannot create directory " + current.string() + ": " +
                         std::strerror(errno));
      }
      if (!lstat_path(current, st)) {
        throw InfraError("cannot stat " + current.string() + ": " + std::strerror(errno));
      }
    }
    if (!S_ISDIR(st.st_mode)) {
      throw InfraError("refusing to write " + (root / rel).string() + ": " + current.string() +
                       " is not a directory (a link or file appeared in the workspace while " +
                       "it was being updated)");
    }
  }
}

}  // namespace

fs::path BlobStore::default_root(const std::optional<fs::path>& explicit_root,
                                 const EnvLookup& env) {
  if (explicit_root && !explicit_root->empty()) return *explicit_root;
  if (auto value = env("PYPTO_BLOB_STORE"); value && !value->empty()) return fs::path(*value);
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (auto value = env("XDG_CACHE_HOME"); value && !value->empty() && value->front() == '/') {
    return fs::path(*value) / "pypto" / "blobs";
  }
  if (auto home = env("HOME"); home && !home->empty()) {
    return fs::path(*home) / ".cache" / "pypto" / "blobs";
  }
  throw InfraError(
      "cannot place the blob store: HOME is not set; set PYPTO_BLOB_STORE or "
      "XDG_CACHE_HOME to a writable directory");
}

fs::path BlobStore::cache_root(const fs::path& root) {
  fs::path store = fs::absolute(root).lexically_normal();
  if (store.filename().empty()) store = store.parent_path();  // a trailing '/'
  return store.parent_path();
}

fs::path host_binary_store(const std::optional<fs::path>& explicit_store,
                           const std::optional<fs::path>& explicit_blob_store,
                           const EnvLookup& env) {
  if (explicit_store && !explicit_store->empty()) return fs::absolute(*explicit_store);
  return BlobStore::cache_root(BlobStore::default_root(explicit_blob_store, env)) / "bin";
}

BlobStore::BlobStore(const fs::path& root) : root_(fs::absolute(root)) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec || !fs::is_directory(root_)) {
    throw InfraError("cannot create the blob store " + root_.string() + ": " +
                     (ec ? ec.message() : "not a directory") +
                     "; set PYPTO_BLOB_STORE to a writable directory");
  }
}

fs::path BlobStore::path_of(std::string_view hash) const {
  if (!is_sha256_hex(hash)) {
    throw InfraError("'" + std::string(hash.substr(0, 80)) +
                     "' is not a blob hash (64 lowercase hex digits of SHA-256)");
  }
  return root_ / std::string(hash.substr(0, 2)) / std::string(hash);
}

bool BlobStore::has(std::string_view hash) const {
  struct stat st;
  return lstat_path(path_of(hash), st) && S_ISREG(st.st_mode);
}

std::vector<std::string> BlobStore::list() const {
  std::vector<std::string> hashes;
  std::error_code ec;
  for (const auto& shard : fs::directory_iterator(root_, ec)) {
    const std::string prefix = shard.path().filename().string();
    if (prefix.size() != 2 || !shard.is_directory(ec)) continue;
    for (const auto& entry : fs::directory_iterator(shard.path(), ec)) {
      // Temp files of an interrupted put start with '.' and are not valid hashes.
      const std::string name = entry.path().filename().string();
      if (is_sha256_hex(name) && name.compare(0, 2, prefix) == 0 && entry.is_regular_file(ec)) {
        hashes.push_back(name);
      }
    }
  }
  std::sort(hashes.begin(), hashes.end());
  return hashes;
}

std::vector<std::string> BlobStore::held(const std::vector<std::string>& candidates) const {
  std::vector<std::string> result;
  for (const std::string& hash : candidates) {
    if (is_sha256_hex(hash) && has(hash)) result.push_back(hash);
  }
  return result;
}

bool BlobStore::verify(std::string_view hash) {
  if (!has(hash)) return false;
  const fs::path path = path_of(hash);
  std::string content;
  try {
    content = read_file(path);
  } catch (const InfraError&) {
    return false;
  }
  if (sha256_hex(content) == hash) return true;
  log::warn(
      "blob store: {} no longer matches its hash (written in place through a "
      "workspace link?); removing it so that it is shipped again",
      path.string());
  std::error_code ec;
  fs::remove(path, ec);
  return false;
}

std::vector<std::string> BlobStore::missing(const Manifest& manifest) {
  std::vector<std::string> result;
  for (const std::string& hash : manifest_hashes(manifest)) {
    if (!verify(hash)) result.push_back(hash);
  }
  return result;
}

bool BlobStore::put(std::string_view hash, std::string_view bytes) {
  const fs::path path = path_of(hash);
  const std::string actual = sha256_hex(bytes);
  if (actual != hash) {
    throw InfraError("refusing blob " + std::string(hash) + ": its " +
                     std::to_string(bytes.size()) + " bytes hash to " + actual +
                     " (corrupted in transit, or the sender mislabelled it); nothing was stored");
  }
  if (has(hash)) return false;
  // Temp name + rename: a concurrent rank storing the same blob loses nothing.
  write_file_atomic(path, bytes, kBlobPerms);
  return true;
}

std::string BlobStore::read(std::string_view hash) const {
  const fs::path path = path_of(hash);
  if (!has(hash)) {
    throw InfraError("blob " + std::string(hash) + " is not in the blob store " + root_.string());
  }
  return read_file(path);
}

MaterializeStats BlobStore::materialize(const Manifest& manifest, const fs::path& workspace,
                                        const std::vector<std::string>& keep) {
  validate_manifest(manifest);
  const std::set<std::string> kept(keep.begin(), keep.end());
  for (const std::string& name : keep) {
    validate_relative_path(name);
    if (name.find('/') != std::string::npos) {
      throw InfraError("workspace entries to keep are top-level names; '" + name + "' is not");
    }
  }
  std::unordered_map<std::string, const ManifestFile*> files;
  std::set<std::string> dirs;
  for (const ManifestFile& file : manifest.files) {
    files.emplace(file.path, &file);
    const std::string top = file.path.substr(0, file.path.find('/'));
    if (kept.count(top)) {
      throw InfraError("manifest of rank " + std::to_string(manifest.rank) + " lists '" +
                       file.path + "' inside '" + top +
                       "', which the workspace keeps for itself; rebuild the manifest "
                       "excluding it");
    }
    for (size_t slash = file.path.find('/'); slash != std::string::npos;
         slash = file.path.find('/', slash + 1)) {
      dirs.insert(file.path.substr(0, slash));
    }
  }

  std::error_code ec;
  fs::create_directories(workspace, ec);
  const fs::path root = fs::canonical(workspace, ec);
  if (ec || !fs::is_directory(root)) {
    throw InfraError("cannot create the rank workspace " + workspace.string() + ": " +
                     (ec ? ec.message() : "not a directory"));
  }
  MaterializeStats stats;

  // Pass 1: remove every entry the manifest does not list. The iterator does not follow
  // directory links, and remove_all removes a link itself, never its target.
  std::vector<fs::path> doomed;
  fs::recursive_directory_iterator it(root, ec);
  if (ec) throw InfraError("cannot list the rank workspace " + root.string() + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      throw InfraError("cannot list the rank workspace " + root.string() + ": " + ec.message());
    }
    const std::string rel = it->path().lexically_relative(root).generic_string();
    const fs::file_status status = it->symlink_status(ec);
    if (it.depth() == 0 && kept.count(rel)) {
      if (fs::is_directory(status)) it.disable_recursion_pending();
      continue;
    }
    if (fs::is_directory(status)) {
      if (dirs.count(rel)) continue;
      it.disable_recursion_pending();
    } else if (fs::is_regular_file(status) && files.count(rel)) {
      continue;
    }
    doomed.push_back(it->path());
  }
  for (const fs::path& path : doomed) {
    const auto removed = fs::remove_all(path, ec);
    if (ec) throw InfraError("cannot remove " + path.string() + ": " + ec.message());
    stats.files_removed += removed;
  }

  // Pass 2: create or replace every listed file.
  for (const ManifestFile& file : manifest.files) {
    const fs::path target = root / file.path;
    make_parent_dirs(root, file.path);
    const fs::path parent = fs::canonical(target.parent_path(), ec);
    if (ec || !is_within(parent, root)) {
      throw InfraError("refusing to write " + target.string() + ": it resolves outside the " +
                       "rank workspace " + root.string());
    }
    const fs::path blob = path_of(file.sha256);
    struct stat blob_st;
    if (!lstat_path(blob, blob_st) || !S_ISREG(blob_st.st_mode)) {
      throw InfraError("cannot materialize '" + file.path + "' (sha256 " + file.sha256 + ") in " +
                       root.string() + ": the blob is not in the store " + root_.string() +
                       "; the coordinator must ship it (NEED/BLOBS)");
    }
    if (static_cast<uint64_t>(blob_st.st_size) != file.size) {
      std::error_code ignored;
      fs::remove(blob, ignored);
      throw InfraError("blob " + blob.string() + " has " + std::to_string(blob_st.st_size) +
                       " bytes but '" + file.path + "' has " + std::to_string(file.size) +
                       ": it was damaged (written in place through a workspace link?) and has " +
                       "been removed. Run again to ship it afresh, and edit next_levels/<r>/ in " +
                       "the build directory, never a rank workspace");
    }
    const bool linkable = (file.mode & 0111) == 0;

    struct stat target_st;
    if (lstat_path(target, target_st) && S_ISREG(target_st.st_mode)) {
      const bool same_inode =
          target_st.st_dev == blob_st.st_dev && target_st.st_ino == blob_st.st_ino;
      // Content is checked even for a link: an in-place write through it changed the blob.
      const bool intact = static_cast<uint64_t>(target_st.st_size) == file.size &&
                          sha256_hex(read_file(target)) == file.sha256;
      if (same_inode && !intact) {
        std::error_code ignored;
        fs::remove(blob, ignored);
        throw InfraError("'" + file.path + "' in " + root.string() + " was modified in place; " +
                         "it is a hard link into the blob store, so blob " + file.sha256 +
                         " was damaged and has been removed. Run again to ship it afresh, and " +
                         "edit next_levels/<r>/ in the build directory, never a rank workspace");
      }
      const bool mode_ok = same_inode ? linkable : (target_st.st_mode & 0777) == file.mode;
      if (intact && mode_ok) {
        ++stats.files_unchanged;
        continue;
      }
    }
    // Never write in place: the old file may be a link into the store.
    const fs::path tmp = temp_sibling(target);
    if (linkable && ::link(blob.c_str(), tmp.c_str()) == 0) {
      ++stats.files_linked;
      stats.bytes_linked += file.size;
    } else {
      // Executables get their own inode (a mode change on a link would change the blob),
      // and a store on another filesystem cannot be linked (EXDEV).
      fs::copy_file(blob, tmp, ec);
      if (!ec) fs::permissions(tmp, static_cast<fs::perms>(file.mode), ec);
      if (ec) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw InfraError("cannot copy blob " + blob.string() + " to " + target.string() + ": " +
                         ec.message());
      }
      ++stats.files_copied;
      stats.bytes_copied += file.size;
    }
    fs::rename(tmp, target, ec);
    if (ec) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw InfraError("cannot move " + tmp.string() + " to " + target.string() + ": " +
                       ec.message());
    }
  }
  return stats;
}

}  // namespace pypto::wire
