#include "common/file_lock.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "pypto/error.h"

namespace pypto {
namespace {

namespace fs = std::filesystem;

class FileLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "pypto_lock_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(FileLockTest, SecondHolderTimesOutNamingTheLockFile) {
  const fs::path path = dir_ / "sub" / "k.lock";
  FileLock first(path);
  EXPECT_TRUE(fs::exists(path));
  try {
    FileLock second(path, std::chrono::milliseconds(100));
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST_F(FileLockTest, WaiterGetsTheLockWhenTheHolderReleasesIt) {
  const fs::path path = dir_ / "k.lock";
  std::optional<FileLock> first(std::in_place, path);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    first.reset();
  });
  const auto start = std::chrono::steady_clock::now();
  FileLock second(path, std::chrono::seconds(10));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(90));
  releaser.join();
  FileLock moved = std::move(second);
  EXPECT_EQ(moved.path(), path);
}

}  // namespace
}  // namespace pypto
