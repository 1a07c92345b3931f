// Every command answers --version with its release and the source revision it
// was built from, on stdout, exit 0 (docs/commands.md).
#include <gtest/gtest.h>

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
  // Built from a git checkout, the revision names the commit checked out (a
  // mismatch means the binaries are older than the checkout: rebuild).
  const CoordResult head =
      run_split({"/usr/bin/git", "-C", PYPTO_SOURCE_DIR, "rev-parse", "--short=12", "HEAD"});
  if (head.exit_code == 0) {
    const std::string commit = head.out.substr(0, head.out.find('\n'));
    ASSERT_EQ(commit.size(), 12u) << head.all();
    EXPECT_NE(std::string(source_revision()).find(commit), std::string::npos)
        << source_revision() << " does not name HEAD " << commit;
  }
}

}  // namespace
}  // namespace pypto::e2e
