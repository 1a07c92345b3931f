// A hand edit of a generated .pto changes the result after `pypto-coord
// replay`: programs compiled by the real pypto-compile, listings re-spliced by
// the real pypto-ptoas (found through PTOAS_ROOT), run by the real pypto-coord
// (L3: rank agents under mpirun). The expected outputs of an edited listing
// are computed here from the golden inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/e2e/l3_util.h"

namespace pypto::e2e {
namespace {

const fs::path kPtoasBin = PYPTO_PTOAS_BIN;

// pypto-compile PROGRAM -o OUT [--world N]; fails the test on an error.
void compile(const fs::path& program, const fs::path& out, std::optional<int> world = {}) {
  const CoordResult r = pypto_compile(program, out, world);
  ASSERT_EQ(r.exit_code, 0) << r.all();
}

// Where replay finds the real pypto-ptoas; PATH leaves out the build tree, so
// only PTOAS_ROOT can supply it.
std::vector<std::string> with_ptoas(std::vector<std::string> env) {
  env.push_back("PTOAS_ROOT=" + kPtoasBin.parent_path().string());
  env.push_back("PATH=/usr/bin:/bin");
  return env;
}

// The listing was saved after ptoas/<unit>.cpp was written: makes the .cpp
// two seconds older than the .pto, since coarse file-system timestamps could
// make the two equal (never the .pto newer than now: the splice's fresh .cpp
// must end up newer than it).
void make_newer_than_its_cpp(const fs::path& pto) {
  const fs::path cpp = fs::path(pto).replace_extension(".cpp");
  ASSERT_TRUE(fs::exists(cpp)) << cpp;
  fs::last_write_time(cpp, fs::last_write_time(pto) - std::chrono::seconds(2));
}

// What a user does with an editor: change the text, save.
void hand_edit(const fs::path& pto, const std::string& from, const std::string& to) {
  edit_file(pto, from, to);
  make_newer_than_its_cpp(pto);
}

// The generated body between the sentinels of a kernel source.
std::string spliced_body(const fs::path& kernel) { return generated_body(slurp(kernel)); }

struct Tolerance {
  double rtol = 1e-6, atol = 1e-6;
};

Tolerance tolerance_of(const fs::path& dir) {
  const auto golden = nlohmann::json::parse(slurp(dir / "golden/golden.json"));
  Tolerance t;
  if (golden.contains("rtol")) t.rtol = golden["rtol"].get<double>();
  if (golden.contains("atol")) t.atol = golden["atol"].get<double>();
  return t;
}

// How many elements of `actual` the validation counts as differing from
// `expected`, and the first one (flat index, -1 when none).
std::pair<int64_t, int64_t> mismatches(const std::vector<float>& actual,
                                       const std::vector<float>& expected, const Tolerance& t) {
  int64_t count = 0, first = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (std::fabs(a - e) > t.atol + t.rtol * std::fabs(e)) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++count;
    }
  }
  return {count, first};
}

// ---------------------------------------------------------------------------
// L3: examples/allreduce.ptl at --world 2.

constexpr int kWorld = 2;
constexpr int64_t kSize = 256;  // SIZE of examples/allreduce.ptl
const char* const kAccumulate = "%acc:f32[1, 256] = tadd %acc, %t4";
const char* const kSubtract = "%acc:f32[1, 256] = tsub %acc, %t4";

fs::path rank_pto(const fs::path& build, int rank) {
  return build / "next_levels" / std::to_string(rank) / "ptoas/reduce_step.pto";
}
fs::path rank_kernel(const fs::path& build, int rank) {
  return build / "next_levels" / std::to_string(rank) / "kernels/aiv/reduce_step.cpp";
}

// y[r] of the allreduce after `tadd` became `tsub` on the ranks in `edited`:
// an edited rank computes x[r] minus every other rank's x, the others the sum.
std::vector<float> allreduce_with_sub(const std::vector<float>& x, const std::vector<int>& edited) {
  std::vector<float> y(x.size());
  for (int r = 0; r < kWorld; ++r) {
    const bool sub = std::find(edited.begin(), edited.end(), r) != edited.end();
    for (int64_t i = 0; i < kSize; ++i) {
      float acc = x[r * kSize + i];  // the rank's own data, then every peer's in rank order
      for (int p = 0; p < kWorld; ++p)
        if (p != r) acc = sub ? acc - x[p * kSize + i] : acc + x[p * kSize + i];
      y[r * kSize + i] = acc;
    }
  }
  return y;
}

TEST(PtoReplayTest, EditedListingOfTheAllreduceChangesItsResultAfterReplay) {
  const fs::path work = scratch_dir("pto_replay_allreduce");
  const fs::path build = work / "allreduce";
  compile(kExamples / "allreduce.ptl", build, kWorld);
  if (HasFatalFailure()) return;
  const std::string tag = "pto_replay_allreduce";
  const std::vector<std::string> env = with_ptoas(l3_env(tag));
  ASSERT_EQ(slurp(rank_kernel(build, 0)), slurp(rank_kernel(build, 1)));
  ASSERT_TRUE(contains(slurp(rank_pto(build, 1)), kAccumulate)) << slurp(rank_pto(build, 1));

  CoordResult r = coord({"run", build.string(), "--validate"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;

  const std::vector<float> x = f32_values(read_npy(build / "golden/inputs/x.npy"));
  const std::vector<float> golden = f32_values(read_npy(build / "golden/expected/y.npy"));
  ASSERT_EQ(x.size(), static_cast<size_t>(kWorld * kSize));
  ASSERT_EQ(allreduce_with_sub(x, {}), golden);  // the model of the kernel is right
  const Tolerance tol = tolerance_of(build);

  // 1. Only rank 1's listing: tadd -> tsub. Only rank 1's kernel is re-spliced.
  const std::string rank0_kernel = slurp(rank_kernel(build, 0));
  hand_edit(rank_pto(build, 1), kAccumulate, kSubtract);
  r = coord({"replay", build.string(), "--validate"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: re-ran pypto-ptoas on next_levels/1/ptoas/reduce_step.pto"))
      << r.all();
  EXPECT_TRUE(contains(
      r.out, "splice: rewrote the generated body of next_levels/1/kernels/aiv/reduce_step.cpp"))
      << r.all();
  EXPECT_FALSE(contains(r.out, "next_levels/0/")) << r.all();
  EXPECT_EQ(slurp(rank_kernel(build, 0)), rank0_kernel);
  EXPECT_TRUE(contains(spliced_body(rank_kernel(build, 1)), "tsub")) << slurp(rank_kernel(build, 1));
  {
    const std::vector<float> y = f32_values(read_npy(build / "outputs/y.npy"));
    EXPECT_EQ(y, allreduce_with_sub(x, {1}));
    const auto [count, first] = mismatches(y, golden, tol);
    ASSERT_GT(count, 0);
    EXPECT_GE(first, kSize);  // rank 0's row still matches
    EXPECT_TRUE(contains(r.err, "validation of " + build.string() + " failed")) << r.err;
    EXPECT_TRUE(contains(r.err, "output 'y': " + std::to_string(count) + " of " +
                                    std::to_string(kWorld * kSize) + " elements differ"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "first at [1, 0, " + std::to_string(first - kSize) + "]")) << r.err;
    EXPECT_TRUE(contains(r.err, "rank 1 wrote that element")) << r.err;
  }

  // 2. The same edit in rank 0's listing: every rank subtracts, and the two
  // ranks' kernel sources are byte-identical again (one compile per host).
  hand_edit(rank_pto(build, 0), kAccumulate, kSubtract);
  r = coord({"replay", build.string(), "--validate"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: re-ran pypto-ptoas on next_levels/0/ptoas/reduce_step.pto"))
      << r.all();
  EXPECT_FALSE(contains(r.out, "next_levels/1/ptoas")) << "rank 1 is up to date: " << r.all();
  EXPECT_EQ(slurp(rank_kernel(build, 0)), slurp(rank_kernel(build, 1)));
  EXPECT_EQ(slurp(build / "next_levels/0/ptoas/reduce_step.cpp"),
            slurp(build / "next_levels/1/ptoas/reduce_step.cpp"));
  {
    const std::vector<float> y = f32_values(read_npy(build / "outputs/y.npy"));
    EXPECT_EQ(y, allreduce_with_sub(x, {0, 1}));
    const auto [count, first] = mismatches(y, golden, tol);
    ASSERT_GE(first, 0);
    EXPECT_LT(first, kSize);
    EXPECT_TRUE(contains(r.err, "output 'y': " + std::to_string(count) + " of " +
                                    std::to_string(kWorld * kSize) + " elements differ"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "first at [0, 0, " + std::to_string(first) + "]")) << r.err;
    EXPECT_TRUE(contains(r.err, "rank 0 wrote that element")) << r.err;
  }
  EXPECT_TRUE(survivors(tag).empty()) << "processes of the run were left behind";
}

// A listing pypto-ptoas rejects: replay fails before launching anything,
// quoting the diagnostic (file:line:col), and the previous body stays.
TEST(PtoReplayTest, ListingWithASyntaxErrorFailsReplayAndKeepsThePreviousBody) {
  const fs::path work = scratch_dir("pto_replay_syntax");
  const fs::path build = work / "allreduce";
  compile(kExamples / "allreduce.ptl", build, kWorld);
  if (HasFatalFailure()) return;
  const std::string tag = "pto_replay_syntax";
  const fs::path pto = rank_pto(build, 1);
  const fs::path body = build / "next_levels/1/ptoas/reduce_step.cpp";
  const std::string kernel_before = slurp(rank_kernel(build, 1));
  const std::string body_before = slurp(body);

  // A stray "," in the tadd line: the line and column of the diagnostic are computed here.
  const std::string listing = slurp(pto);
  const size_t at = listing.find(kAccumulate);
  ASSERT_NE(at, std::string::npos) << listing;
  const size_t line = std::count(listing.begin(), listing.begin() + at, '\n') + 1;
  const std::string broken = "%acc:f32[1, 256] = tadd %acc,, %t4";
  const size_t column = at - (listing.rfind('\n', at) + 1) + broken.find(",,") + 2;
  hand_edit(pto, kAccumulate, broken);

  const CoordResult r = coord({"replay", build.string(), "--validate"}, with_ptoas(l3_env(tag)));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "next_levels/1/ptoas/reduce_step.pto")) << r.err;
  EXPECT_TRUE(contains(r.err, "reduce_step.pto:" + std::to_string(line) + ":" +
                                  std::to_string(column) + ": error: expected an operand"))
      << r.err;
  EXPECT_TRUE(contains(r.err, broken)) << "the line is quoted: " << r.err;
  EXPECT_TRUE(contains(r.err, "1 error generated")) << r.err;
  EXPECT_FALSE(contains(r.out, "validation")) << "nothing ran: " << r.all();
  EXPECT_EQ(slurp(rank_kernel(build, 1)), kernel_before);
  EXPECT_EQ(slurp(body), body_before);
  EXPECT_FALSE(fs::exists(build / "outputs/y.npy"));
  // No temporary output of pypto-ptoas is left beside the listing.
  for (const auto& entry : fs::directory_iterator(pto.parent_path()))
    EXPECT_TRUE(entry.path().filename().string()[0] != '.') << entry.path();
  EXPECT_TRUE(survivors(tag).empty());
}

// ---------------------------------------------------------------------------
// L2: examples/softmax.ptl (one chip, no mpirun).

TEST(PtoReplayTest, EditedListingOfAnL2KernelChangesItsResultAfterReplay) {
  const fs::path work = scratch_dir("pto_replay_softmax");
  const fs::path build = work / "softmax";
  compile(kExamples / "softmax.ptl", build);
  if (HasFatalFailure()) return;
  const std::vector<std::string> env = with_ptoas({});
  const fs::path pto = build / "ptoas/softmax_rows.pto";
  const fs::path kernel = build / "kernels/aiv/softmax_rows.cpp";

  CoordResult r = coord({"run", build.string(), "--validate"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::vector<float> unedited = f32_values(read_npy(build / "outputs/y.npy"));
  const std::string listing = slurp(pto);
  const std::string generated = slurp(kernel);

  // One instruction added before the store: the quotient times 4 (a power of
  // two, so exactly 4 x the unedited kernel's output).
  const char* const kStore = "  tstore %t0, y[0, 0]\n";
  ASSERT_TRUE(contains(listing, kStore)) << listing;
  hand_edit(pto, kStore, std::string("  %t0:f32[32, 128] = tmul %t0, 4.0\n") + kStore);
  r = coord({"replay", build.string(), "--validate"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: re-ran pypto-ptoas on ptoas/softmax_rows.pto")) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: rewrote the generated body of kernels/aiv/softmax_rows.cpp"))
      << r.all();
  EXPECT_TRUE(contains(spliced_body(kernel), "// %t0:f32[32, 128] = tmul %t0, 4.0")) << slurp(kernel);
  const std::vector<float> y = f32_values(read_npy(build / "outputs/y.npy"));
  ASSERT_EQ(y.size(), unedited.size());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 4.0f * unedited[i]) << "at " << i;
  const std::vector<float> golden = f32_values(read_npy(build / "golden/expected/y.npy"));
  const auto [count, first] = mismatches(y, golden, tolerance_of(build));
  EXPECT_EQ(count, static_cast<int64_t>(y.size()));
  EXPECT_EQ(first, 0);
  EXPECT_TRUE(contains(r.err, "output 'y': " + std::to_string(count) + " of " +
                                  std::to_string(y.size()) + " elements differ"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "first at [0, 0] (flat 0)")) << r.err;

  // Undoing the edit (the listing is newer again) brings back the body
  // pypto-compile wrote, byte for byte, and the run validates.
  spit(pto, listing);
  make_newer_than_its_cpp(pto);
  r = coord({"replay", build.string(), "--validate"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.all();
  EXPECT_EQ(slurp(kernel), generated);
}

}  // namespace
}  // namespace pypto::e2e
