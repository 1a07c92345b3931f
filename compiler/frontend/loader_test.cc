#include "compiler/frontend/loader.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "compiler/test_util.h"

namespace pypto::compiler {
namespace {

using testing::run_front_end;

constexpr const char* kLib =
    "// a stand-in for the shipped collectives library\n"
    "kernel aiv copy(x: in f32[4], y: out f32[4]) { store(load(x, [0], [4]), y, [0]) }\n"
    "chip copy_chip(x: in f32[4], y: out f32[4]) { copy(x, y) }\n"
    "host copy_all(x: in f32[WORLD, 4], y: out f32[WORLD, 4]) {\n"
    "  for r in 0 .. WORLD { copy_chip(x[r], y[r]) on r }\n"
    "}\n";

TEST(LoaderTest, ImportsFromTheLibraryDirectory) {
  auto run = run_front_end({{"t.ptl",
                             "import \"coll.ptl\"\n"
                             "host main(x: in f32[WORLD, 4], y: out f32[WORLD, 4]) {\n"
                             "  copy_all(x, y)\n"
                             "}\n"},
                            {"lib/coll.ptl", kLib}});
  EXPECT_EQ(run.diagnostics, "");
  EXPECT_TRUE(run.result.ok);
  EXPECT_TRUE(run.result.distributed);
}

TEST(LoaderTest, ImportsRelativeToTheImporterFirstAndOnce) {
  auto run = run_front_end({{"app/t.ptl", "import \"a.ptl\"\nimport \"b.ptl\"\nchip main() {}\n"},
                            {"app/a.ptl", "import \"b.ptl\"\nconst A = B + 1\n"},
                            {"app/b.ptl", "const B = 1\n"},
                            {"lib/b.ptl", "const B = 2\n"}},
                           2, Arch::kA2A3, "app/t.ptl");
  EXPECT_EQ(run.diagnostics, "");  // b.ptl loaded once, before a.ptl which uses it
}

TEST(LoaderTest, MissingImport) {
  auto run = run_front_end({{"t.ptl", "import \"nope.ptl\"\nchip main() {}\n"}});
  EXPECT_EQ(run.diagnostics,
            "t.ptl:1:1: error: cannot find imported file 'nope.ptl' (looked next to 't.ptl', in "
            "'lib')\n"
            "import \"nope.ptl\"\n"
            "^~~~~~~~~~~~~~~~~\n");
}

TEST(LoaderTest, MissingRoot) {
  auto run = run_front_end({}, 2, Arch::kA2A3, "absent.ptl");
  EXPECT_EQ(run.diagnostics, "pypto-compile: error: cannot read 'absent.ptl'\n");
}

TEST(LoaderTest, ImportCycle) {
  auto run = run_front_end({{"t.ptl", "import \"a.ptl\"\nchip main() {}\n"},
                            {"a.ptl", "import \"b.ptl\"\n"},
                            {"b.ptl", "import \"a.ptl\"\n"}});
  EXPECT_EQ(run.diagnostics,
            "b.ptl:1:1: error: import cycle: a.ptl -> b.ptl -> a.ptl\n"
            "import \"a.ptl\"\n"
            "^~~~~~~~~~~~~~\n");
}

TEST(LoaderTest, ImportChainTooDeep) {
  std::map<std::string, std::string> files = {{"t.ptl", "import \"f0.ptl\"\nchip main() {}\n"}};
  for (int i = 0; i < 70; ++i)
    files["f" + std::to_string(i) + ".ptl"] = "import \"f" + std::to_string(i + 1) + ".ptl\"\n";
  files["f70.ptl"] = "";
  auto run = run_front_end(files);
  EXPECT_EQ(run.diagnostics,
            "f63.ptl:1:1: error: imports nest more than 64 files deep\n"
            "import \"f64.ptl\"\n"
            "^~~~~~~~~~~~~~~~\n");
}

TEST(LoaderTest, DuplicateDefinitionAcrossFiles) {
  auto run = run_front_end({{"t.ptl", "import \"a.ptl\"\nchip main() {}\nchip helper() {}\n"},
                            {"a.ptl", "chip helper() {}\n"}});
  EXPECT_EQ(run.diagnostics,
            "t.ptl:3:6: error: redefinition of 'helper'\n"
            "chip helper() {}\n"
            "     ^~~~~~\n"
            "a.ptl:1:6: note: previous definition is here\n"
            "chip helper() {}\n"
            "     ^~~~~~\n");
}

TEST(LoaderTest, SyntaxErrorsInImportedFilesNameThatFile) {
  auto run = run_front_end(
      {{"t.ptl", "import \"a.ptl\"\nchip main() {}\n"}, {"lib/a.ptl", "const = 1\n"}});
  EXPECT_EQ(run.diagnostics,
            "lib/a.ptl:1:7: error: expected a name after 'const', found '='\n"
            "const = 1\n"
            "      ^\n");
}

}  // namespace
}  // namespace pypto::compiler
