#include "common/wire/blob_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "common/hash.h"
#include "common/wire/manifest.h"
#include "common/wire/wire_test_util.h"
#include "pypto/error.h"

namespace pypto::wire {
namespace {

using testing::read_text;
using testing::ScratchDir;
using testing::write_text;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(BlobStoreRootTest, ExplicitThenEnvThenXdgThenHome) {
  EXPECT_EQ(BlobStore::default_root(fs::path("/x"), env_of({{"PYPTO_BLOB_STORE", "/p"}})), "/x");
  EXPECT_EQ(BlobStore::default_root(std::nullopt,
                                    env_of({{"PYPTO_BLOB_STORE", "/p"}, {"XDG_CACHE_HOME", "/c"}})),
            "/p");
  EXPECT_EQ(
      BlobStore::default_root(std::nullopt, env_of({{"XDG_CACHE_HOME", "/c"}, {"HOME", "/h"}})),
      "/c/pypto/blobs");
  // A relative XDG_CACHE_HOME is invalid by the XDG spec and ignored.
  EXPECT_EQ(
      BlobStore::default_root(std::nullopt, env_of({{"XDG_CACHE_HOME", "rel"}, {"HOME", "/h"}})),
      "/h/.cache/pypto/blobs");
  EXPECT_THROW(BlobStore::default_root(std::nullopt, env_of({})), InfraError);
}

class BlobStoreTest : public ::testing::Test {
 protected:
  // Stores `content` and returns its hash.
  std::string put(const std::string& content) {
    const std::string hash = sha256_hex(content);
    store_.put(hash, content);
    return hash;
  }

  ScratchDir scratch_;
  BlobStore store_{scratch_ / "store"};
};

TEST_F(BlobStoreTest, PutHasListHeldRead) {
  const std::string a = sha256_hex("alpha");
  EXPECT_FALSE(store_.has(a));
  EXPECT_TRUE(store_.put(a, "alpha"));
  EXPECT_FALSE(store_.put(a, "alpha"));  // already held
  EXPECT_TRUE(store_.has(a));
  EXPECT_EQ(store_.path_of(a), store_.root() / a.substr(0, 2) / a);
  EXPECT_EQ(read_text(store_.path_of(a)), "alpha");
  EXPECT_EQ(store_.read(a), "alpha");
  EXPECT_EQ(fs::status(store_.path_of(a)).permissions() & fs::perms::all, fs::perms(0444));

  const std::string b = put("beta");
  const std::string empty = put("");
  std::vector<std::string> expected = {a, b, empty};
  std::sort(expected.begin(), expected.end());
  // A leftover temp file of an interrupted put is not a blob.
  write_text(store_.root() / a.substr(0, 2) / ("." + a + ".tmp.1.0"), "partial");
  EXPECT_EQ(store_.list(), expected);

  const std::string absent = sha256_hex("gamma");
  EXPECT_EQ(store_.held({absent, b, "junk", a}), (std::vector<std::string>{b, a}));
  EXPECT_THROW(store_.path_of("../../etc/passwd"), InfraError);
  EXPECT_THROW(store_.read(absent), InfraError);
}

TEST_F(BlobStoreTest, PutRefusesContentThatDoesNotMatchItsHash) {
  const std::string hash = sha256_hex("expected");
  try {
    store_.put(hash, "tampered");
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("refusing blob " + hash + ": its 8 bytes hash to " +
                                         sha256_hex("tampered")),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was stored"), std::string::npos);
  }
  EXPECT_FALSE(store_.has(hash));
  EXPECT_TRUE(store_.list().empty());
}

// A sub-build with a nested source, a shared header and an executable.
class MaterializeTest : public BlobStoreTest {
 protected:
  void SetUp() override {
    write_text(build_ / "kernel_config.json", "{\"schema\": 1}");
    write_text(build_ / "kernels/aiv/vadd.cpp", "void vadd() {}\n");
    write_text(build_ / "kernels/aic/same.cpp", "void vadd() {}\n");  // same content
    write_text(build_ / "tools/run", "#!/bin/sh\necho hi\n");
    fs::permissions(build_ / "tools/run", fs::perms(0755));
    write_text(build_ / "cache/ignored.so", "x");
    manifest_ = build_manifest(build_, kSubBuildExcludes, 1);
    for (const std::string& hash : store_.missing(manifest_)) {
      for (const ManifestFile& file : manifest_.files) {
        if (file.sha256 == hash) store_.put(hash, read_text(build_ / file.path));
      }
    }
    EXPECT_TRUE(store_.missing(manifest_).empty());
  }

  fs::path build_ = scratch_ / "build/next_levels/1";
  fs::path workspace_ = scratch_ / "workspace/rank1";
  Manifest manifest_;
};

TEST_F(MaterializeTest, MirrorsTheManifestAndASecondRunWritesNothing) {
  const MaterializeStats first = store_.materialize(manifest_, workspace_);
  EXPECT_EQ(first.files_linked + first.files_copied, 4u);
  EXPECT_EQ(first.files_copied, 1u);  // the executable gets its own inode
  EXPECT_EQ(first.bytes_written(), 13u + 15u + 15u + 18u);
  EXPECT_EQ(read_text(workspace_ / "kernels/aiv/vadd.cpp"), "void vadd() {}\n");
  EXPECT_EQ(read_text(workspace_ / "tools/run"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(fs::status(workspace_ / "tools/run").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_FALSE(fs::exists(workspace_ / "cache"));
  // Identical files share one blob (hard links on the same filesystem).
  struct stat a, b;
  ASSERT_EQ(::stat((workspace_ / "kernels/aiv/vadd.cpp").c_str(), &a), 0);
  ASSERT_EQ(::stat((workspace_ / "kernels/aic/same.cpp").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);

  const MaterializeStats second = store_.materialize(manifest_, workspace_);
  EXPECT_EQ(second.bytes_written(), 0u);
  EXPECT_EQ(second.files_unchanged, 4u);
  EXPECT_EQ(second.files_removed, 0u);
}

TEST_F(MaterializeTest, RemovesWhatTheManifestDoesNotListButKeepsCache) {
  store_.materialize(manifest_, workspace_);
  write_text(workspace_ / "stale.cpp", "old");
  write_text(workspace_ / "kernels/aiv/old.cpp", "old");
  write_text(workspace_ / "gone/deep/x", "old");
  write_text(workspace_ / "cache/k.so", "binary cache");
  // A hand edit that replaces the file (as editors do): replaced again from the store.
  fs::remove(workspace_ / "kernel_config.json");
  write_text(workspace_ / "kernel_config.json", "hand edit");

  const MaterializeStats stats = store_.materialize(manifest_, workspace_);
  EXPECT_FALSE(fs::exists(workspace_ / "stale.cpp"));
  EXPECT_FALSE(fs::exists(workspace_ / "kernels/aiv/old.cpp"));
  EXPECT_FALSE(fs::exists(workspace_ / "gone"));
  EXPECT_EQ(read_text(workspace_ / "cache/k.so"), "binary cache");
  EXPECT_EQ(read_text(workspace_ / "kernel_config.json"), "{\"schema\": 1}");
  EXPECT_EQ(stats.bytes_written(), 13u);
  EXPECT_GE(stats.files_removed, 4u);

  // Exactly the manifest plus cache/ remains.
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(workspace_)) {
    if (entry.is_regular_file()) {
      files.push_back(entry.path().lexically_relative(workspace_).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files,
            (std::vector<std::string>{"cache/k.so", "kernel_config.json", "kernels/aic/same.cpp",
                                      "kernels/aiv/vadd.cpp", "tools/run"}));
}

TEST_F(MaterializeTest, AnInPlaceWriteThroughALinkIsDetectedAndHealed) {
  store_.materialize(manifest_, workspace_);
  const std::string hash = sha256_hex("{\"schema\": 1}");
  // Root ignores the read-only mode: the write reaches the blob through the link.
  write_text(workspace_ / "kernel_config.json", "{\"schema\": 2}");  // same size
  EXPECT_THROW(store_.materialize(manifest_, workspace_), InfraError);
  EXPECT_FALSE(store_.has(hash));  // the damaged blob is gone
  // The next run's NEED asks for it again, and materialize repairs the workspace.
  store_.put(hash, "{\"schema\": 1}");
  EXPECT_EQ(store_.missing(manifest_), std::vector<std::string>{});
  store_.materialize(manifest_, workspace_);
  EXPECT_EQ(read_text(workspace_ / "kernel_config.json"), "{\"schema\": 1}");

  // missing() alone also catches it, before anything is materialized.
  write_text(workspace_ / "kernel_config.json", "in place again");
  EXPECT_EQ(store_.missing(manifest_), std::vector<std::string>{hash});
  EXPECT_FALSE(store_.has(hash));
}

TEST_F(MaterializeTest, ALinkPlantedInTheWorkspaceIsRemovedNotFollowed) {
  ScratchDir outside;
  write_text(outside / "aiv/vadd.cpp", "outside, must survive");
  fs::create_directories(workspace_);
  fs::create_directory_symlink(outside.path(), workspace_ / "kernels");
  fs::create_symlink(outside / "aiv/vadd.cpp", workspace_ / "kernel_config.json");

  store_.materialize(manifest_, workspace_);
  EXPECT_EQ(read_text(outside / "aiv/vadd.cpp"), "outside, must survive");
  EXPECT_FALSE(fs::is_symlink(workspace_ / "kernels"));
  EXPECT_FALSE(fs::is_symlink(workspace_ / "kernel_config.json"));
  EXPECT_EQ(read_text(workspace_ / "kernels/aiv/vadd.cpp"), "void vadd() {}\n");
  EXPECT_EQ(read_text(workspace_ / "kernel_config.json"), "{\"schema\": 1}");
}

TEST_F(MaterializeTest, AMissingBlobNamesThePathAndTheHash) {
  Manifest manifest = manifest_;
  const std::string absent = sha256_hex("never shipped");
  manifest.files.push_back({"zz/new.cpp", 13, absent, 0644});
  try {
    store_.materialize(manifest, workspace_);
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot materialize 'zz/new.cpp' (sha256 " + absent + ")"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("the blob is not in the store"), std::string::npos);
  }
}

TEST_F(MaterializeTest, RefusesBadManifests) {
  Manifest escape = manifest_;
  escape.files.push_back({"../escape", 1, manifest_.files[0].sha256, 0644});
  EXPECT_THROW(store_.materialize(escape, workspace_), InfraError);
  EXPECT_FALSE(fs::exists(scratch_ / "workspace/escape"));

  Manifest absolute = manifest_;
  absolute.files.push_back({(scratch_ / "abs").string(), 1, manifest_.files[0].sha256, 0644});
  EXPECT_THROW(store_.materialize(absolute, workspace_), InfraError);
  EXPECT_FALSE(fs::exists(scratch_ / "abs"));

  Manifest into_cache = manifest_;
  into_cache.files.push_back({"cache/x", 1, manifest_.files[0].sha256, 0644});
  EXPECT_THROW(store_.materialize(into_cache, workspace_), InfraError);
}

}  // namespace
}  // namespace pypto::wire
