// Binary cache, assembler and loader: compile counts are observed through a
// PYPTO_CXX wrapper script that logs every compile and then runs c++.
#include "artifact/binary_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <set>

#include "artifact/assembler.h"
#include "artifact/compiler_identity.h"
#include "artifact/kernel_headers.h"
#include "artifact/loaded_binary.h"
#include "common/fs_util.h"
#include "common/json_reader.h"
#include "common/subprocess.h"
#include "pypto/error.h"
#include "pypto/kernel_abi.h"
#include "tests/scoped_env.h"

extern char** environ;

namespace pypto {
namespace {

constexpr const char* kKernel = "kernels/aiv/k.cpp";

using testing_support::ScopedEnv;

fs::path make_temp_dir(const std::string& tag) {
  std::string pattern = (fs::temp_directory_path() / ("pypto_" + tag + "_XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_text(const fs::path& path) { return read_file(path); }

std::string kernel_source(const std::string& extra_include = "") {
  return "#include \"pypto/kernel_abi.h\"\n"
         "#include \"k_helper.h\"\n" +
         extra_include +
         "extern \"C\" int answer() { return HELPER_VALUE; }\n"
         "extern \"C\" void kernel_entry(const pypto_kernel_args*) {}\n";
}

int call_answer(const fs::path& binary) {
  LoadedBinary loaded(binary);
  return loaded.function<int (*)()>("answer")();
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool is_keyed_binary(const std::string& name) {
  return std::regex_match(name, std::regex("^[0-9a-f]{64}\\.so$"));
}

class BinaryCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = make_temp_dir("binary_cache");
    build_ = root_ / "build";
    log_ = root_ / "cxx.log";
    wrapper_ = root_ / "cxx";
    // Logs every compile (not the --version probe), then runs the real compiler.
    const std::string script =
        "#!/bin/sh\n"
        "case \" $* \" in *\" --version \"*) ;; *) echo \"$*\" >> '" +
        log_.string() +
        "' ;; esac\n"
        "if [ -n \"${PYPTO_TEST_CXX_DELAY:-}\" ]; then sleep \"$PYPTO_TEST_CXX_DELAY\"; fi\n"
        "exec c++ \"$@\"\n";
    write_text(wrapper_, script);
    fs::permissions(wrapper_, fs::perms::owner_all, fs::perm_options::add);
    env_.set("PYPTO_CXX", wrapper_.string());
    env_.unset("PYPTO_INCLUDE_DIR");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  int compiles() const {
    std::ifstream in(log_);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) ++n;
    return n;
  }

  void write_kernel(const fs::path& level, int value, const std::string& extra = "") {
    write_text(level / kKernel, kernel_source(extra));
    write_text(level / "kernels/aiv/k_helper.h",
               "#define HELPER_VALUE " + std::to_string(value) + "\n");
  }

  AssembleOptions options(std::optional<fs::path> store = std::nullopt) const {
    AssembleOptions opts;
    opts.platform = "a2a3sim";
    opts.arch = "a2a3";
    opts.store_dir = std::move(store);
    opts.jobs = 2;
    return opts;
  }

  fs::path root_, build_, log_, wrapper_;
  ScopedEnv env_;
};

TEST_F(BinaryCacheTest, SameKeyTwiceCompilesOnce) {
  write_kernel(build_, 42);
  auto first = assemble(build_, {kKernel}, options());
  auto second = assemble(build_, {kKernel}, options());
  EXPECT_EQ(compiles(), 1);
  ASSERT_EQ(first.size(), 1u);
  const fs::path binary = first.at(kKernel);
  EXPECT_EQ(second.at(kKernel), binary);
  EXPECT_EQ(binary.parent_path(), default_binary_store(build_));
  EXPECT_TRUE(is_keyed_binary(binary.filename().string())) << binary;
  EXPECT_EQ(call_answer(binary), 42);

  LoadedBinary loaded(binary);
  EXPECT_EQ(loaded.abi_version(), std::optional<uint32_t>(PYPTO_KERNEL_ABI_VERSION));
  EXPECT_NE(loaded.find_symbol("kernel_entry"), nullptr);
  try {
    loaded.symbol("no_such_symbol");
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_symbol"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(binary.string()), std::string::npos) << e.what();
  }

  // The stamp records the key and the binary relative to the build directory.
  Json stamp = Json::parse(read_text(binary_context_path(build_)));
  EXPECT_EQ(stamp["schema"], 1);
  EXPECT_EQ(stamp["abi_version"], PYPTO_KERNEL_ABI_VERSION);
  EXPECT_EQ(stamp["platform"], "a2a3sim");
  EXPECT_EQ(stamp["arch"], "a2a3");
  EXPECT_EQ(stamp["flags"], Json(kernel_compile_flags()));
  EXPECT_NE(stamp["compiler"].get<std::string>().find(wrapper_.string()), std::string::npos);
  const std::string key = binary.stem().string();
  EXPECT_EQ(stamp["entries"][kKernel]["key"], key);
  EXPECT_EQ(stamp["entries"][kKernel]["binary"], "cache/bin/" + key + ".so");
  EXPECT_EQ(binary_cache_key(build_ / kKernel, "a2a3sim", "a2a3").key, key);
  EXPECT_EQ(cache_state(build_, kKernel, "a2a3sim", "a2a3"), CacheState::kFresh);
}

TEST_F(BinaryCacheTest, ChangedHeaderInClosureChangesKeyAndRecompiles) {
  write_kernel(build_, 42);
  const fs::path first = assemble(build_, {kKernel}, options()).at(kKernel);
  EXPECT_EQ(cache_state(build_, kKernel, "a2a3sim", "a2a3"), CacheState::kFresh);

  write_text(build_ / "kernels/aiv/k_helper.h", "#define HELPER_VALUE 43\n");
  EXPECT_EQ(cache_state(build_, kKernel, "a2a3sim", "a2a3"), CacheState::kStale);
  const fs::path second = assemble(build_, {kKernel}, options()).at(kKernel);
  EXPECT_EQ(compiles(), 2);
  EXPECT_NE(first, second);
  EXPECT_EQ(call_answer(second), 43);
  EXPECT_EQ(cache_state(build_, kKernel, "a2a3sim", "a2a3"), CacheState::kFresh);
  // Another platform is another key.
  EXPECT_EQ(cache_state(build_, kKernel, "a5sim", "a5"), CacheState::kStale);

  EXPECT_EQ(cache_state(build_, "kernels/aiv/other.cpp", "a2a3sim", "a2a3"), CacheState::kMissing);
  fs::remove(second);
  EXPECT_EQ(cache_state(build_, kKernel, "a2a3sim", "a2a3"), CacheState::kMissing);
}

TEST_F(BinaryCacheTest, IdenticalSourcesInDifferentRanksShareAKey) {
  for (int rank : {0, 1, 2}) write_kernel(build_ / "next_levels" / std::to_string(rank), 42);
  write_text(build_ / "next_levels/2/kernels/aiv/k_helper.h", "#define HELPER_VALUE 7\n");
  auto key = [&](int rank, const char* platform) {
    CacheKey k =
        binary_cache_key(build_ / "next_levels" / std::to_string(rank) / kKernel, platform, "a2a3");
    EXPECT_TRUE(k.ok()) << k.failure;
    return k.key;
  };
  EXPECT_EQ(key(0, "a2a3sim"), key(1, "a2a3sim"));
  EXPECT_NE(key(0, "a2a3sim"), key(2, "a2a3sim"));  // a hand-edited header in rank 2
  EXPECT_NE(key(0, "a2a3sim"), key(0, "a2a3"));
  EXPECT_EQ(compiles(), 0);

  // A host store filled by rank 0's agent serves rank 1's identical source,
  // not rank 2's edited one; the build itself holds no stamp (store_state).
  const fs::path store = root_ / "host-bin";
  const fs::path level0 = build_ / "next_levels/0";
  auto state = [&](int rank) {
    return store_state(build_ / "next_levels" / std::to_string(rank) / kKernel, "a2a3sim",
                       "a2a3", store);
  };
  EXPECT_EQ(state(1).state, CacheState::kMissing);
  assemble(level0, {kKernel}, options(store));
  EXPECT_EQ(compiles(), 1);
  EXPECT_EQ(state(1).state, CacheState::kFresh);
  EXPECT_EQ(state(1).key.key, key(1, "a2a3sim"));
  EXPECT_EQ(state(2).state, CacheState::kMissing);
  EXPECT_EQ(store_state(level0 / kKernel, "a2a3sim", "a2a3", root_ / "elsewhere").state,
            CacheState::kMissing);
}

TEST_F(BinaryCacheTest, MissingQuotedHeaderFailsClosedAndRebuildsEveryTime) {
  // Compiles without opt.h, but the key cannot say whether opt.h will appear.
  write_kernel(build_, 42, "#if __has_include(\"opt.h\")\n#include \"opt.h\"\n#endif\n");
  CacheKey key = binary_cache_key(build_ / kKernel, "a2a3sim", "a2a3");
  EXPECT_FALSE(key.ok());
  EXPECT_NE(key.failure.find("opt.h"), std::string::npos) << key.failure;

  const fs::path first = assemble(build_, {kKernel}, options()).at(kKernel);
  const fs::path second = assemble(build_, {kKernel}, options()).at(kKernel);
  EXPECT_EQ(compiles(), 2);
  EXPECT_NE(first, second);
  EXPECT_EQ(first.filename().string().rfind("uncached-", 0), 0u) << first;
  EXPECT_EQ(call_answer(second), 42);
  for (const auto& name : list_dir(default_binary_store(build_)))
    EXPECT_FALSE(is_keyed_binary(name)) << name;

  Json stamp = Json::parse(read_text(binary_context_path(build_)));
  EXPECT_EQ(stamp["entries"][kKernel]["key"], "");
  EXPECT_EQ(cache_state(build_, kKernel, "a2a3sim", "a2a3"), CacheState::kStale);
}

TEST_F(BinaryCacheTest, CompilerThatDoesNotAnswerFailsClosed) {
  const fs::path mute = root_ / "mute-cxx";
  write_text(mute,
             "#!/bin/sh\n"
             "case \" $* \" in *\" --version \"*) exit 1 ;; esac\n"
             "echo \"$*\" >> '" +
                 log_.string() +
                 "'\n"
                 "exec c++ \"$@\"\n");
  fs::permissions(mute, fs::perms::owner_all, fs::perm_options::add);
  env_.set("PYPTO_CXX", mute.string());
  write_kernel(build_, 42);
  CacheKey key = binary_cache_key(build_ / kKernel, "a2a3sim", "a2a3");
  EXPECT_FALSE(key.ok());
  EXPECT_NE(key.failure.find("--version"), std::string::npos) << key.failure;
  const fs::path binary = assemble(build_, {kKernel}, options()).at(kKernel);
  EXPECT_EQ(binary.filename().string().rfind("uncached-", 0), 0u) << binary;
  EXPECT_EQ(call_answer(binary), 42);
}

TEST_F(BinaryCacheTest, MissingCompilerIsAToolErrorWithAHint) {
  env_.set("PYPTO_CXX", (root_ / "no-such-cxx").string());
  write_kernel(build_, 42);
  EXPECT_FALSE(binary_cache_key(build_ / kKernel, "a2a3sim", "a2a3").ok());
  try {
    assemble(build_, {kKernel}, options());
    FAIL() << "expected ToolError";
  } catch (const ToolError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("PYPTO_CXX"), std::string::npos) << what;
    EXPECT_NE(what.find("apt-get install g++"), std::string::npos) << what;
  }
}

TEST_F(BinaryCacheTest, CompileErrorNamesTheKernelAndLeavesNothingInTheStore) {
  write_text(build_ / "kernels/aiv/bad.cpp",
             "extern \"C\" int answer() { return ; }\n"
             "int broken = ;\n");
  try {
    assemble(build_, {"kernels/aiv/bad.cpp"}, options());
    FAIL() << "expected KernelCompileError";
  } catch (const KernelCompileError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.source(), "kernels/aiv/bad.cpp");
    EXPECT_NE(what.find("kernels/aiv/bad.cpp"), std::string::npos) << what;
    EXPECT_NE(what.find("error:"), std::string::npos) << what;  // the compiler's own words
    EXPECT_NE(what.find("bad.cpp:2"), std::string::npos) << what;
  }
  for (const auto& name : list_dir(default_binary_store(build_)))
    EXPECT_EQ(fs::path(name).extension(), ".lock") << "left behind: " << name;
  EXPECT_FALSE(fs::exists(binary_context_path(build_)));
}

TEST_F(BinaryCacheTest, SeveralFailuresAreReportedTogether) {
  write_kernel(build_, 42);
  write_text(build_ / "kernels/aiv/bad1.cpp", "int one = ;\n");
  write_text(build_ / "kernels/aic/bad2.cpp", "int two = ;\n");
  try {
    assemble(build_, {"kernels/aiv/bad1.cpp", kKernel, "kernels/aic/bad2.cpp"}, options());
    FAIL() << "expected KernelCompileError";
  } catch (const KernelCompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernels/aiv/bad1.cpp"), std::string::npos) << what;
    EXPECT_NE(what.find("kernels/aic/bad2.cpp"), std::string::npos) << what;
    EXPECT_NE(what.find("bad1.cpp:1"), std::string::npos) << what;
    EXPECT_NE(what.find("bad2.cpp:1"), std::string::npos) << what;
  }
  // What did build is recorded.
  EXPECT_EQ(cache_state(build_, kKernel, "a2a3sim", "a2a3"), CacheState::kFresh);
}

TEST_F(BinaryCacheTest, SourceOutsideTheBuildIsRefused) {
  EXPECT_THROW(assemble(build_, {"../escape.cpp"}, options()), ArtifactError);
  EXPECT_THROW(assemble(build_, {"kernels/aiv/absent.cpp"}, options()), ArtifactError);
}

TEST_F(BinaryCacheTest, BinaryWithAnotherAbiVersionIsDeletedAndRebuilt) {
  write_kernel(build_, 42);
  CacheKey key = binary_cache_key(build_ / kKernel, "a2a3sim", "a2a3");
  ASSERT_TRUE(key.ok()) << key.failure;
  // Plant a binary under the right key that claims another ABI (not via the wrapper).
  const fs::path store = default_binary_store(build_);
  fs::create_directories(store);
  write_text(root_ / "stale.cpp",
             "extern \"C\" unsigned pypto_abi_version(void) { return 999; }\n"
             "extern \"C\" int answer() { return 7; }\n");
  auto planted = run_subprocess({"c++", "-shared", "-fPIC", (root_ / "stale.cpp").string(), "-o",
                                 (store / (key.key + ".so")).string()});
  ASSERT_TRUE(planted.ok()) << planted.output;

  const fs::path binary = assemble(build_, {kKernel}, options()).at(kKernel);
  EXPECT_EQ(binary, store / (key.key + ".so"));
  EXPECT_EQ(compiles(), 1);
  EXPECT_EQ(call_answer(binary), 42);
  EXPECT_EQ(LoadedBinary(binary).abi_version(), std::optional<uint32_t>(PYPTO_KERNEL_ABI_VERSION));
}

TEST_F(BinaryCacheTest, InvalidateRemovesBinariesAndStampsInEveryNextLevel) {
  for (int rank : {0, 1}) write_kernel(build_ / "next_levels" / std::to_string(rank), 42);
  std::vector<fs::path> binaries;
  for (int rank : {0, 1}) {
    const fs::path level = build_ / "next_levels" / std::to_string(rank);
    binaries.push_back(assemble(level, {kKernel}, options()).at(kKernel));
  }
  EXPECT_EQ(compiles(), 2);
  // A stray private binary at the top, and a stamp naming a file that is no
  // cache binary: that file must survive.
  write_text(build_ / "cache/bin/uncached-1-0.so", "x");
  write_text(build_ / "golden/keep.so", "keep");
  write_text(binary_context_path(build_),
             Json({{"schema", 1},
                   {"abi_version", 1},
                   {"compiler", "c++"},
                   {"flags", Json::array()},
                   {"platform", "a2a3sim"},
                   {"arch", "a2a3"},
                   {"entries", {{"x.cpp", {{"key", ""}, {"binary", "golden/keep.so"}}}}}})
                 .dump());

  EXPECT_EQ(invalidate_binary_cache(build_), 3u);
  for (const auto& binary : binaries) EXPECT_FALSE(fs::exists(binary)) << binary;
  EXPECT_FALSE(fs::exists(build_ / "cache/bin"));
  EXPECT_FALSE(fs::exists(binary_context_path(build_)));
  for (int rank : {0, 1}) {
    const fs::path level = build_ / "next_levels" / std::to_string(rank);
    EXPECT_FALSE(fs::exists(binary_context_path(level)));
    EXPECT_FALSE(fs::exists(level / "cache/bin"));
    EXPECT_TRUE(fs::exists(level / kKernel));
    EXPECT_EQ(cache_state(level, kKernel, "a2a3sim", "a2a3"), CacheState::kMissing);
  }
  EXPECT_TRUE(fs::exists(build_ / "golden/keep.so"));
  EXPECT_EQ(invalidate_binary_cache(build_), 0u);
}

// ---- four processes racing on one key ----

// Run only as a child of RacingProcessesCompileOnce (hence DISABLED_).
TEST(BinaryCacheRace, DISABLED_Child) {
  const char* build = std::getenv("PYPTO_TEST_RACE_BUILD");
  const char* store = std::getenv("PYPTO_TEST_RACE_STORE");
  ASSERT_TRUE(build && store) << "run by BinaryCacheTest.RacingProcessesCompileOnce";
  AssembleOptions opts;
  opts.platform = "a2a3sim";
  opts.arch = "a2a3";
  opts.store_dir = fs::path(store);
  const fs::path binary = assemble(build, {kKernel}, opts).at(kKernel);
  ASSERT_EQ(call_answer(binary), 42);
  write_text(fs::path(build) / "child.ok", binary.string());
}

TEST_F(BinaryCacheTest, RacingProcessesCompileOnce) {
  const fs::path store = root_ / "host-store";
  // A slow compile keeps the window wide open: the others must wait on the lock.
  env_.set("PYPTO_TEST_CXX_DELAY", "0.5");
  const fs::path self = fs::read_symlink("/proc/self/exe");
  constexpr int kChildren = 4;
  std::vector<pid_t> pids;
  for (int i = 0; i < kChildren; ++i) {
    const fs::path rank = root_ / ("rank" + std::to_string(i));
    write_kernel(rank, 42);
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    env.push_back("PYPTO_TEST_RACE_BUILD=" + rank.string());
    env.push_back("PYPTO_TEST_RACE_STORE=" + store.string());
    std::vector<std::string> args = {self.string(), "--gtest_filter=BinaryCacheRace.DISABLED_Child",
                                     "--gtest_also_run_disabled_tests"};
    std::vector<char*> c_env, c_args;
    for (auto& s : env) c_env.push_back(s.data());
    c_env.push_back(nullptr);
    for (auto& s : args) c_args.push_back(s.data());
    c_args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = (root_ / ("child" + std::to_string(i) + ".log")).string();
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, c_args.data(), c_env.data());
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << std::strerror(rc);
    pids.push_back(pid);
  }
  for (int i = 0; i < kChildren; ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(pids[i], &status, 0), pids[i]);
    const fs::path rank = root_ / ("rank" + std::to_string(i));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << read_text(root_ / ("child" + std::to_string(i) + ".log"));
    EXPECT_TRUE(fs::exists(rank / "child.ok"))
        << read_text(root_ / ("child" + std::to_string(i) + ".log"));
  }
  EXPECT_EQ(compiles(), 1);
  int binaries = 0;
  for (const auto& name : list_dir(store)) binaries += is_keyed_binary(name) ? 1 : 0;
  EXPECT_EQ(binaries, 1);
}

TEST(KernelHeadersTest, FindsTheAbiHeaderAndHonoursTheOverride) {
  ScopedEnv env;
  env.unset("PYPTO_INCLUDE_DIR");
  const fs::path dir = kernel_include_dir();
  EXPECT_TRUE(fs::exists(dir / "pypto/kernel_abi.h")) << dir;

  env.set("PYPTO_INCLUDE_DIR", "/nonexistent/include");
  try {
    kernel_include_dir();
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("PYPTO_INCLUDE_DIR"), std::string::npos) << e.what();
  }
  env.set("PYPTO_INCLUDE_DIR", dir.string());
  EXPECT_EQ(kernel_include_dir(), dir);
}

}  // namespace
}  // namespace pypto
