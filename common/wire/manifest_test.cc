#include "common/wire/manifest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/hash.h"
#include "common/wire/wire_test_util.h"
#include "pypto/error.h"

namespace pypto::wire {
namespace {

using testing::ScratchDir;
using testing::write_text;

std::string refusal(std::string_view path) {
  try {
    validate_relative_path(path);
  } catch (const InfraError& e) {
    return e.what();
  }
  return "";
}

TEST(RelativePathTest, AcceptsCanonicalRelativePaths) {
  for (const char* path :
       {"a", "kernel_config.json", "kernels/aiv/vadd.cpp", "a.b/..c/d..", ".hidden/x"}) {
    EXPECT_FALSE(relative_path_problem(path)) << path;
    EXPECT_NO_THROW(validate_relative_path(path));
  }
}

TEST(RelativePathTest, RefusesEverythingThatCouldLeaveTheWorkspace) {
  EXPECT_EQ(refusal("/etc/passwd"),
            "refusing path '/etc/passwd': it is absolute; shipped paths are relative to the rank "
            "workspace and stay inside it");
  EXPECT_NE(refusal("..").find("it has a '..' component"), std::string::npos);
  EXPECT_NE(refusal("../x").find("it has a '..' component"), std::string::npos);
  EXPECT_NE(refusal("a/../../x").find("it has a '..' component"), std::string::npos);
  EXPECT_NE(refusal("a/..").find("it has a '..' component"), std::string::npos);
  EXPECT_NE(refusal("a/./b").find("it has a '.' component"), std::string::npos);
  EXPECT_NE(refusal("a//b").find("it has an empty component"), std::string::npos);
  EXPECT_NE(refusal("a/").find("it has an empty component"), std::string::npos);
  EXPECT_NE(refusal("").find("it is empty"), std::string::npos);
  EXPECT_NE(refusal("..\\..\\x").find("backslash"), std::string::npos);
  EXPECT_NE(refusal("a\\b").find("backslash"), std::string::npos);
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(refusal(with_nul).find("refusing path 'a?b': it contains a NUL byte"), 0u);
}

TEST(ManifestTest, ListsRegularFilesSortedWithSizeHashAndMode) {
  ScratchDir dir;
  write_text(dir / "kernel_config.json", "{}");
  write_text(dir / "kernels/aiv/vadd.cpp", "void f() {}\n");
  write_text(dir / "orchestration/run.sh", "#!/bin/sh\n");
  fs::permissions(dir / "orchestration/run.sh", fs::perms(0755));
  write_text(dir / "cache/x.so", "binary");      // excluded
  write_text(dir / "dfx_outputs/a.json", "{}");  // excluded
  write_text(dir / "outputs/y.npy", "npy");      // excluded
  write_text(dir / "outputs_not/z", "kept");     // only a prefix of an excluded name
  fs::create_directories(dir / "empty/dir");     // directories are implied by their files

  const Manifest manifest = build_manifest(dir.path(), kSubBuildExcludes, 4);
  EXPECT_EQ(manifest.rank, 4);
  ASSERT_EQ(manifest.files.size(), 4u);
  EXPECT_EQ(manifest.files[0].path, "kernel_config.json");
  EXPECT_EQ(manifest.files[1].path, "kernels/aiv/vadd.cpp");
  EXPECT_EQ(manifest.files[2].path, "orchestration/run.sh");
  EXPECT_EQ(manifest.files[3].path, "outputs_not/z");
  EXPECT_EQ(manifest.files[1].size, 12u);
  EXPECT_EQ(manifest.files[1].sha256, sha256_hex("void f() {}\n"));
  EXPECT_EQ(manifest.files[2].mode, 0755u);
  EXPECT_NO_THROW(validate_manifest(manifest));
  EXPECT_EQ(manifest_hashes(manifest).size(), 4u);

  // Unchanged files give the same manifest.
  EXPECT_EQ(build_manifest(dir.path(), kSubBuildExcludes, 4), manifest);
}

std::string build_error(const fs::path& dir) {
  try {
    build_manifest(dir, kSubBuildExcludes);
  } catch (const InfraError& e) {
    return e.what();
  }
  return "";
}

TEST(ManifestTest, RefusesASymlinkPointingOutside) {
  ScratchDir dir;
  ScratchDir outside;
  write_text(outside / "secret", "s");
  write_text(dir / "a.cpp", "a");
  fs::create_symlink(outside / "secret", dir / "kernels.cpp");
  const std::string error = build_error(dir.path());
  EXPECT_NE(error.find("refusing to ship " + (dir / "kernels.cpp").string() +
                       ": it is a symbolic link (to " + (outside / "secret").string() + ")"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("replace the link with a copy"), std::string::npos) << error;
}

TEST(ManifestTest, RefusesASymlinkInsideToo) {
  ScratchDir dir;
  write_text(dir / "kernels/a.cpp", "a");
  fs::create_symlink("a.cpp", dir / "kernels/b.cpp");
  EXPECT_NE(build_error(dir.path()).find("it is a symbolic link (to a.cpp)"), std::string::npos);

  ScratchDir dir2;
  write_text(dir2 / "real/a.cpp", "a");
  fs::create_directory_symlink(dir2 / "real", dir2 / "kernels");
  EXPECT_NE(build_error(dir2.path()).find("kernels: it is a symbolic link"), std::string::npos);
}

TEST(ManifestTest, RefusesSpecialFilesAndBadNames) {
  ScratchDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0644), 0);
  EXPECT_NE(build_error(dir.path()).find("it is not a regular file"), std::string::npos);

  ScratchDir dir2;
  write_text(dir2 / "win\\dows.cpp", "x");
  EXPECT_NE(build_error(dir2.path()).find("backslash"), std::string::npos);

  EXPECT_NE(build_error(dir2 / "missing").find("is not a directory"), std::string::npos);
}

TEST(ManifestTest, ValidateRefusesDuplicatesConflictsAndBadHashes) {
  const std::string h = sha256_hex("x");
  Manifest dup;
  dup.rank = 1;
  dup.files = {{"a", 1, h, 0644}, {"a", 1, h, 0644}};
  EXPECT_THROW(validate_manifest(dup), InfraError);

  Manifest conflict;
  conflict.files = {{"a", 1, h, 0644}, {"a/b", 1, h, 0644}};
  try {
    validate_manifest(conflict);
    FAIL();
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("'a' is listed as a file and as the directory of 'a/b'"),
              std::string::npos);
  }

  Manifest bad_hash;
  bad_hash.files = {{"a", 1, "ABC", 0644}};
  EXPECT_THROW(validate_manifest(bad_hash), InfraError);
  Manifest bad_mode;
  bad_mode.files = {{"a", 1, h, 04755}};
  EXPECT_THROW(validate_manifest(bad_mode), InfraError);
  EXPECT_TRUE(is_sha256_hex(h));
  EXPECT_FALSE(is_sha256_hex(h.substr(1)));
}

}  // namespace
}  // namespace pypto::wire
