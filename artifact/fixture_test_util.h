// Helpers for the artifact tests: scratch copies of the fixture build
// directories, JSON edits in place and checks that a load fails with an
// ArtifactError naming the expected file and field.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "common/json_reader.h"
#include "common/scratch_dir.h"
#include "pypto/error.h"
#include "tests/fixture_copy.h"

namespace pypto::testing {

namespace fs = std::filesystem;

inline fs::path fixtures_root() { return fs::path(PYPTO_SOURCE_DIR) / "tests" / "fixtures"; }
inline fs::path l2_fixture() { return fixtures_root() / "l2" / "vector_add"; }
inline fs::path l3_fixture() { return fixtures_root() / "l3" / "allreduce_w8"; }

// A fresh directory under the system temp dir, named after the test, removed with the object.
class ScratchDir : public pypto::ScratchDir {
 public:
  ScratchDir() : pypto::ScratchDir(prefix()) {}

  // Copies `fixture` to <scratch>/<leaf> (symbolic links kept) and returns that path.
  fs::path copy_of(const fs::path& fixture, const std::string& leaf = "build") const {
    fs::path dest = path() / leaf;
    testing_support::copy_fixture_sources(fixture, dest);
    return dest;
  }

 private:
  static std::string prefix() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("pypto_artifact_test_") + (info ? info->name() : "x");
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    return name;
  }
};

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void spit(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline Json read_json(const fs::path& path) { return Json::parse(slurp(path)); }

// Rewrites a JSON file after `edit` changed its document.
inline void edit_json(const fs::path& path, const std::function<void(Json&)>& edit) {
  Json doc = read_json(path);
  edit(doc);
  spit(path, doc.dump(2) + "\n");
}

// Runs `load` and checks it throws an ArtifactError whose file ends with
// `file`, whose field is `field`, and whose message names both plus the remedy.
inline ::testing::AssertionResult FailsWithArtifactError(const std::function<void()>& load,
                                                         const std::string& file,
                                                         const std::string& field) {
  try {
    load();
  } catch (const ArtifactError& e) {
    std::string msg = e.what();
    auto ends_with = [](const std::string& s, const std::string& suffix) {
      return s.size() >= suffix.size() &&
             s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (!ends_with(e.file(), file))
      return ::testing::AssertionFailure()
             << "file is '" << e.file() << "', expected '" << file << "'; message: " << msg;
    if (e.field() != field)
      return ::testing::AssertionFailure()
             << "field is '" << e.field() << "', expected '" << field << "'; message: " << msg;
    if (msg.find(file) == std::string::npos || msg.find(field) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks file or field: " << msg;
    if (msg.find("pypto-compile") == std::string::npos ||
        msg.find("version control") == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks the remedy: " << msg;
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw another error: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// The message of the exception of type E that `f` throws ("" when none).
template <typename E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace pypto::testing
