#include "artifact/include_closure.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

namespace pypto {
namespace {

namespace fs = std::filesystem;

using Kind = IncludeDirective::Kind;

class IncludeClosureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "pypto_closure_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::vector<std::string> names(const IncludeClosure& closure) {
    std::vector<std::string> out;
    for (const auto& file : closure.files) out.push_back(file.name);
    return out;
  }
  fs::path root_;
};

TEST(ScanIncludesTest, IgnoresCommentsAndLiterals) {
  const char* text =
      "#include \"a.h\"\n"
      "  #  include <b/c.h>  // trailing\n"
      "// #include \"commented.h\"\n"
      "/* #include \"block.h\"\n"
      "   #include \"still_block.h\" */ #include \"after_block.h\"\n"
      "const char* s = \"/* not a comment\";\n"
      "#include \"d.h\"\n"
      "auto raw = R\"x(/* )x\";\n"
      "int n = 1'000;\n"
      "#include \"e.h\"\n"
      "#include_next <f.h>\n"
      "#include MACRO_HEADER\n"
      "#define X 1 \\\n"
      "  #include \"continued.h\"\n";
  auto found = scan_includes(text);
  ASSERT_EQ(found.size(), 7u);
  EXPECT_EQ(found[0].target, "a.h");
  EXPECT_EQ(found[0].kind, Kind::kQuoted);
  EXPECT_EQ(found[0].line, 1);
  EXPECT_EQ(found[1].target, "b/c.h");
  EXPECT_EQ(found[1].kind, Kind::kAngle);
  // A comment is whitespace: the directive after it still starts its line.
  EXPECT_EQ(found[2].target, "after_block.h");
  EXPECT_EQ(found[3].target, "d.h");
  EXPECT_EQ(found[3].line, 7);
  EXPECT_EQ(found[4].target, "e.h");
  EXPECT_EQ(found[4].line, 10);
  EXPECT_TRUE(found[5].include_next);
  EXPECT_EQ(found[6].kind, Kind::kComputed);
  EXPECT_EQ(found[6].target, "MACRO_HEADER");
}

TEST(ScanIncludesTest, LineSplicesKeepLaterLineNumbers) {
  auto found = scan_includes("#define A \\\n  1\n#include \"x.h\"\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 3);
}

TEST_F(IncludeClosureTest, FollowsQuotedAndProjectAngleIncludesSkipsSystemOnes) {
  write("inc/pypto/kernel_abi.h", "#include <stdint.h>\n");
  write("src/k.cpp", "#include <vector>\n#include <pypto/kernel_abi.h>\n#include \"sub/a.h\"\n");
  write("src/sub/a.h", "#pragma once\n#include \"b.h\"\n");  // beside a.h
  write("src/sub/b.h", "#include \"a.h\"\n");                // a cycle
  auto closure = include_closure(root_ / "src/k.cpp", {root_ / "inc", root_ / "src"});
  ASSERT_TRUE(closure.ok()) << closure.failure;
  EXPECT_EQ(names(closure),
            (std::vector<std::string>{"0:pypto/kernel_abi.h", "1:sub/a.h", "1:sub/b.h"}));
  EXPECT_EQ(closure.files[0].content, "#include <stdint.h>\n");
  EXPECT_NE(closure.source_content.find("sub/a.h"), std::string::npos);
}

TEST_F(IncludeClosureTest, MissingQuotedIncludeIsAFailureNamingTheLine) {
  write("src/k.cpp", "int x;\n#include \"gone.h\"\n");
  auto closure = include_closure(root_ / "src/k.cpp", {root_ / "src"});
  EXPECT_FALSE(closure.ok());
  EXPECT_NE(closure.failure.find("k.cpp:2"), std::string::npos) << closure.failure;
  EXPECT_NE(closure.failure.find("gone.h"), std::string::npos) << closure.failure;
}

TEST_F(IncludeClosureTest, ComputedIncludeAndUnreadableSourceAreFailures) {
  write("src/k.cpp", "#include HEADER\n");
  EXPECT_FALSE(include_closure(root_ / "src/k.cpp", {}).ok());
  EXPECT_FALSE(include_closure(root_ / "src/none.cpp", {}).ok());
  // A directory where a header should be cannot be read.
  write("src/j.cpp", "#include \"dir.h\"\n");
  fs::create_directories(root_ / "src/dir.h");
  EXPECT_FALSE(include_closure(root_ / "src/j.cpp", {}).ok());
}

TEST_F(IncludeClosureTest, NamesDoNotDependOnWhereTheTreeLives) {
  for (const char* rank : {"r0", "r1"}) {
    write(std::string(rank) + "/k.cpp", "#include \"../shared/h.h\"\n#include \"l.h\"\n");
    write(std::string(rank) + "/l.h", "int l;\n");
  }
  write("shared/h.h", "int h;\n");
  auto a = include_closure(root_ / "r0/k.cpp", {});
  auto b = include_closure(root_ / "r1/k.cpp", {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(names(a), names(b));
  EXPECT_EQ(names(a), (std::vector<std::string>{"src:../shared/h.h", "src:l.h"}));
}

}  // namespace
}  // namespace pypto
