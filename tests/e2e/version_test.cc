// Every command answers --version with its release and the source revision it
// was built from, on stdout, exit 0 (docs/commands.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/version.h"
#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {
namespace {

TEST(VersionTest, EveryCommandPrintsItsReleaseAndSourceRevision) {
  const std::string suffix =
      std::string(" ") + release_version() + " (source revision " + source_revision() + ")";
  const struct {
    const char* binary;
    std::string expected;
  } commands[] = {
      {PYPTO_COMPILE_BIN, "pypto-compile" + suffix + "\n"},
      {PYPTO_COORD_BIN, "pypto-coord" + suffix + "\n"},
      {PYPTO_PTOAS_BIN, "pypto-ptoas" + suffix + "\n"},
      {PYPTO_RANK_BIN, "pypto-rank" + suffix + ", control protocol "},
  };
  for (const auto& c : commands) {
    const CoordResult r = run_split({c.binary, "--version"});
    EXPECT_EQ(r.exit_code, 0) << c.binary << "\n" << r.all();
    EXPECT_EQ(r.out.substr(0, c.expected.size()), c.expected) << r.all();
    EXPECT_EQ(r.err, "") << r.all();
  }
  // Built from a git checkout, the revision is the checkout's, not a placeholder.
  if (std::filesystem::exists(std::filesystem::path(PYPTO_SOURCE_DIR) / ".git")) {
    EXPECT_EQ(std::string(source_revision()).find("unknown"), std::string::npos);
  }
}

}  // namespace
}  // namespace pypto::e2e
