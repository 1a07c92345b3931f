#include "common/scratch_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <optional>

#include "pypto/error.h"

namespace pypto {
namespace {

TEST(ScratchDirTest, IsFreshAndGoesWithEverythingInItReadOnlyFilesToo) {
  fs::path kept;
  {
    ScratchDir one("pypto_scratch_test");
    ScratchDir two("pypto_scratch_test");
    kept = one.path();
    EXPECT_NE(one.path(), two.path());
    EXPECT_EQ(one.path().filename().string().rfind("pypto_scratch_test_", 0), 0u);
    ASSERT_TRUE(fs::is_directory(one.path()));
    EXPECT_TRUE(fs::is_empty(one.path()));
    fs::create_directories(one / "blobs/ab");
    std::ofstream(one / "blobs/ab/cd") << "blob";
    fs::permissions(one / "blobs/ab/cd", fs::perms::owner_read);
    fs::permissions(one / "blobs/ab", fs::perms::owner_read | fs::perms::owner_exec);
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST(ScratchDirTest, AnUnwritableTempDirIsAnErrorNamingIt) {
  const char* old = std::getenv("TMPDIR");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("TMPDIR", "/proc/no_such_dir", 1);
  try {
    ScratchDir dir("pypto_scratch_test");
    ADD_FAILURE() << "made " << dir.path();
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no_such_dir/pypto_scratch_test_XXXXXX"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("set TMPDIR"), std::string::npos) << e.what();
  }
  if (saved)
    ::setenv("TMPDIR", saved->c_str(), 1);
  else
    ::unsetenv("TMPDIR");
}

}  // namespace
}  // namespace pypto
