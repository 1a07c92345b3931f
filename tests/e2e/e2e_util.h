// Helpers of the end-to-end tests: run the real pypto-coord binary on copies
// of the fixture build directories (never on the source tree: runs write
// cache/, outputs/ and dfx_outputs/ into the directory).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "artifact/splice.h"
#include "common/subprocess.h"
#include "pypto/npy.h"
#include "pypto/tensor.h"
#include "tests/fixture_copy.h"

namespace pypto::e2e {

namespace fs = std::filesystem;

inline const fs::path kFixtures = fs::path(PYPTO_SOURCE_DIR) / "tests/fixtures";
inline const fs::path kCoordBin = PYPTO_COORD_BIN;

struct CoordResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
  std::string all() const { return "--- stdout:\n" + out + "--- stderr:\n" + err; }
};

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void spit(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// The generated body of a kernel source: the text between its sentinel lines.
inline std::string generated_body(const std::string& kernel_source) {
  const std::string begin = std::string(kPtoasBeginSentinel) + "\n";
  const size_t b = kernel_source.find(begin);
  const size_t e = kernel_source.find(kKernelEntrySentinel);
  if (b == std::string::npos || e == std::string::npos || e < b) return "<no sentinels>";
  return kernel_source.substr(b + begin.size(), e - b - begin.size());
}

// Scratch of this test process, removed when its tests end (tests/fixture_copy.h).
using testing_support::process_scratch_root;
using testing_support::ScratchCleanup;
using testing_support::scratch_dir;

// Runs `argv` (argv[0] a program) with stdout and stderr kept apart: the
// exec markers must be alone on stdout.
// `env` holds NAME=value entries added to the inherited environment.
inline CoordResult run_split(const std::vector<std::string>& argv,
                             const std::vector<std::string>& env = {},
                             const std::optional<fs::path>& cwd = std::nullopt) {
  static int counter = 0;
  std::error_code mkdir_ec;
  fs::create_directories(process_scratch_root(), mkdir_ec);
  const fs::path err_file = process_scratch_root() / ("stderr_" + std::to_string(counter++));
  std::vector<std::string> sh{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$PYPTO_E2E_STDERR\""};
  sh.insert(sh.end(), argv.begin(), argv.end());
  SubprocessOptions sub;
  sub.timeout = std::chrono::seconds(120);
  sub.extra_env = env;
  sub.extra_env.push_back("PYPTO_E2E_STDERR=" + err_file.string());
  sub.cwd = cwd;
  SubprocessResult r = run_subprocess(sh, sub);
  CoordResult result;
  result.exit_code = r.timed_out || r.term_signal ? -1 : r.exit_code;
  result.out = r.output;
  result.err = slurp(err_file);
  if (r.timed_out || r.term_signal) result.err += "\n(" + r.describe() + ")";
  fs::remove(err_file);
  return result;
}

// The examples/ programs, and `pypto-compile PROGRAM -o OUT [--world N]`.
inline const fs::path kExamples = fs::path(PYPTO_SOURCE_DIR) / "examples";
inline CoordResult pypto_compile(const fs::path& program, const fs::path& out,
                                 std::optional<int> world = std::nullopt) {
  std::vector<std::string> argv{PYPTO_COMPILE_BIN, program.string(), "-o", out.string()};
  if (world) argv.insert(argv.end(), {"--world", std::to_string(*world)});
  return run_split(argv);
}

inline CoordResult coord(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {},
                         const std::optional<fs::path>& cwd = std::nullopt) {
  std::vector<std::string> argv{kCoordBin.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_split(argv, env, cwd);
}

// Makes every ptoas/<unit>.pto older than its ptoas/<unit>.cpp, as in a fresh
// compile; copying does not keep mtimes, so a copy could look hand-edited.
// Recurses into next_levels/<r>/ of an L3 build.
inline void settle_ptoas_mtimes(const fs::path& dir) {
  const fs::path next_levels = dir / "next_levels";
  if (fs::is_directory(next_levels))
    for (const auto& level : fs::directory_iterator(next_levels)) settle_ptoas_mtimes(level.path());
  const fs::path ptoas = dir / "ptoas";
  if (!fs::is_directory(ptoas)) return;
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& entry : fs::directory_iterator(ptoas))
    if (entry.path().extension() == ".pto") fs::last_write_time(entry.path(), old);
}

// FNV-1a over the relative paths and contents of every file of the fixture
// and of the kernel ABI headers: names a warm cache that fits these sources.
inline std::string fixture_fingerprint(const std::string& rel) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::string& bytes) {
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  };
  for (const fs::path& root :
       {kFixtures / rel, fs::path(PYPTO_SOURCE_DIR) / "include"}) {
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
         ++it) {
      if (it->is_directory() && testing_support::is_run_product(it->path().filename()))
        it.disable_recursion_pending();
      else if (it->is_regular_file())
        files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      mix(fs::relative(file, root).string());
      mix(slurp(file));
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// Copies of a fixture start with the binaries of an earlier run (cache/) when
// one was kept, so only the tests that change a source compile. The warm
// caches are shared by all test processes (ctest runs each test alone) and
// kept across runs under <TempDir>/pypto_e2e_warm/, one per version of the
// fixture's sources; the cache key is content-addressed anyway, so a stale
// binary is never used for a changed source.
inline fs::path warm_cache_dir(const std::string& rel) {
  std::string name = rel;
  for (char& c : name)
    if (c == '/') c = '_';
  return fs::path(::testing::TempDir()) / "pypto_e2e_warm" /
         (name + "-" + fixture_fingerprint(rel));
}

// Copies tests/fixtures/<rel> to a scratch directory, with the warm cache
// when there is one.
inline fs::path copy_fixture(const std::string& rel, const std::string& name) {
  const fs::path dst = scratch_dir(name) / fs::path(rel).filename();
  testing_support::copy_fixture_sources(kFixtures / rel, dst);
  settle_ptoas_mtimes(dst);
  const fs::path warm = warm_cache_dir(rel);
  if (fs::is_directory(warm / "cache"))
    fs::copy(warm / "cache", dst / "cache", fs::copy_options::recursive);
  return dst;
}

// After a run of `dir` (a copy of `rel`) whose sources were not edited,
// keeps its cache for later copies. Published by rename, so concurrent test
// processes see a complete cache or none.
inline void keep_warm_cache(const std::string& rel, const fs::path& dir) {
  const fs::path warm = warm_cache_dir(rel);
  if (fs::is_directory(warm / "cache") || !fs::is_directory(dir / "cache")) return;
  const fs::path staging = warm.string() + ".tmp" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging);
  fs::copy(dir / "cache", staging / "cache", fs::copy_options::recursive);
  fs::rename(staging, warm, ec);
  if (ec) fs::remove_all(staging, ec);  // another process published first
}

// A copy of fixture `rel` whose binaries are built, run once with `run`.
inline fs::path warm_copy(const std::string& rel, const std::string& name) {
  fs::path dir = copy_fixture(rel, name);
  if (!fs::is_directory(warm_cache_dir(rel) / "cache")) {
    CoordResult r = coord({"run", dir.string(), "--log-level", "warn"});
    EXPECT_EQ(r.exit_code, 0) << r.all();
    keep_warm_cache(rel, dir);
    fs::remove_all(dir / "outputs");
  }
  return dir;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every element of an f32 tensor, for checks.
inline std::vector<float> f32_values(const Tensor& t) {
  Tensor c = t.contiguous();
  const float* p = c.data_as<float>();
  return std::vector<float>(p, p + c.numel());
}

inline Tensor f32_filled(const Shape& shape, float value) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  float* p = t.data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value;
  return t;
}

// Replaces the first occurrence of `from` in the file; fails the test when absent.
inline void edit_file(const fs::path& path, const std::string& from, const std::string& to) {
  std::string text = slurp(path);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << path << " has no '" << from << "'";
  text.replace(at, from.size(), to);
  spit(path, text);
}

}  // namespace pypto::e2e
