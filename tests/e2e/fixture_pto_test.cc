// Every .pto listing of the fixtures is in the real format (docs/pto-format.md)
// and the real pypto-ptoas turns it into exactly the body the fixture carries:
// ptoas/<unit>.cpp and the text between the sentinels of the kernel source. So
// a replay of an untouched fixture changes nothing, and an edited listing is
// what the kernel runs. After a change of pypto-ptoas's output, regenerate:
//   python3 tests/fixtures/make_pto.py --ptoas <build>/compiler/pypto-ptoas
//   python3 tests/fixtures/make_l3.py
#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {
namespace {

const char* const kRegenerate =
    "regenerate with: python3 tests/fixtures/make_pto.py --ptoas <build>/compiler/pypto-ptoas "
    "&& python3 tests/fixtures/make_l3.py";

// pypto-ptoas's output for `pto`, run in a scratch copy of its directory.
std::string ptoas_output(const fs::path& pto, const fs::path& scratch) {
  fs::create_directories(scratch);
  const fs::path in = scratch / pto.filename();
  fs::copy_file(pto, in, fs::copy_options::overwrite_existing);
  const CoordResult r =
      run_split({PYPTO_PTOAS_BIN, in.filename().string(), "-o", "out.cpp"}, {}, scratch);
  EXPECT_EQ(r.exit_code, 0) << pto << " is not a valid listing:\n" << r.all();
  return slurp(scratch / "out.cpp");
}

TEST(FixturePtoTest, EveryListingIsRealAndItsBodyIsPtoasOutput) {
  const fs::path scratch = scratch_dir("fixture_pto");
  int listings = 0, kernels = 0;
  int n = 0;
  for (auto it = fs::recursive_directory_iterator(kFixtures);
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && testing_support::is_run_product(it->path().filename())) {
      it.disable_recursion_pending();
      continue;
    }
    const fs::path pto = it->path();
    if (!it->is_regular_file() || pto.extension() != ".pto") continue;
    SCOPED_TRACE(fs::relative(pto, kFixtures).string());
    ++listings;
    const std::string body = ptoas_output(pto, scratch / std::to_string(n++));
    ASSERT_FALSE(body.empty());
    const fs::path cpp = fs::path(pto).replace_extension(".cpp");
    EXPECT_EQ(slurp(cpp), body) << cpp << " is not pypto-ptoas's output; " << kRegenerate;
    if (pto.parent_path().filename() != "ptoas") continue;  // tests/fixtures/pto/
    // In a build directory: the kernel source carries the same body.
    const fs::path build = pto.parent_path().parent_path();
    for (const char* core : {"aiv", "aic"}) {
      const fs::path kernel = build / "kernels" / core / cpp.filename();
      if (!fs::exists(kernel)) continue;
      ++kernels;
      EXPECT_EQ(generated_body(slurp(kernel)), body)
          << kernel << " does not carry pypto-ptoas's output; " << kRegenerate;
    }
  }
  // l2 (5 listings), l2_broken (5; missing_kernel has no kernel source), the
  // reduce_step of every rank of the allreduce builds in l3 and l3_broken
  // (8 + 2 + 8 + 4 + 2) and tests/fixtures/pto/ (4).
  EXPECT_GE(listings, 38);
  EXPECT_GE(kernels, 33);
}

}  // namespace
}  // namespace pypto::e2e
