#include "common/module_path.h"

#include <gtest/gtest.h>

#include <system_error>

namespace pypto {
namespace {

namespace fs = std::filesystem;

TEST(ModulePathTest, AStaticallyLinkedProgramIsItsOwnExecutable) {
  // This test binary links the runtime statically, as pypto-coord does.
  std::error_code ec;
  EXPECT_EQ(current_module(), fs::read_symlink("/proc/self/exe", ec));
}

TEST(ModulePathTest, ThePrefixIsAboveBinOrTheLibraryDirectory) {
  EXPECT_EQ(install_prefix_of("/opt/pypto/bin/pypto-coord"), fs::path("/opt/pypto"));
  EXPECT_EQ(install_prefix_of("/opt/pypto/lib/libpypto.so.0"), fs::path("/opt/pypto"));
}

}  // namespace
}  // namespace pypto
