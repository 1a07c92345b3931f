#include "rank_agent/window_set.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "common/rank_list.h"
#include "pypto/error.h"
#include "rank_agent/atomics.h"
#include "rank_agent/backoff.h"

namespace pypto::rank {

// Memory model (MPI-3.1 §11.4, §11.7), which decides how a wait sees a
// peer's update and how a peer's get sees this rank's plain stores:
//
// shm path. Every member maps every copy; all remote operations are CPU
// loads/stores and lock-free __atomic operations on coherent shared memory,
// which are address-free, so the C++ memory model holds across processes.
// notify is a seq_cst atomic store/add preceded by a full fence (release of
// earlier plain stores, memcpy puts included); wait polls with acquire
// loads. No MPI call is involved, so the thread level does not matter.
//
// rma path. A window may report MPI_WIN_SEPARATE (public and private copies
// distinct) or MPI_WIN_UNIFIED (one copy, but visibility only "eventually"
// without synchronization). Choices that are correct under both:
//  - wait polls with MPI_Fetch_and_op(MPI_NO_OP) on its own rank + flush.
//    That reads the public copy atomically with respect to the peers'
//    MPI_Accumulate on the same cell (same predefined type, MPI_INT32_T:
//    accumulate operations are element-wise atomic).
//    A plain load would need MPI_Win_sync around it and is not atomic with
//    respect to accumulate in the standard's terms. Each poll also probes
//    (MPI_Iprobe) so the progress engine applies peers' emulated atomics.
//  - A peer's put/accumulate is flushed (complete at the target) before its
//    notify is issued; once the wait sees the notify, MPI_Win_sync on every
//    window makes that data visible to this rank's plain loads (separate
//    model: public -> private copy; unified: a memory barrier).
//  - Before notify and barrier, MPI_Win_sync on every window publishes this
//    rank's own plain stores (private -> public), so a peer's MPI_Get after
//    the notify reads them. All windows, not just the signal's, because the
//    data usually lives in another window than the signal cell.
// MPI_Win_sync needs an access epoch: every window (both paths) sits in one
// MPI_Win_lock_all(MPI_MODE_NOCHECK) epoch from creation to destruction.

namespace {

constexpr uint64_t kAllocAlign = 64;        // copies start cache-line aligned
constexpr uint64_t kMaxChunk = 1ull << 30;  // MPI counts are int
const char* const kCommModes = "auto, shm, rma";

std::string seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

uint64_t fnv1a(uint64_t hash, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

uint64_t specs_hash(const std::vector<WindowSpec>& specs, CommMode mode) {
  uint64_t h = 0xcbf29ce484222325ull;
  const int m = static_cast<int>(mode);
  h = fnv1a(h, &m, sizeof(m));
  for (const auto& s : specs) {
    h = fnv1a(h, s.name.data(), s.name.size() + 1);  // with the terminator: "ab","c" != "a","bc"
    h = fnv1a(h, &s.bytes, sizeof(s.bytes));
    const int d = static_cast<int>(s.dtype);
    h = fnv1a(h, &d, sizeof(d));
    const size_t n = s.members.size();
    h = fnv1a(h, &n, sizeof(n));
    h = fnv1a(h, s.members.data(), n * sizeof(int));
  }
  return h;
}

MPI_Datatype accumulate_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kI8:
      return MPI_INT8_T;
    case DType::kI16:
      return MPI_INT16_T;
    case DType::kI32:
      return MPI_INT32_T;
    case DType::kI64:
      return MPI_INT64_T;
    case DType::kU8:
      return MPI_UINT8_T;
    default:
      return MPI_DATATYPE_NULL;  // f16/bf16 (CAS emulation), bool (refused)
  }
}

// An MPI failure inside a data-plane call.
[[noreturn]] void throw_mpi(const std::string& where, const char* fn, int rc) {
  throw InfraError(where + ": " + fn + " failed: " + mpi_error_string(rc));
}

}  // namespace

const char* comm_path_name(CommPath path) { return path == CommPath::kShm ? "shm" : "rma"; }

const char* comm_mode_name(CommMode mode) {
  switch (mode) {
    case CommMode::kAuto:
      return "auto";
    case CommMode::kShm:
      return "shm";
    case CommMode::kRma:
      return "rma";
  }
  return "auto";
}

CommMode parse_comm_mode(std::string_view value) {
  if (value.empty() || value == "auto") return CommMode::kAuto;
  if (value == "shm") return CommMode::kShm;
  if (value == "rma") return CommMode::kRma;
  throw UsageError("PYPTO_COMM='" + std::string(value) +
                   "' is not a communication mode; use one of " + kCommModes +
                   " (rma forces MPI RMA even when the ranks share a node)");
}

CommMode comm_mode_from_env() {
  const char* value = std::getenv("PYPTO_COMM");
  return parse_comm_mode(value ? value : "");
}

WindowSet::WindowSet(const MpiSession& session, std::vector<WindowSpec> specs)
    : WindowSet(session, std::move(specs), Options{}) {}

WindowSet::WindowSet(const MpiSession& session, std::vector<WindowSpec> specs,
                     const Options& options)
    : session_(session), options_(options) {
  const CommMode mode = options.mode ? *options.mode : comm_mode_from_env();
  const int world = session.world();
  const MPI_Comm comm = session.world_comm();

  // Creation is collective, so the same specs everywhere is a precondition;
  // a mismatch would otherwise hang or pair the wrong windows. Checked
  // before any validation so every rank takes the same branch.
  const uint64_t h = specs_hash(specs, mode);
  uint64_t mine[2] = {h, ~h};
  uint64_t most[2] = {0, 0};
  check_mpi(MPI_Allreduce(mine, most, 2, MPI_UINT64_T, MPI_MAX, comm),
            "rank " + std::to_string(rank()) + ": MPI_Allreduce(window specs)");
  if (most[0] != h || most[1] != ~h)
    throw InfraError("rank " + std::to_string(rank()) +
                     ": window specs or PYPTO_COMM differ between ranks (this rank has " +
                     std::to_string(specs.size()) + " windows, PYPTO_COMM=" + comm_mode_name(mode) +
                     "); every rank must create the same windows in the same order with the "
                     "same PYPTO_COMM");

  for (size_t i = 0; i < specs.size(); ++i) {
    WindowSpec& s = specs[i];
    const std::string what = "window " + std::to_string(i) + " '" + s.name + "'";
    if (s.name.empty()) throw ProgramError("window " + std::to_string(i) + " has no name");
    for (size_t j = 0; j < i; ++j)
      if (specs[j].name == s.name)
        throw ProgramError(what + ": the name is used by window " + std::to_string(j) + " too");
    if (s.bytes == 0) throw ProgramError(what + " has 0 bytes");
    if (s.members.empty())
      for (int r = 0; r < world; ++r) s.members.push_back(r);
    std::sort(s.members.begin(), s.members.end());
    for (size_t k = 0; k < s.members.size(); ++k) {
      const int m = s.members[k];
      if (m < 0 || m >= world)
        throw ProgramError(what + ": member rank " + std::to_string(m) + " is outside the world (" +
                           std::to_string(world) + " ranks)");
      if (k > 0 && s.members[k - 1] == m)
        throw ProgramError(what + ": member rank " + std::to_string(m) + " is listed twice");
    }
  }

  // Which node each world rank is on (the smallest world rank of its node),
  // so every rank, members or not, reaches the same path decision.
  const int my_rank = session.rank();
  int node_id = 0;
  check_mpi(MPI_Allreduce(&my_rank, &node_id, 1, MPI_INT, MPI_MIN, session.node_comm()),
            "MPI_Allreduce(node id)");
  std::vector<int> node_of(world);
  check_mpi(MPI_Allgather(&node_id, 1, MPI_INT, node_of.data(), 1, MPI_INT, comm),
            "MPI_Allgather(node ids)");

  windows_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    Window& w = windows_[i];
    w.spec = std::move(specs[i]);
    w.member = std::binary_search(w.spec.members.begin(), w.spec.members.end(), rank());
    bool one_node = true;
    for (int m : w.spec.members) one_node = one_node && node_of[m] == node_of[w.spec.members[0]];
    if (mode == CommMode::kShm && !one_node)
      throw InfraError("window '" + w.spec.name + "': PYPTO_COMM=shm, but its member ranks " +
                       rank_list(w.spec.members) +
                       " do not share a node; unset PYPTO_COMM (auto) or set it to rma");
    w.path = (one_node && mode != CommMode::kRma) ? CommPath::kShm : CommPath::kRma;
  }

  // rma windows of one member set are carved out of one MPI window: across
  // nodes each MPI_Win_allocate costs ~0.3 s of osc/ucx wire-up
  // (docs/performance.md, "Across two hosts"). Every rank computes the same
  // layout, so displacements agree.
  std::vector<size_t> owner_of(windows_.size());
  std::vector<uint64_t> mpi_bytes(windows_.size(), 0);
  for (size_t i = 0; i < windows_.size(); ++i) {
    Window& w = windows_[i];
    owner_of[i] = i;
    if (w.path != CommPath::kRma) continue;
    for (size_t j = 0; j < i; ++j)
      if (windows_[j].path == CommPath::kRma && owner_of[j] == j &&
          windows_[j].spec.members == w.spec.members) {
        owner_of[i] = j;
        break;
      }
    const uint64_t aligned = (w.spec.bytes + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
    w.disp = mpi_bytes[owner_of[i]];
    w.owns_win = owner_of[i] == i;
    mpi_bytes[owner_of[i]] += aligned;
  }

  check_mpi(MPI_Comm_dup(comm, &barrier_comm_), "MPI_Comm_dup(barrier)");
  MPI_Comm_set_errhandler(barrier_comm_, MPI_ERRORS_RETURN);
  // From here on an MPI failure leaves peers inside collectives; the agent
  // fails the run, so what was allocated is left to process exit.
  std::vector<std::vector<int>> member_sets;
  for (size_t i = 0; i < windows_.size(); ++i) {
    Window& w = windows_[i];
    // One communicator per distinct member set, split from the world in the
    // same order on every rank; non-members get MPI_COMM_NULL and skip the
    // window's allocation entirely (they hold no copy at all).
    auto it = std::find(member_sets.begin(), member_sets.end(), w.spec.members);
    if (it == member_sets.end()) {
      MPI_Comm sub = MPI_COMM_NULL;
      check_mpi(MPI_Comm_split(comm, w.member ? 0 : MPI_UNDEFINED, rank(), &sub),
                "MPI_Comm_split(window '" + w.spec.name + "')");
      if (sub != MPI_COMM_NULL) MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
      member_sets.push_back(w.spec.members);
      comms_.push_back(sub);
      w.comm = sub;
    } else {
      w.comm = comms_[it - member_sets.begin()];
    }
    w.comm_rank.assign(world, -1);
    for (size_t k = 0; k < w.spec.members.size(); ++k)
      w.comm_rank[w.spec.members[k]] = static_cast<int>(k);  // split keyed by world rank
    w.peer.assign(world, nullptr);
    if (!w.member) continue;
    if (w.path == CommPath::kShm) allocate_shared(w);
    if (w.path == CommPath::kRma && !w.owns_win) {
      const Window& owner = windows_[owner_of[i]];
      w.win = owner.win;
      w.local = static_cast<char*>(owner.local) + w.disp;
      w.model = owner.model;
    } else {
      if (w.path == CommPath::kRma) allocate_rma(w, mpi_bytes[i]);
      check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win),
                "MPI_Win_lock_all(window '" + w.spec.name + "')");
    }
    zero(w);
    has_rma_ = has_rma_ || w.path == CommPath::kRma;
    log::debug("window {} '{}': {} bytes, members {}, path {}, memory model {}", i, w.spec.name,
               w.spec.bytes, rank_list(w.spec.members), comm_path_name(w.path),
               w.model == MPI_WIN_UNIFIED ? "unified" : "separate");
  }
  for (size_t i = 0; i < windows_.size(); ++i) {
    const Window& w = windows_[i];
    kernel_windows_.push_back(
        pypto_window{w.spec.name.c_str(), w.local, w.member ? w.spec.bytes : 0,
                     static_cast<int32_t>(w.spec.dtype), static_cast<int32_t>(i)});
  }
  // No peer may store into a copy before its owner has zeroed it.
  collective_barrier("window creation");
  if (has_rma_) start_progress();
}

// Where the transport has no network atomics or RDMA (Open MPI osc/ucx over
// TCP, osc/pt2pt), a peer's put, accumulate or flush to this rank completes
// only when this rank's MPI progress engine runs. The core threads run it in
// every wait and barrier poll, but a rank that is computing, or idle between
// dispatches, would leave the peer blocked in MPI_Win_flush (a run across
// hosts hung exactly so). This thread probes at a fixed, short interval; it
// sleeps in between, so oversubscribed ranks lose little CPU to it.
void WindowSet::start_progress() {
  progress_ = std::thread([this] {
    constexpr std::chrono::microseconds kProgressInterval{500};
    std::unique_lock<std::mutex> lock(progress_mu_);
    while (!progress_cv_.wait_for(lock, kProgressInterval, [this] { return progress_stop_; })) {
      auto mpi = session_.lock();
      int pending = 0;
      // A failure here surfaces in the next comm call of a core thread.
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, barrier_comm_, &pending, MPI_STATUS_IGNORE);
    }
  });
}

void WindowSet::stop_progress() {
  if (!progress_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(progress_mu_);
    progress_stop_ = true;
  }
  progress_cv_.notify_all();
  progress_.join();
}

void WindowSet::allocate_shared(Window& w) {
  MPI_Info info;
  MPI_Info_create(&info);
  // Each copy in its own pages: no false sharing between ranks' copies, and
  // every copy starts page aligned whatever the sizes.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  const MPI_Aint size =
      static_cast<MPI_Aint>((w.spec.bytes + kAllocAlign - 1) / kAllocAlign * kAllocAlign);
  void* base = nullptr;
  const int rc = MPI_Win_allocate_shared(size, 1, info, w.comm, &base, &w.win);
  MPI_Info_free(&info);
  check_mpi(rc, "MPI_Win_allocate_shared(window '" + w.spec.name + "', " +
                    std::to_string(w.spec.bytes) + " bytes)");
  MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN);
  w.local = base;
  for (int m : w.spec.members) {
    MPI_Aint peer_size = 0;
    int disp_unit = 0;
    void* peer = nullptr;
    check_mpi(MPI_Win_shared_query(w.win, w.comm_rank[m], &peer_size, &disp_unit, &peer),
              "MPI_Win_shared_query(window '" + w.spec.name + "', rank " + std::to_string(m) + ")");
    if (peer == nullptr || reinterpret_cast<uintptr_t>(peer) % 8 != 0)
      throw InfraError("window '" + w.spec.name + "': MPI_Win_shared_query gave rank " +
                       std::to_string(m) + "'s copy an unusable address");
    w.peer[m] = static_cast<char*>(peer);
  }
  int* model = nullptr;
  int flag = 0;
  MPI_Win_get_attr(w.win, MPI_WIN_MODEL, &model, &flag);
  w.model = flag ? *model : MPI_WIN_SEPARATE;
  if (w.model != MPI_WIN_UNIFIED) {
    // Plain loads and stores through peer pointers are only meaningful when
    // the copies are the memory itself. Every member sees the same
    // attribute, so every member falls back together.
    log::warn(
        "window '{}': the shared-memory window reports the separate memory model; using "
        "the RMA path instead",
        w.spec.name);
    MPI_Win_free(&w.win);
    std::fill(w.peer.begin(), w.peer.end(), nullptr);
    w.path = CommPath::kRma;
    allocate_rma(w, w.spec.bytes);
  }
}

void WindowSet::allocate_rma(Window& w, uint64_t bytes) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "same_size", "true");
  MPI_Info_set(info, "same_disp_unit", "true");
  // Every operation is flushed before its call returns, so MPI need not
  // order one origin's accumulates for us.
  MPI_Info_set(info, "accumulate_ordering", "none");
  const MPI_Aint size =
      static_cast<MPI_Aint>((bytes + kAllocAlign - 1) / kAllocAlign * kAllocAlign);
  void* base = nullptr;
  const int rc = MPI_Win_allocate(size, 1, info, w.comm, &base, &w.win);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) {
    // Open MPI 4.1 over TCP between nodes: osc/rdma cannot make the window and
    // osc/pt2pt refuses MPI_THREAD_MULTIPLE; rank_agent/one_sided_env.h picks
    // osc/ucx unless the user set OMPI_MCA_osc. Say what to set.
    const char* osc = std::getenv("OMPI_MCA_osc");
    std::string advice;
    if (osc != nullptr && *osc != '\0')
      advice = std::string(". OMPI_MCA_osc=") + osc +
               " is set: unset it (across nodes the agents then use osc/ucx), or, with "
               "osc/pt2pt, also set PYPTO_MPI_THREAD=serialized (pt2pt refuses "
               "MPI_THREAD_MULTIPLE)";
    else if (session_.spans_nodes())
      advice = ". Across nodes the agents ask Open MPI for osc/ucx (UCX over TCP); if this "
               "Open MPI has no UCX, set OMPI_MCA_osc=pt2pt and PYPTO_MPI_THREAD=serialized";
    else
      advice = ". If MPI printed that its one-sided component does not support "
               "MPI_THREAD_MULTIPLE, run with PYPTO_MPI_THREAD=serialized";
    throw InfraError("MPI_Win_allocate(window '" + w.spec.name + "', " + std::to_string(bytes) +
                     " bytes): " + mpi_error_string(rc) + advice);
  }
  check_mpi(rc, "MPI_Win_allocate(window '" + w.spec.name + "', " + std::to_string(bytes) +
                    " bytes)");
  MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN);
  w.local = base;
  int* model = nullptr;
  int flag = 0;
  MPI_Win_get_attr(w.win, MPI_WIN_MODEL, &model, &flag);
  w.model = flag ? *model : MPI_WIN_SEPARATE;
}

void WindowSet::zero(Window& w, size_t from) {
  if (from < w.spec.bytes)
    std::memset(static_cast<std::byte*>(w.local) + from, 0, w.spec.bytes - from);
  if (w.path == CommPath::kRma) {
    auto lock = session_.lock();
    check_mpi(MPI_Win_sync(w.win), "MPI_Win_sync(window '" + w.spec.name + "')");
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

WindowSet::~WindowSet() {
  stop_progress();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // too late to free anything; the OS reclaims it
  for (Window& w : windows_) {
    if (w.win == MPI_WIN_NULL || !w.owns_win) continue;
    MPI_Win_unlock_all(w.win);
    MPI_Win_free(&w.win);  // collective over the members
  }
  for (MPI_Comm& c : comms_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  if (barrier_comm_ != MPI_COMM_NULL) MPI_Comm_free(&barrier_comm_);
}

bool WindowSet::is_member(int id, int world_rank) const {
  const Window& w = windows_.at(id);
  return world_rank >= 0 && world_rank < world() && w.comm_rank[world_rank] >= 0;
}

std::optional<int> WindowSet::find(std::string_view name) const {
  for (size_t i = 0; i < windows_.size(); ++i)
    if (windows_[i].spec.name == name) return static_cast<int>(i);
  return std::nullopt;
}

std::string WindowSet::where(const char* call) const {
  return "rank " + std::to_string(rank()) + ": " + call;
}

const WindowSet::Window& WindowSet::checked(const char* call, int id) const {
  if (id >= 0 && id < size()) return windows_[id];
  std::string known;
  for (size_t i = 0; i < windows_.size(); ++i)
    known += (i ? ", " : "") + std::to_string(i) + " '" + windows_[i].spec.name + "'";
  throw ProgramError(where(call) + ": window " + std::to_string(id) +
                     " does not exist; this run has " + std::to_string(size()) + " window(s)" +
                     (known.empty() ? "" : ": " + known));
}

int WindowSet::checked_peer(const char* call, const Window& w, int id, int peer) const {
  // Messages are built only on failure: these checks run on every call.
  auto at = [&] {
    return where(call) + " on window " + std::to_string(id) + " '" + w.spec.name + "'";
  };
  if (peer < 0 || peer >= world())
    throw ProgramError(at() + ": rank " + std::to_string(peer) + " is out of range (world of " +
                       std::to_string(world()) + " ranks)");
  if (!w.member)
    throw ProgramError(at() + ": this rank is not a member of the window (members " +
                       rank_list(w.spec.members) + ")");
  if (w.comm_rank[peer] < 0)
    throw ProgramError(at() + ": rank " + std::to_string(peer) +
                       " is not a member of the window (members " + rank_list(w.spec.members) +
                       ")");
  return w.comm_rank[peer];
}

void WindowSet::check_range(const char* call, const Window& w, int id, int peer, uint64_t offset,
                            uint64_t bytes, uint64_t align) const {
  auto at = [&] {
    return where(call) + " on window " + std::to_string(id) + " '" + w.spec.name + "' of rank " +
           std::to_string(peer);
  };
  if (offset > w.spec.bytes || bytes > w.spec.bytes - offset)
    throw ProgramError(at() + ": byte offset " + std::to_string(offset) + " + " +
                       std::to_string(bytes) + " bytes runs past the window's " +
                       std::to_string(w.spec.bytes) + " bytes");
  if (align > 1 && offset % align != 0) {
    const char* why = align == 4 ? " (int32 signal cells are 4-byte aligned)"
                                 : " (atomic elements are aligned to their size)";
    throw ProgramError(at() + ": byte offset " + std::to_string(offset) + " is not a multiple of " +
                       std::to_string(align) + why);
  }
}

void WindowSet::release() const {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (!has_rma_) return;
  auto lock = session_.lock();
  for (const Window& w : windows_)
    if (w.member && w.path == CommPath::kRma && w.owns_win) {
      const int rc = MPI_Win_sync(w.win);
      if (rc != MPI_SUCCESS) throw_mpi(where("release"), "MPI_Win_sync", rc);
    }
}

void WindowSet::acquire() const {
  if (has_rma_) {
    auto lock = session_.lock();
    for (const Window& w : windows_)
      if (w.member && w.path == CommPath::kRma && w.owns_win) {
        const int rc = MPI_Win_sync(w.win);
        if (rc != MPI_SUCCESS) throw_mpi(where("acquire"), "MPI_Win_sync", rc);
      }
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void WindowSet::load(const char* call, int id, int peer, uint64_t offset, void* dst,
                     uint64_t bytes) const {
  const Window& w = checked(call, id);
  const int target = checked_peer(call, w, id, peer);
  check_range(call, w, id, peer, offset, bytes, 1);
  if (bytes == 0) return;
  if (dst == nullptr) throw ProgramError(where(call) + ": the destination pointer is NULL");
  if (w.path == CommPath::kShm) {
    std::memcpy(dst, w.peer[peer] + offset, bytes);
    return;
  }
  auto lock = session_.lock();
  for (uint64_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
    const int rc = MPI_Get(static_cast<char*>(dst) + done, n, MPI_BYTE, target,
                           static_cast<MPI_Aint>(w.disp + offset + done), n, MPI_BYTE, w.win);
    if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Get", rc);
    done += n;
  }
  const int rc = MPI_Win_flush(target, w.win);
  if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Win_flush", rc);
}

void WindowSet::store(const char* call, int id, int peer, uint64_t offset, const void* src,
                      uint64_t bytes) const {
  const Window& w = checked(call, id);
  const int target = checked_peer(call, w, id, peer);
  check_range(call, w, id, peer, offset, bytes, 1);
  if (bytes == 0) return;
  if (src == nullptr) throw ProgramError(where(call) + ": the source pointer is NULL");
  if (w.path == CommPath::kShm) {
    std::memcpy(w.peer[peer] + offset, src, bytes);
    return;
  }
  auto lock = session_.lock();
  for (uint64_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
    const int rc = MPI_Put(static_cast<const char*>(src) + done, n, MPI_BYTE, target,
                           static_cast<MPI_Aint>(w.disp + offset + done), n, MPI_BYTE, w.win);
    if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Put", rc);
    done += n;
  }
  const int rc = MPI_Win_flush(target, w.win);
  if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Win_flush", rc);
}

void WindowSet::add(const char* call, int id, int peer, uint64_t offset, const void* src,
                    uint64_t count, DType dtype, std::chrono::milliseconds timeout) const {
  const Window& w = checked(call, id);
  const int target = checked_peer(call, w, id, peer);
  if (auto why = atomic_add_unsupported(dtype)) throw ProgramError(where(call) + ": " + *why);
  const uint64_t size = dtype_size(dtype);
  if (count > UINT64_MAX / size)
    throw ProgramError(where(call) + ": " + std::to_string(count) + " elements overflow");
  check_range(call, w, id, peer, offset, count * size, size);
  if (count == 0) return;
  if (src == nullptr) throw ProgramError(where(call) + ": the source pointer is NULL");
  if (w.path == CommPath::kShm) {
    atomic_add(w.peer[peer] + offset, src, count, dtype);
    return;
  }
  auto lock = session_.lock();
  const MPI_Datatype type = accumulate_type(dtype);
  if (type != MPI_DATATYPE_NULL) {
    const uint64_t chunk = kMaxChunk / size;
    for (uint64_t done = 0; done < count;) {
      const int n = static_cast<int>(std::min(chunk, count - done));
      const int rc =
          MPI_Accumulate(static_cast<const char*>(src) + done * size, n, type, target,
                         static_cast<MPI_Aint>(w.disp + offset + done * size), n, type, MPI_SUM,
                         w.win);
      if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Accumulate", rc);
      done += n;
    }
    const int rc = MPI_Win_flush(target, w.win);
    if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Win_flush", rc);
    return;
  }
  // f16/bf16: MPI has no 16-bit float type to accumulate, so each element
  // is a compare-and-swap loop on the aligned 32-bit word holding it
  // (MPI_UINT32_T: networks do 32/64-bit atomics, not always 16-bit ones).
  // The word stays inside the copy: copies are allocated in multiples of
  // kAllocAlign. Atomic with respect to every other f16/bf16 add; a CAS
  // retried under contention backs off, and a transport that never lets it
  // succeed fails the call at the deadline instead of spinning forever.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t add_bits;
    std::memcpy(&add_bits, static_cast<const char*>(src) + i * 2, 2);
    const uint64_t byte = offset + i * 2;
    const MPI_Aint disp = static_cast<MPI_Aint>((w.disp + byte) & ~uint64_t{3});
    const size_t pos = byte & 3;  // 0 or 2: where the element sits in the word
    uint32_t old = 0;
    const uint32_t unused = 0;
    int rc = MPI_Fetch_and_op(&unused, &old, MPI_UINT32_T, target, disp, MPI_NO_OP, w.win);
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush(target, w.win);
    if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Fetch_and_op", rc);
    Backoff backoff;
    for (;;) {
      uint16_t half;
      std::memcpy(&half, reinterpret_cast<const char*>(&old) + pos, 2);
      half = add_f16_bits(half, add_bits, dtype);
      uint32_t next = old;
      std::memcpy(reinterpret_cast<char*>(&next) + pos, &half, 2);
      uint32_t seen = 0;
      rc = MPI_Compare_and_swap(&next, &old, &seen, MPI_UINT32_T, target, disp, w.win);
      if (rc == MPI_SUCCESS) rc = MPI_Win_flush(target, w.win);
      if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Compare_and_swap", rc);
      if (seen == old) break;
      old = seen;
      if (backoff.past_spin() && std::chrono::steady_clock::now() >= deadline)
        throw ProgramError(where(call) + " on window '" + w.spec.name + "' of rank " +
                           std::to_string(peer) + ": the " + dtype_name(dtype) + " add at byte " +
                           std::to_string(byte) +
                           " kept losing its compare-and-swap until the deadline (" +
                           seconds(timeout) + ", --wait-timeout)");
      if (lock.owns_lock()) lock.unlock();  // this rank's other core threads may use MPI meanwhile
      backoff.pause();
      lock = session_.lock();
    }
  }
}

void WindowSet::notify(int id, int peer, uint64_t offset, int32_t value, int32_t op) const {
  const char* call = "notify";
  const Window& w = checked(call, id);
  const int target = checked_peer(call, w, id, peer);
  check_range(call, w, id, peer, offset, 4, 4);
  if (op != PYPTO_STORE_SET && op != PYPTO_STORE_ADD)
    throw ProgramError(where(call) + ": op " + std::to_string(op) +
                       " is neither PYPTO_STORE_SET (0) nor PYPTO_STORE_ADD (1)");
  release();
  if (w.path == CommPath::kShm) {
    auto* cell = reinterpret_cast<int32_t*>(w.peer[peer] + offset);
    if (op == PYPTO_STORE_SET)
      __atomic_store_n(cell, value, __ATOMIC_SEQ_CST);
    else
      __atomic_fetch_add(cell, value, __ATOMIC_SEQ_CST);
    return;
  }
  // MPI_Fetch_and_op, the single-element accumulate: SET is MPI_REPLACE (not
  // MPI_Put), so it stays atomic with respect to concurrent adds and to the
  // waiter's MPI_Fetch_and_op(MPI_NO_OP) on the same cell; transports map it
  // to one network atomic where they can.
  auto lock = session_.lock();
  int32_t previous = 0;
  int rc = MPI_Fetch_and_op(&value, &previous, MPI_INT32_T, target,
                            static_cast<MPI_Aint>(w.disp + offset),
                            op == PYPTO_STORE_SET ? MPI_REPLACE : MPI_SUM, w.win);
  if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Fetch_and_op", rc);
  rc = MPI_Win_flush(target, w.win);
  if (rc != MPI_SUCCESS) throw_mpi(where(call), "MPI_Win_flush", rc);
}

int32_t WindowSet::read_cell(int id, uint64_t offset) const {
  const char* call = "read_cell";
  const Window& w = checked(call, id);
  checked_peer(call, w, id, rank());
  check_range(call, w, id, rank(), offset, 4, 4);
  return read_cell_unchecked(w, offset);
}

int32_t WindowSet::read_cell_unchecked(const Window& w, uint64_t offset) const {
  if (w.path == CommPath::kShm)
    return __atomic_load_n(reinterpret_cast<const int32_t*>(w.peer[rank()] + offset),
                           __ATOMIC_ACQUIRE);
  const int self = w.comm_rank[rank()];
  auto lock = session_.lock();
  int32_t unused = 0;
  int32_t value = 0;
  int rc = MPI_Fetch_and_op(&unused, &value, MPI_INT32_T, self,
                            static_cast<MPI_Aint>(w.disp + offset),
                            MPI_NO_OP, w.win);
  if (rc == MPI_SUCCESS) rc = MPI_Win_flush(self, w.win);
  if (rc != MPI_SUCCESS) throw_mpi(where("wait"), "MPI_Fetch_and_op", rc);
  // Passive-target progress (MPI-3.1 §11.7.3): where the transport has no
  // network atomics (Open MPI osc/ucx over shared memory or TCP, osc/pt2pt),
  // a peer's accumulate is applied by this rank's progress engine, and an
  // operation on our own copy does not necessarily run it. Probing does.
  int pending = 0;
  rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, barrier_comm_, &pending, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) throw_mpi(where("wait"), "MPI_Iprobe", rc);
  return value;
}

void WindowSet::wait(int id, uint64_t offset, int32_t cmp, int32_t expected,
                     std::chrono::milliseconds timeout,
                     const std::function<void(int32_t)>& on_change) const {
  const char* call = "wait";
  const Window& w = checked(call, id);
  checked_peer(call, w, id, rank());
  check_range(call, w, id, rank(), offset, 4, 4);
  const char* name = cmp_name(cmp);
  if (name == nullptr)
    throw ProgramError(where(call) + ": comparison " + std::to_string(cmp) +
                       " is not one of eq (0), ne (1), gt (2), ge (3), lt (4), le (5)");
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  Backoff backoff;
  int32_t seen = 0;
  bool first = true;
  for (;;) {
    const int32_t before = seen;
    seen = read_cell_unchecked(w, offset);
    if (on_change && (first || seen != before)) on_change(seen);
    first = false;
    if (compare(seen, cmp, expected)) {
      acquire();
      return;
    }
    if (backoff.past_spin() && std::chrono::steady_clock::now() >= deadline) break;
    backoff.pause();
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  throw ProgramError(where(call) + " on window '" + w.spec.name + "' cell " +
                     std::to_string(offset / 4) + " (byte " + std::to_string(offset) +
                     "): expected value " + name + " " + std::to_string(expected) + ", last seen " +
                     std::to_string(seen) + " after " + seconds(waited) +
                     " (--wait-timeout); a peer never notified it");
}

void WindowSet::barrier_on(MPI_Comm comm, std::chrono::milliseconds timeout,
                           const char* what) const {
  if (barrier_broken_.load())
    throw ProgramError(where(what) +
                       ": an earlier barrier timed out and is still pending, so the "
                       "ranks can no longer meet; the run has to be restarted");
  MPI_Request request = MPI_REQUEST_NULL;
  {
    auto lock = session_.lock();
    const int rc = MPI_Ibarrier(comm, &request);
    if (rc != MPI_SUCCESS) throw_mpi(where(what), "MPI_Ibarrier", rc);
  }
  // MPI_Barrier would spin inside MPI at full speed (and hold the mutex of a
  // serialized rank); polling MPI_Test with backoff yields the core instead.
  const auto start = std::chrono::steady_clock::now();
  Backoff backoff;
  for (;;) {
    int done = 0;
    {
      auto lock = session_.lock();
      const int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) throw_mpi(where(what), "MPI_Test(barrier)", rc);
    }
    if (done) return;
    if (backoff.past_spin() && std::chrono::steady_clock::now() >= start + timeout) break;
    backoff.pause();
  }
  // A pending nonblocking collective may be neither freed nor cancelled.
  barrier_broken_.store(true);
  throw ProgramError(where(what) + ": not every rank arrived within " + seconds(timeout) +
                     " (--wait-timeout); a rank failed before reaching it, or some rank's "
                     "dispatch has no barrier task (exactly one task per rank must call it)");
}

void WindowSet::barrier(std::chrono::milliseconds timeout) const {
  if (in_barrier_.exchange(true))
    throw ProgramError(where("barrier") +
                       ": another task of this rank is already in barrier; barrier is per rank, "
                       "so exactly one task per rank may call it per dispatch");
  struct Clear {
    std::atomic<bool>& flag;
    ~Clear() { flag.store(false); }
  } clear{in_barrier_};
  release();
  barrier_on(barrier_comm_, timeout, "barrier");
  acquire();
}

void WindowSet::collective_barrier(const char* what) const {
  barrier_on(barrier_comm_, options_.collective_timeout, what);
}

void* WindowSet::peer_pointer(int id, int peer) const {
  const char* call = "peer_pointer";
  const Window& w = checked(call, id);
  checked_peer(call, w, id, peer);
  return w.path == CommPath::kShm ? w.peer[peer] : nullptr;
}

void WindowSet::reset(const std::map<int, size_t>& kept) {
  collective_barrier("window reset");
  for (size_t i = 0; i < windows_.size(); ++i) {
    if (!windows_[i].member) continue;
    auto it = kept.find(static_cast<int>(i));
    zero(windows_[i], it == kept.end() ? 0 : it->second);
  }
  collective_barrier("window reset");
}

void WindowSet::reset(int id) {
  Window& w = windows_.at(id);
  collective_barrier("window reset");
  if (w.member) zero(w);
  collective_barrier("window reset");
}

}  // namespace pypto::rank
