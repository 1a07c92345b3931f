#include "pypto/param_info.h"

#include <gtest/gtest.h>

#include "artifact/fixture_test_util.h"

namespace pypto {
namespace {

using testing::FailsWithArtifactError;

// Parses `text` as the parameter list of a small document named meta.json.
std::vector<ParamInfo> parse(const std::string& text) {
  auto source = std::make_shared<JsonSource>(
      JsonSource{"build/x/compiled_meta.json", "pypto-compile ...; version control"});
  Json doc = Json::parse(text);
  JsonObject root(doc, source, "");
  return parse_params(root, "params");
}

TEST(ParamInfoTest, ParsesAndWritesBack) {
  const std::string text =
      R"({"params": [{"name": "x", "direction": "InOut", "shape": [8, -1, 256],
                     "dtype": "bf16"}]})";
  auto params = parse(text);
  ASSERT_EQ(params.size(), 1u);
  const ParamInfo& p = params[0];
  EXPECT_EQ(p.name, "x");
  EXPECT_EQ(p.direction, Direction::kInOut);
  EXPECT_EQ(p.shape, (std::vector<int64_t>{8, -1, 256}));
  EXPECT_EQ(p.dtype, DType::kBF16);
  EXPECT_TRUE(p.is_input());
  EXPECT_TRUE(p.is_output());
  EXPECT_TRUE(p.has_dynamic_shape());
  EXPECT_FALSE(p.numel().has_value());
  EXPECT_EQ(p.type_string(), "bf16[8, ?, 256]");
  EXPECT_EQ(Json::parse(text)["params"], params_to_json(params));
  EXPECT_EQ(find_param(params, "x"), &params[0]);
  EXPECT_EQ(find_param(params, "y"), nullptr);
}

TEST(ParamInfoTest, AcceptsMatchingDtypeAndStaticExtents) {
  ParamInfo p;
  p.dtype = DType::kF32;
  p.shape = {4, kDynamicExtent, 8};
  EXPECT_TRUE(p.accepts(DType::kF32, {4, 100, 8}));
  EXPECT_FALSE(p.accepts(DType::kI32, {4, 100, 8}));
  EXPECT_FALSE(p.accepts(DType::kF32, {4, 100, 9}));
  EXPECT_FALSE(p.accepts(DType::kF32, {4, 100}));
}

TEST(ParamInfoTest, DirectionNamesRoundTrip) {
  for (Direction d : {Direction::kIn, Direction::kOut, Direction::kInOut})
    EXPECT_EQ(parse_direction(direction_name(d)), d);
  EXPECT_FALSE(parse_direction("in").has_value());
}

TEST(ParamInfoTest, RejectsBadDtype) {
  EXPECT_TRUE(FailsWithArtifactError(
      [] {
        parse(R"({"params": [{"name": "a", "direction": "In", "shape": [4], "dtype": "f64"}]})");
      },
      "compiled_meta.json", "params[0].dtype"));
}

TEST(ParamInfoTest, RejectsBadDirection) {
  EXPECT_TRUE(FailsWithArtifactError(
      [] {
        parse(R"({"params": [{"name": "a", "direction": "Inout", "shape": [4], "dtype": "f32"}]})");
      },
      "compiled_meta.json", "params[0].direction"));
}

TEST(ParamInfoTest, RejectsNegativeExtentOtherThanDynamic) {
  EXPECT_TRUE(FailsWithArtifactError(
      [] {
        parse(R"({"params": [{"name": "a", "direction": "In", "shape": [-2], "dtype": "f32"}]})");
      },
      "compiled_meta.json", "params[0].shape"));
}

TEST(ParamInfoTest, RejectsEmptyAndNonIdentifierNames) {
  EXPECT_TRUE(FailsWithArtifactError(
      [] {
        parse(R"({"params": [{"name": "", "direction": "In", "shape": [4], "dtype": "f32"}]})");
      },
      "compiled_meta.json", "params[0].name"));
  EXPECT_TRUE(FailsWithArtifactError(
      [] {
        parse(R"({"params": [{"name": "../a", "direction": "In", "shape": [], "dtype": "f32"}]})");
      },
      "compiled_meta.json", "params[0].name"));
}

TEST(ParamInfoTest, RejectsDuplicateNamesAndUnknownKeys) {
  EXPECT_TRUE(FailsWithArtifactError(
      [] {
        parse(R"({"params": [{"name": "a", "direction": "In", "shape": [4], "dtype": "f32"},
                             {"name": "a", "direction": "Out", "shape": [4], "dtype": "f32"}]})");
      },
      "compiled_meta.json", "params[1].name"));
  EXPECT_TRUE(FailsWithArtifactError(
      [] {
        parse(R"({"params": [{"name": "a", "direction": "In", "shape": [4], "dtype": "f32",
                              "layout": "nd"}]})");
      },
      "compiled_meta.json", "params[0].layout"));
}

}  // namespace
}  // namespace pypto
