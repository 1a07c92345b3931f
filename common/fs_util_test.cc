#include "common/fs_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pypto {
namespace {

TEST(FsUtilTest, AtomicWritesRespectTheUmask) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("pypto_fs_util_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const mode_t saved = ::umask(077);
  write_file_atomic(dir / "private.npy", "data");
  ::umask(022);
  write_file_atomic(dir / "shared.npy", "data");
  ::umask(saved);
  EXPECT_EQ(fs::status(dir / "private.npy").permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(dir / "shared.npy").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  EXPECT_EQ(read_file(dir / "private.npy"), "data");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pypto

namespace pypto {
namespace {

TEST(FsUtilTest, NormalPathDropsDotsDoubleSlashesAndTheTrailingSlash) {
  EXPECT_EQ(normal_path("./out//axpb/"), "out/axpb");
  EXPECT_EQ(normal_path("out/./a/../b"), "out/b");
  EXPECT_EQ(normal_path("/tmp//x/"), "/tmp/x");
  EXPECT_EQ(normal_path("/"), "/");
  EXPECT_EQ(normal_path("./"), ".");
  EXPECT_EQ(normal_path("../up/"), "../up");
  EXPECT_EQ(normal_path(""), "");
}

}  // namespace
}  // namespace pypto
