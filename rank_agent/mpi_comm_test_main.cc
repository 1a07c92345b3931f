// The data plane under a real mpirun: every rank runs the same GoogleTest
// cases and drives windows through the kernel-level pypto_comm_api, exactly
// as a kernel would, with a fake pypto_kernel_ctx whose report_error hook
// records messages. Run as
//   [PYPTO_COMM=rma] [PYPTO_MPI_THREAD=serialized] mpirun -n 4 mpi_comm_test [--watchdog=S]
// A failure on any rank fails every rank's exit code (final MPI_Allreduce);
// a rank stuck in a collective is cut off by a watchdog (MPI_Abort).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pypto/error.h"
#include "rank_agent/atomics.h"
#include "rank_agent/comm_api.h"
#include "rank_agent/mpi_session.h"
#include "rank_agent/window_set.h"

namespace pypto::rank {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

MpiSession* g_session = nullptr;
const MpiSession& session() { return *g_session; }
int R() { return g_session->rank(); }
int W() { return g_session->world(); }

// Generous: a deadline that fires in a passing test would be a flake.
constexpr milliseconds kTimeout{20'000};

// The path of a window over the whole world: shm only when every rank shares
// a node (the job runs across simulated hosts too, tests/multihost/).
CommPath expected_path() {
  return comm_mode_from_env() == CommMode::kRma || session().spans_nodes() ? CommPath::kRma
                                                                             : CommPath::kShm;
}

// A pypto_kernel_ctx as a chip runtime would hand it to a kernel.
class FakeKernel {
 public:
  FakeKernel(const WindowSet& windows, const CommState& state) {
    ctx.rank = windows.rank();
    ctx.world = windows.world();
    ctx.num_windows = windows.size();
    ctx.windows = windows.kernel_windows().data();
    ctx.hooks = &kHooks;
    ctx.runtime = this;
    ctx.comm = comm_api();
    ctx.comm_state = const_cast<CommState*>(&state);
  }
  const pypto_comm_api* comm() const { return ctx.comm; }
  const pypto_kernel_ctx* c() const { return &ctx; }
  std::string errors() {
    std::lock_guard lock(mu_);
    std::string all;
    for (const auto& e : errors_) all += e + "\n";
    return all;
  }
  std::string last_error() {
    std::lock_guard lock(mu_);
    return errors_.empty() ? "" : errors_.back();
  }
  size_t error_count() {
    std::lock_guard lock(mu_);
    return errors_.size();
  }

  pypto_kernel_ctx ctx{};

 private:
  static void report(const pypto_kernel_ctx* ctx, const char* message) {
    auto* self = static_cast<FakeKernel*>(ctx->runtime);
    std::lock_guard lock(self->mu_);
    self->errors_.push_back(message);
  }
  static void tag(const pypto_kernel_ctx*, int32_t, const char*) {}
  static constexpr pypto_kernel_hooks kHooks = {report, tag};

  std::mutex mu_;
  std::vector<std::string> errors_;
};

// ---- setup ----

TEST(MpiSession, ReportsThreadLevelAndNode) {
  EXPECT_GE(W(), 2);
  EXPECT_FALSE(session().host().empty());
  if (session().spans_nodes())
    EXPECT_LT(session().node_size(), W());
  else
    EXPECT_EQ(session().node_size(), W());
  EXPECT_THAT(session().thread_level_note(),
              HasSubstr(thread_level_name(session().provided_thread_level())));
  if (R() == 0)
    std::printf("[rank 0] world %d on %s; %s\n", W(), session().host().c_str(),
                session().thread_level_note().c_str());
}

TEST(WindowSet, LayoutAndPath) {
  WindowSet ws(session(), {{"data", 100, DType::kF32, {}}, {"signal", 64, DType::kI32, {}}});
  ASSERT_EQ(ws.size(), 2);
  EXPECT_EQ(*ws.find("signal"), 1);
  EXPECT_FALSE(ws.find("nope").has_value());
  const auto& kw = ws.kernel_windows();
  EXPECT_STREQ(kw[0].name, "data");
  EXPECT_EQ(kw[0].bytes, 100u);
  EXPECT_EQ(kw[1].id, 1);
  EXPECT_EQ(kw[1].dtype, PYPTO_I32);
  for (int id = 0; id < 2; ++id) {
    EXPECT_EQ(ws.path(id), expected_path());
    ASSERT_NE(kw[id].local, nullptr);
    const auto* bytes = static_cast<const unsigned char*>(kw[id].local);
    for (uint64_t i = 0; i < kw[id].bytes; ++i) ASSERT_EQ(bytes[i], 0) << "not zeroed at " << i;
  }
  if (R() == 0)
    std::printf("[rank 0] path %s, memory model %s\n", comm_path_name(ws.path(0)),
                ws.memory_model(0) == MPI_WIN_UNIFIED ? "unified" : "separate");
}

// rma windows of one member set are carved out of one MPI window: a put into
// one lands in it alone.
TEST(WindowSet, WindowsOfOneMemberSetKeepTheirOwnBytes) {
  WindowSet ws(session(), {{"a", 100, DType::kF32, {}},
                           {"pair", 32, DType::kI32, {0, 1}},
                           {"b", 64, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  const int next = (R() + 1) % W();
  std::vector<unsigned char> pattern(64, 0xAB);
  ASSERT_EQ(api->put(k.c(), 2, next, 0, pattern.data(), 64), 0) << k.errors();
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  const auto* a = static_cast<const unsigned char*>(k.ctx.windows[0].local);
  const auto* b = static_cast<const unsigned char*>(k.ctx.windows[2].local);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a[i], 0) << "window a changed at byte " << i;
  for (int i = 0; i < 64; ++i) ASSERT_EQ(b[i], 0xAB) << "window b at byte " << i;
  if (R() < 2) {
    const auto* pair = static_cast<const unsigned char*>(k.ctx.windows[1].local);
    for (int i = 0; i < 32; ++i) ASSERT_EQ(pair[i], 0) << "window pair changed at byte " << i;
  }
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
}

// A window whose members all share a node keeps shared memory even when the
// job spans nodes (docs/windows.md "Across nodes").
TEST(WindowSet, WindowWithinANodeKeepsSharedMemory) {
  const int me = R();
  int leader = 0;  // the lowest world rank of this rank's node
  ASSERT_EQ(MPI_Allreduce(&me, &leader, 1, MPI_INT, MPI_MIN, session().node_comm()),
            MPI_SUCCESS);
  std::vector<int> leaders(static_cast<size_t>(W()));
  ASSERT_EQ(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, session().world_comm()),
            MPI_SUCCESS);
  std::vector<int> node_of_rank0;  // every rank on rank 0's node
  for (int r = 0; r < W(); ++r)
    if (leaders[static_cast<size_t>(r)] == leaders[0]) node_of_rank0.push_back(r);
  WindowSet ws(session(), {{"local", 64, DType::kI32, node_of_rank0}});
  EXPECT_EQ(ws.path(0), comm_mode_from_env() == CommMode::kRma ? CommPath::kRma : CommPath::kShm);
}

TEST(WindowSet, MismatchedSpecsFailOnEveryRank) {
  const std::vector<WindowSpec> specs = {{R() == 0 ? "a" : "b", 64, DType::kF32, {}}};
  EXPECT_THROW({ WindowSet ws(session(), specs); }, InfraError);
}

TEST(WindowSet, InvalidSpecsFailOnEveryRank) {
  auto make = [](std::vector<WindowSpec> specs) { WindowSet ws(session(), std::move(specs)); };
  const std::vector<WindowSpec> twice = {{"x", 64, DType::kF32, {}}, {"x", 8, DType::kF32, {}}};
  const std::vector<WindowSpec> empty = {{"x", 0, DType::kF32, {}}};
  const std::vector<WindowSpec> outside = {{"x", 8, DType::kF32, {0, W()}}};
  EXPECT_THROW(make(twice), ProgramError);
  EXPECT_THROW(make(empty), ProgramError);
  EXPECT_THROW(make(outside), ProgramError);
}

// ---- the kernel-level API ----

// PyPTO's quickstart allreduce: write your own copy, notify every peer, wait
// for all of them, then remote_load every copy and sum. Twice, to show the
// windows persist across dispatches.
TEST(Comm, AllreduceQuickstart) {
  constexpr int kN = 256;
  WindowSet ws(session(), {{"data", kN * 4, DType::kF32, {}}, {"signal", 16, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  for (int round = 1; round <= 2; ++round) {
    auto* mine = static_cast<float*>(k.ctx.windows[0].local);
    for (int i = 0; i < kN; ++i) mine[i] = static_cast<float>(R() * 100 + i + round * 1000);
    for (int p = 0; p < W(); ++p)
      if (p != R()) {
        ASSERT_EQ(api->notify(k.c(), 1, p, 0, 1, PYPTO_STORE_ADD), 0) << k.errors();
      }
    ASSERT_EQ(api->wait(k.c(), 1, 0, PYPTO_CMP_GE, round * (W() - 1)), 0) << k.errors();
    std::vector<float> sum(kN, 0.f), buf(kN);
    for (int p = 0; p < W(); ++p) {
      ASSERT_EQ(api->remote_load(k.c(), 0, p, 0, buf.data(), kN * 4), 0) << k.errors();
      for (int i = 0; i < kN; ++i) sum[i] += buf[i];
    }
    for (int i = 0; i < kN; ++i) {
      float expected = 0;
      for (int p = 0; p < W(); ++p) expected += static_cast<float>(p * 100 + i + round * 1000);
      ASSERT_EQ(sum[i], expected) << "round " << round << " element " << i;
    }
    // Nobody may overwrite its copy for the next round before all have read it.
    ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  }
  EXPECT_EQ(k.error_count(), 0u) << k.errors();
}

TEST(Comm, RingShiftWithPutAndNotify) {
  constexpr int kN = 1000;
  WindowSet ws(session(), {{"recv", kN * 4, DType::kI32, {}}, {"flag", 4, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  const int next = (R() + 1) % W(), prev = (R() + W() - 1) % W();
  for (int round = 1; round <= 3; ++round) {
    std::vector<int32_t> out(kN);
    for (int i = 0; i < kN; ++i) out[i] = R() * 1'000'000 + round * 10'000 + i;
    ASSERT_EQ(api->put(k.c(), 0, next, 0, out.data(), kN * 4), 0) << k.errors();
    ASSERT_EQ(api->notify(k.c(), 1, next, 0, round, PYPTO_STORE_SET), 0) << k.errors();
    ASSERT_EQ(api->wait(k.c(), 1, 0, PYPTO_CMP_EQ, round), 0) << k.errors();
    const auto* in = static_cast<const int32_t*>(k.ctx.windows[0].local);
    for (int i = 0; i < kN; ++i)
      ASSERT_EQ(in[i], prev * 1'000'000 + round * 10'000 + i) << "round " << round;
    ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  }
}

// Every comm call is recorded in the dispatch's CommLog (comm_ops.json with
// --swimlane): kind, window, peer, cell, value, its task and core, its times.
TEST(Comm, CallsAreRecordedInTheCommLog) {
  WindowSet ws(session(), {{"recv", 64, DType::kI32, {}}, {"flag", 8, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  CommLog log;
  state.set_log(&log);
  FakeKernel k(ws, state);
  k.ctx.task_id = 7;
  k.ctx.core_id = 2;
  const auto* api = k.comm();
  const int next = (R() + 1) % W();
  std::vector<int32_t> out(16, R());
  ASSERT_EQ(api->put(k.c(), 0, next, 0, out.data(), 64), 0) << k.errors();
  ASSERT_EQ(api->notify(k.c(), 1, next, 4, 1, PYPTO_STORE_SET), 0) << k.errors();
  ASSERT_EQ(api->wait(k.c(), 1, 4, PYPTO_CMP_EQ, 1), 0) << k.errors();
  EXPECT_NE(api->wait(k.c(), 9, 0, PYPTO_CMP_EQ, 1), 0);  // no window 9: recorded as failed
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  const std::vector<CommOp> ops = log.recent();
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].kind, CommOpKind::kPut);
  EXPECT_EQ(ops[0].peer, next);
  EXPECT_EQ(ops[0].bytes, 64u);
  EXPECT_EQ(ops[1].kind, CommOpKind::kNotify);
  EXPECT_EQ(ops[1].window, 1);
  EXPECT_EQ(ops[1].offset, 4u);
  EXPECT_EQ(ops[1].value, 1);
  EXPECT_EQ(ops[2].kind, CommOpKind::kWait);
  EXPECT_EQ(ops[2].mode, PYPTO_CMP_EQ);
  EXPECT_TRUE(ops[2].ok);
  EXPECT_FALSE(ops[3].ok);
  EXPECT_EQ(ops[4].kind, CommOpKind::kBarrier);
  for (const CommOp& op : ops) {
    EXPECT_EQ(op.task_id, 7);
    EXPECT_EQ(op.core_id, 2);
    EXPECT_LE(op.start_ns, op.end_ns);
  }
  EXPECT_LE(ops[0].end_ns, ops[1].start_ns);
  const Json j = comm_ops_json(log, comm_windows(ws), R());
  EXPECT_EQ(j["ops"][1]["window"], "flag");
  EXPECT_EQ(j["ops"][1]["cell"], 1);  // byte 4 of an i32 window
  EXPECT_EQ(j["ops"][1]["op"], "set");
  EXPECT_EQ(j["ops"][2]["cmp"], "eq");
  EXPECT_EQ(j["dropped"], 0);
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
}

TEST(Comm, GetEveryPeer) {
  constexpr int kN = 300;
  WindowSet ws(session(), {{"data", kN * 8, DType::kI64, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  auto* mine = static_cast<int64_t*>(k.ctx.windows[0].local);
  for (int i = 0; i < kN; ++i) mine[i] = (int64_t{R()} << 40) + i;
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  for (int p = 0; p < W(); ++p) {
    std::vector<int64_t> buf(kN - 10);
    // An unaligned, partial range on purpose.
    ASSERT_EQ(api->get(k.c(), 0, p, 80, buf.data(), (kN - 10) * 8), 0) << k.errors();
    for (int i = 0; i < kN - 10; ++i) ASSERT_EQ(buf[i], (int64_t{p} << 40) + i + 10);
    int64_t one = 0;
    ASSERT_EQ(api->remote_load(k.c(), 0, p, 8 * 7, &one, 8), 0) << k.errors();
    EXPECT_EQ(one, (int64_t{p} << 40) + 7);
  }
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
}

// Every dtype with an atomic add, from every rank into rank 0, several times.
TEST(Comm, RemoteStoreAddIntoRankZeroIsExact) {
  constexpr int kRounds = 20;
  WindowSet ws(session(), {{"acc", 128, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  const int r = R();
  const int32_t i32[4] = {r + 1, 1, -1, 1000};
  const float f32[2] = {0.5f, static_cast<float>(r + 1)};
  const int64_t i64[2] = {int64_t{1} << 40, r};
  const uint16_t f16[2] = {f32_to_f16(1.0f), f32_to_f16(0.5f)};
  const uint16_t bf16[2] = {f32_to_bf16(1.0f), f32_to_bf16(2.0f)};
  const int8_t i8[2] = {1, -1};
  const int16_t i16[2] = {static_cast<int16_t>(r), 3};
  const uint8_t u8[2] = {1, 2};
  for (int round = 0; round < kRounds; ++round) {
    auto add = [&](uint64_t offset, const void* src, uint64_t count, pypto_dtype dtype) {
      ASSERT_EQ(api->remote_store(k.c(), 0, 0, offset, src, count, dtype, PYPTO_STORE_ADD), 0)
          << k.errors();
    };
    add(0, i32, 4, PYPTO_I32);
    add(16, f32, 2, PYPTO_F32);
    add(24, i64, 2, PYPTO_I64);
    add(40, f16, 2, PYPTO_F16);
    add(44, bf16, 2, PYPTO_BF16);
    add(48, i8, 2, PYPTO_I8);
    add(50, i16, 2, PYPTO_I16);
    add(54, u8, 2, PYPTO_U8);
  }
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  if (R() == 0) {
    const char* base = static_cast<const char*>(k.ctx.windows[0].local);
    auto at = [&](auto* out, uint64_t offset) { std::memcpy(out, base + offset, sizeof(*out)); };
    const int n = W(), sum_r1 = n * (n + 1) / 2, sum_r = n * (n - 1) / 2;
    int32_t i32o[4];
    for (int i = 0; i < 4; ++i) at(&i32o[i], 4 * i);
    EXPECT_EQ(i32o[0], kRounds * sum_r1);
    EXPECT_EQ(i32o[1], kRounds * n);
    EXPECT_EQ(i32o[2], -kRounds * n);
    EXPECT_EQ(i32o[3], kRounds * n * 1000);
    float f0, f1;
    at(&f0, 16);
    at(&f1, 20);
    EXPECT_EQ(f0, 0.5f * kRounds * n);
    EXPECT_EQ(f1, static_cast<float>(kRounds * sum_r1));
    int64_t l0, l1;
    at(&l0, 24);
    at(&l1, 32);
    EXPECT_EQ(l0, (int64_t{1} << 40) * kRounds * n);
    EXPECT_EQ(l1, int64_t{kRounds} * sum_r);
    uint16_t h0, h1, b0, b1;
    at(&h0, 40);
    at(&h1, 42);
    at(&b0, 44);
    at(&b1, 46);
    EXPECT_EQ(f16_to_f32(h0), 1.0f * kRounds * n);
    EXPECT_EQ(f16_to_f32(h1), 0.5f * kRounds * n);
    EXPECT_EQ(bf16_to_f32(b0), 1.0f * kRounds * n);
    EXPECT_EQ(bf16_to_f32(b1), 2.0f * kRounds * n);
    int8_t c0, c1;
    at(&c0, 48);
    at(&c1, 49);
    EXPECT_EQ(c0, static_cast<int8_t>(kRounds * n));
    EXPECT_EQ(c1, static_cast<int8_t>(-kRounds * n));
    int16_t s0, s1;
    at(&s0, 50);
    at(&s1, 52);
    EXPECT_EQ(s0, kRounds * sum_r);
    EXPECT_EQ(s1, 3 * kRounds * n);
    uint8_t u0, u1;
    at(&u0, 54);
    at(&u1, 55);
    EXPECT_EQ(u0, static_cast<uint8_t>(kRounds * n));
    EXPECT_EQ(u1, static_cast<uint8_t>(2 * kRounds * n));
  }
  // remote_store SET is a plain store of count * size bytes.
  const int32_t v[2] = {R() + 7, -R()};
  ASSERT_EQ(api->remote_store(k.c(), 0, (R() + 1) % W(), 64, v, 2, PYPTO_I32, PYPTO_STORE_SET), 0)
      << k.errors();
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  int32_t got[2];
  std::memcpy(got, static_cast<const char*>(k.ctx.windows[0].local) + 64, 8);
  const int prev = (R() + W() - 1) % W();
  EXPECT_EQ(got[0], prev + 7);
  EXPECT_EQ(got[1], -prev);
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
}

TEST(Comm, PeerPointerFollowsThePath) {
  WindowSet ws(session(), {{"data", 64, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  const int next = (R() + 1) % W(), prev = (R() + W() - 1) % W();
  for (int p = 0; p < W(); ++p) {
    void* ptr = api->peer_pointer(k.c(), 0, p);
    if (expected_path() == CommPath::kShm) {
      ASSERT_NE(ptr, nullptr) << k.errors();
      if (p == R()) {
        EXPECT_EQ(ptr, k.ctx.windows[0].local);
      }
    } else {
      EXPECT_EQ(ptr, nullptr);
    }
  }
  EXPECT_EQ(k.error_count(), 0u) << k.errors();
  if (expected_path() == CommPath::kShm) {
    // A plain store through the pointer is a remote store.
    auto* peer = static_cast<int32_t*>(api->peer_pointer(k.c(), 0, next));
    peer[3] = 4242 + R();
    ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
    EXPECT_EQ(static_cast<const int32_t*>(k.ctx.windows[0].local)[3], 4242 + prev);
    ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  }
}

TEST(Comm, WaitComparisons) {
  WindowSet ws(session(), {{"signal", 64, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  CommState short_state(ws, milliseconds(1));
  FakeKernel k(ws, state);
  FakeKernel quick(ws, short_state);
  const auto* api = k.comm();
  const int next = (R() + 1) % W();
  // Make the wait block for real: the peer notifies only after a while.
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_EQ(api->notify(k.c(), 0, next, 4, 5, PYPTO_STORE_SET), 0) << k.errors();
  ASSERT_EQ(api->wait(k.c(), 0, 4, PYPTO_CMP_EQ, 5), 0) << k.errors();
  const struct {
    pypto_cmp cmp;
    int32_t pass, fail;
    const char* name;
  } cases[] = {{PYPTO_CMP_EQ, 5, 4, "eq"}, {PYPTO_CMP_NE, 4, 5, "ne"}, {PYPTO_CMP_GT, 4, 5, "gt"},
               {PYPTO_CMP_GE, 5, 6, "ge"}, {PYPTO_CMP_LT, 6, 5, "lt"}, {PYPTO_CMP_LE, 5, 4, "le"}};
  for (const auto& c : cases) {
    EXPECT_EQ(api->wait(k.c(), 0, 4, c.cmp, c.pass), 0) << c.name << ": " << k.errors();
    EXPECT_EQ(api->wait(quick.c(), 0, 4, c.cmp, c.fail), -1) << c.name;
    EXPECT_THAT(quick.last_error(), HasSubstr(std::string("expected value ") + c.name + " " +
                                              std::to_string(c.fail) + ", last seen 5"));
  }
  // ADD accumulates; lt/le on a decreasing cell.
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  ASSERT_EQ(api->notify(k.c(), 0, next, 4, -7, PYPTO_STORE_ADD), 0) << k.errors();
  ASSERT_EQ(api->wait(k.c(), 0, 4, PYPTO_CMP_LT, 0), 0) << k.errors();
  EXPECT_EQ(ws.read_cell(0, 4), -2);
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
}

TEST(Comm, WaitDeadlineNamesEverything) {
  WindowSet ws(session(), {{"signal", 64, DType::kI32, {}}});
  CommState state(ws, milliseconds(300));
  FakeKernel k(ws, state);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(k.comm()->wait(k.c(), 0, 8, PYPTO_CMP_GE, 1), -1);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(3000));
  const std::string prefix = "rank " + std::to_string(R()) +
                             ": wait on window 'signal' cell 2 (byte 8): expected value ge 1, "
                             "last seen 0 after 0.";
  EXPECT_THAT(k.last_error(), HasSubstr(prefix));
  EXPECT_THAT(k.last_error(), HasSubstr(" s (--wait-timeout); a peer never notified it"));
  EXPECT_THAT(k.last_error(), Not(HasSubstr(" (at ")));
  // The pto_runtime.h wrapper names its caller's line before the wait; the
  // error carries it, and only for the call it was set for.
  k.comm()->set_call_site(k.c(), "kernels/aiv/step.cpp", 42);
  EXPECT_EQ(k.comm()->wait(k.c(), 0, 8, PYPTO_CMP_GE, 1), -1);
  EXPECT_THAT(k.last_error(), HasSubstr(" (at kernels/aiv/step.cpp:42)"));
  EXPECT_EQ(k.comm()->wait(k.c(), 0, 8, PYPTO_CMP_GE, 1), -1);
  EXPECT_THAT(k.last_error(), Not(HasSubstr(" (at ")));
  if (R() == 0) std::printf("[rank 0] %s\n", k.last_error().c_str());
  CommState long_state(ws, kTimeout);
  FakeKernel sync(ws, long_state);
  ASSERT_EQ(sync.comm()->barrier(sync.c()), 0) << sync.errors();
}

TEST(Comm, BoundsAndArgumentErrors) {
  const int last = W() - 1;
  std::vector<int> tail;
  for (int r = 1; r < W(); ++r) tail.push_back(r);
  WindowSet ws(session(), {{"data", 64, DType::kF32, {}},
                           {"sig", 16, DType::kI32, {}},
                           {"tail", 32, DType::kI32, tail}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  const auto* c = k.c();
  char buf[128] = {};
  auto fails = [&](int rc, const std::string& text) {
    EXPECT_EQ(rc, -1) << text;
    EXPECT_THAT(k.last_error(), HasSubstr(text));
  };
  const std::string me = "rank " + std::to_string(R()) + ": ";
  fails(api->put(c, 7, 0, 0, buf, 4),
        me + "put: window 7 does not exist; this run has 3 window(s)");
  fails(api->get(c, -1, 0, 0, buf, 4), "window -1 does not exist");
  fails(api->remote_load(c, 0, W(), 0, buf, 4),
        "remote_load on window 0 'data': rank " + std::to_string(W()) + " is out of range");
  fails(api->get(c, 0, -1, 0, buf, 4), "rank -1 is out of range");
  fails(api->put(c, 0, 0, 60, buf, 8),
        "put on window 0 'data' of rank 0: byte offset 60 + 8 bytes runs past the window's 64 "
        "bytes");
  fails(api->get(c, 0, 0, 65, buf, 0), "byte offset 65 + 0 bytes");
  fails(api->get(c, 0, 0, UINT64_MAX, buf, 2), "runs past");
  fails(api->remote_store(c, 0, 0, 56, buf, 3, PYPTO_F32, PYPTO_STORE_SET), "runs past");
  fails(api->notify(c, 1, 0, 2, 1, PYPTO_STORE_SET), "byte offset 2 is not a multiple of 4");
  fails(api->notify(c, 1, 0, 16, 1, PYPTO_STORE_SET), "byte offset 16 + 4 bytes");
  fails(api->notify(c, 1, 0, 0, 1, 9), "op 9 is neither");
  fails(api->wait(c, 1, 6, PYPTO_CMP_EQ, 0), "byte offset 6 is not a multiple of 4");
  fails(api->wait(c, 1, 0, 17, 0), "comparison 17 is not one of");
  fails(api->remote_store(c, 0, 0, 2, buf, 1, PYPTO_F32, PYPTO_STORE_ADD),
        "byte offset 2 is not a multiple of 4");
  fails(api->remote_store(c, 0, 0, 0, buf, 1, PYPTO_BOOL, PYPTO_STORE_ADD),
        "atomic add is not defined for bool");
  fails(api->remote_store(c, 0, 0, 0, buf, 1, 42, PYPTO_STORE_SET),
        "dtype 42 is not a pypto_dtype");
  fails(api->remote_store(c, 0, 0, 0, buf, 1, PYPTO_I32, 5), "op 5 is neither");
  fails(api->put(c, 0, 0, 0, nullptr, 4), "the source pointer is NULL");
  EXPECT_EQ(api->peer_pointer(c, 9, 0), nullptr);
  EXPECT_THAT(k.last_error(), HasSubstr("peer_pointer: window 9 does not exist"));
  // Subset window: members 1..W-1; split communicator ranks differ from world ranks.
  const int tail_id = 2;
  if (R() == 0) {
    EXPECT_EQ(k.ctx.windows[tail_id].local, nullptr);
    EXPECT_EQ(k.ctx.windows[tail_id].bytes, 0u);
    fails(api->put(c, tail_id, 1, 0, buf, 4),
          "this rank is not a member of the window (members " +
              (W() == 2 ? std::string("1") : "1-" + std::to_string(last)));
    fails(api->wait(c, tail_id, 0, PYPTO_CMP_EQ, 0), "this rank is not a member");
  } else {
    ASSERT_NE(k.ctx.windows[tail_id].local, nullptr);
    fails(api->put(c, tail_id, 0, 0, buf, 4), "rank 0 is not a member of the window");
    const int next = R() == last ? 1 : R() + 1;
    const int prev = R() == 1 ? last : R() - 1;
    const int32_t v = 100 + R();
    ASSERT_EQ(api->put(c, tail_id, next, 8, &v, 4), 0) << k.errors();
    ASSERT_EQ(api->notify(c, tail_id, next, 0, 1, PYPTO_STORE_ADD), 0) << k.errors();
    ASSERT_EQ(api->wait(c, tail_id, 0, PYPTO_CMP_EQ, 1), 0) << k.errors();
    int32_t got = 0;
    std::memcpy(&got, static_cast<const char*>(k.ctx.windows[tail_id].local) + 8, 4);
    EXPECT_EQ(got, 100 + prev);
    EXPECT_EQ(api->peer_pointer(c, tail_id, next) != nullptr, ws.path(tail_id) == CommPath::kShm)
        << k.errors();
  }
  // No state: an L3 kernel context missing its comm_state.
  pypto_kernel_ctx bare = k.ctx;
  bare.comm_state = nullptr;
  fails(api->barrier(&bare), "ctx->comm_state is NULL");
  // Errors leave the set usable.
  ASSERT_EQ(api->barrier(c), 0) << k.errors();
}

TEST(Comm, ResetZeroesEveryCopy) {
  WindowSet ws(session(), {{"a", 40, DType::kU8, {}}, {"b", 24, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  const int next = (R() + 1) % W();
  std::vector<unsigned char> ones(40, 0xab);
  ASSERT_EQ(api->put(k.c(), 0, next, 0, ones.data(), 20), 0) << k.errors();
  ASSERT_EQ(api->notify(k.c(), 1, next, 20, 9, PYPTO_STORE_SET), 0) << k.errors();
  ASSERT_EQ(api->wait(k.c(), 1, 20, PYPTO_CMP_EQ, 9), 0) << k.errors();
  ws.reset();
  for (int id = 0; id < 2; ++id) {
    const auto* bytes = static_cast<const unsigned char*>(k.ctx.windows[id].local);
    for (uint64_t i = 0; i < k.ctx.windows[id].bytes; ++i) ASSERT_EQ(bytes[i], 0) << id << "@" << i;
    std::vector<unsigned char> theirs(k.ctx.windows[id].bytes, 0xff);
    ASSERT_EQ(api->get(k.c(), id, next, 0, theirs.data(), theirs.size()), 0) << k.errors();
    for (size_t i = 0; i < theirs.size(); ++i) ASSERT_EQ(theirs[i], 0) << id << "@" << i;
  }
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();  // all checked before anyone stores again
  // One window only.
  ASSERT_EQ(api->notify(k.c(), 1, next, 0, 3, PYPTO_STORE_SET), 0) << k.errors();
  ASSERT_EQ(api->put(k.c(), 0, next, 0, ones.data(), 4), 0) << k.errors();
  ASSERT_EQ(api->wait(k.c(), 1, 0, PYPTO_CMP_EQ, 3), 0) << k.errors();
  ws.reset(1);
  EXPECT_EQ(ws.read_cell(1, 0), 0);
  EXPECT_EQ(static_cast<const unsigned char*>(k.ctx.windows[0].local)[0], 0xab);
}

// Two core threads per rank add into every rank's window at once, and wait
// on their own cell at once: atomicity across ranks and threads, and the
// thread level (concurrent MPI calls, or the serializing mutex below it).
TEST(Comm, ConcurrentAtomicAddsFromTwoThreadsPerRank) {
  // Across nodes every add is a network round trip that needs the target's
  // progress: fewer of them, the same interleaving.
  const int kAdds = session().spans_nodes() ? 12 : 100;
  const int kHalfAdds = kAdds / 4;
  constexpr int kThreads = 2;
  WindowSet ws(session(), {{"acc", 64, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  const int total = kThreads * kAdds * W();
  std::atomic<int> failures{0};
  auto core = [&](int t) {
    const int32_t one = 1;
    const float onef = 1.0f;
    const uint16_t oneh = f32_to_f16(1.0f);
    for (int i = 0; i < kAdds; ++i)
      for (int step = 0; step < W(); ++step) {
        const int p = (R() + step + t) % W();
        int rc = api->remote_store(k.c(), 0, p, 0, &one, 1, PYPTO_I32, PYPTO_STORE_ADD);
        rc |= api->remote_store(k.c(), 0, p, 4, &onef, 1, PYPTO_F32, PYPTO_STORE_ADD);
        if (i < kHalfAdds)
          rc |= api->remote_store(k.c(), 0, p, 8 + 2 * t, &oneh, 1, PYPTO_F16, PYPTO_STORE_ADD);
        rc |= api->notify(k.c(), 0, p, 12, 1, PYPTO_STORE_ADD);
        if (rc != 0) failures++;
      }
    if (api->wait(k.c(), 0, 12, PYPTO_CMP_GE, total) != 0) failures++;
  };
  std::thread a(core, 0), b(core, 1);
  a.join();
  b.join();
  ASSERT_EQ(failures.load(), 0) << k.errors();
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
  const char* base = static_cast<const char*>(k.ctx.windows[0].local);
  int32_t count;
  float sum;
  uint16_t h0, h1;
  std::memcpy(&count, base, 4);
  std::memcpy(&sum, base + 4, 4);
  std::memcpy(&h0, base + 8, 2);
  std::memcpy(&h1, base + 10, 2);
  EXPECT_EQ(count, total);
  EXPECT_EQ(sum, static_cast<float>(total));
  EXPECT_EQ(f16_to_f32(h0), static_cast<float>(kHalfAdds * W()));
  EXPECT_EQ(f16_to_f32(h1), static_cast<float>(kHalfAdds * W()));
  EXPECT_EQ(ws.read_cell(0, 12), total);
  ASSERT_EQ(api->barrier(k.c()), 0) << k.errors();
}

TEST(Comm, SecondBarrierOnOneRankIsRefused) {
  WindowSet ws(session(), {{"sig", 16, DType::kI32, {}}});
  CommState state(ws, kTimeout);
  FakeKernel k(ws, state);
  const auto* api = k.comm();
  if (R() == 0) {
    // Two tasks of rank 0 call barrier at once while the other ranks come
    // 600 ms later: whichever is second finds the first still inside.
    int rc[2] = {1, 1};
    std::thread a([&] { rc[0] = api->barrier(k.c()); });
    std::thread b([&] { rc[1] = api->barrier(k.c()); });
    a.join();
    b.join();
    EXPECT_EQ(rc[0] + rc[1], -1) << k.errors();
    EXPECT_THAT(k.last_error(), HasSubstr("another task of this rank is already in barrier"));
  } else {
    std::this_thread::sleep_for(milliseconds(600));
    EXPECT_EQ(api->barrier(k.c()), 0) << k.errors();
  }
}

// ---- harness ----

// Ranks other than 0 print only failures, prefixed with their rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", R(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }
};

// After every test, every rank learns whether any rank failed it, so the
// failing rank is named even when only another rank's output is read.
class CrossRankResult : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const int mine = info.result()->Failed() ? 1 : 0;
    std::vector<int> all(W());
    MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, session().world_comm());
    if (R() != 0) return;
    std::string failed;
    for (int r = 0; r < W(); ++r)
      if (all[r]) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
    if (!failed.empty())
      std::fprintf(stderr, "[rank 0] %s.%s failed on rank(s) %s\n", info.test_suite_name(),
                   info.name(), failed.c_str());
  }
};

}  // namespace
}  // namespace pypto::rank

int main(int argc, char** argv) {
  using namespace pypto::rank;
  ::testing::InitGoogleTest(&argc, argv);
  MpiSession::Options options;
  int watchdog_seconds = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--watchdog=", 0) == 0) watchdog_seconds = std::atoi(arg.c_str() + 11);
  }
  auto session = std::make_unique<MpiSession>(options);
  g_session = session.get();

  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (session->rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter);
  }
  listeners.Append(new CrossRankResult);

  // A rank that failed out of a collective leaves its peers inside it; no
  // deadline inside MPI covers that, so the whole job is cut off here.
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(watchdog_seconds), [&] { return finished; })) {
      std::fprintf(stderr, "[rank %d] mpi_comm_test: no result after %d s; aborting the job\n",
                   session->rank(), watchdog_seconds);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  });

  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, session->world_comm());
  {
    std::lock_guard lock(mu);
    finished = true;
  }
  cv.notify_all();
  watchdog.join();
  if (session->rank() == 0 && any_failed)
    std::fprintf(stderr, "mpi_comm_test: failed on at least one rank\n");
  session.reset();
  return any_failed ? 1 : 0;
}
