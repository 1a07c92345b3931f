#include "pypto/error.h"

#include <gtest/gtest.h>

#include "common/json_reader.h"

namespace pypto {
namespace {

TEST(ErrorTest, ExitCodesFollowTheClass) {
  EXPECT_EQ(UsageError("x").exit_code(), ExitCode::kUsage);
  EXPECT_EQ(InfraError("x").exit_code(), ExitCode::kInfra);
  EXPECT_EQ(ArtifactError("f", "k", "p", "r").exit_code(), ExitCode::kInfra);
  EXPECT_EQ(ToolError("x").exit_code(), ExitCode::kInfra);
  EXPECT_EQ(ProgramError("x").exit_code(), ExitCode::kFail);
  EXPECT_EQ(KernelCompileError("k.cpp", "diag").exit_code(), ExitCode::kFail);
  EXPECT_EQ(ValidationError("x").exit_code(), ExitCode::kFail);
  EXPECT_EQ(exit_code_of(std::runtime_error("x")), ExitCode::kInfra);
}

TEST(ErrorTest, ArtifactErrorNamesFileFieldProblemAndRemedy) {
  ArtifactError e("build/x/kernel_config.json", "kernels[1].source", "is missing",
                  "recompile the program");
  EXPECT_STREQ(e.what(),
               "build/x/kernel_config.json: field 'kernels[1].source': is missing. "
               "recompile the program");
}

TEST(ErrorTest, KernelCompileErrorQuotesDiagnostics) {
  KernelCompileError e("kernels/aiv/vadd.cpp", "vadd.cpp:3:1: error: expected ';'");
  std::string msg = e.what();
  EXPECT_NE(msg.find("kernels/aiv/vadd.cpp"), std::string::npos);
  EXPECT_NE(msg.find("expected ';'"), std::string::npos);
}

Json parse(const char* text) { return Json::parse(text); }

TEST(JsonReaderTest, ReportsMissingWrongTypeAndUnknownKeysWithFieldPaths) {
  auto source = std::make_shared<JsonSource>(JsonSource{"meta.json", "recompile"});
  Json doc = parse(R"({"schema": 1, "items": [{"n": "x"}], "extra": 3})");
  JsonObject root(doc, source, "");
  root.expect_schema(1);
  auto items = root.objects("items");
  try {
    items[0].integer("n");
    FAIL();
  } catch (const ArtifactError& e) {
    EXPECT_EQ(e.field(), "items[0].n");
    EXPECT_NE(std::string(e.what()).find("must be an integer, found a string"), std::string::npos);
  }
  EXPECT_THROW(root.string("missing"), ArtifactError);
  try {
    root.reject_unknown_keys();
    FAIL();
  } catch (const ArtifactError& e) {
    EXPECT_EQ(e.field(), "extra");
  }
}

TEST(JsonReaderTest, RefusesOtherSchemaVersions) {
  auto source = std::make_shared<JsonSource>(JsonSource{"meta.json", "recompile"});
  Json doc = parse(R"({"schema": 2})");
  JsonObject root(doc, source, "");
  try {
    root.expect_schema(1);
    FAIL();
  } catch (const ArtifactError& e) {
    EXPECT_NE(std::string(e.what()).find("is 2 but this runtime reads schema 1"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace pypto
