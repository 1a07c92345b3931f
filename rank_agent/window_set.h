// Window buffers as MPI-3 windows (docs/windows.md).
//
// A WindowSet is every window of a run, created collectively by all ranks of
// the world from the same list of specs and kept alive across dispatches
// until it is destroyed. Each window lives on the sub-communicator of its
// member ranks and takes one of two paths:
//   shm  every member shares a node (and PYPTO_COMM is not "rma"):
//        MPI_Win_allocate_shared; a peer's copy is a pointer in this process,
//        remote operations are plain loads/stores and lock-free atomics.
//   rma  otherwise: MPI_Win_allocate in one passive-target lock_all epoch for
//        the window's lifetime; MPI_Get/MPI_Put/MPI_Accumulate + flush.
// Ranks in the API are world ranks; offsets are bytes into a rank's copy.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pypto/dtype.h"
#include "pypto/kernel_abi.h"
#include "rank_agent/mpi_session.h"

namespace pypto::rank {

enum class CommPath { kShm, kRma };
// What PYPTO_COMM asks for: auto (unset, "" or "auto"), "shm" (fail when a
// window's members span nodes) or "rma" (RMA even on one node, so the
// cross-node path is tested on a single machine).
enum class CommMode { kAuto, kShm, kRma };

const char* comm_path_name(CommPath path);
const char* comm_mode_name(CommMode mode);
// Parses a PYPTO_COMM value; throws UsageError naming the valid values.
CommMode parse_comm_mode(std::string_view value);
// PYPTO_COMM of this process.
CommMode comm_mode_from_env();

struct WindowSpec {
  std::string name;
  uint64_t bytes = 0;  // size of every member's copy
  DType dtype = DType::kF32;
  std::vector<int> members;  // world ranks, ascending; empty means every rank
};

class WindowSet {
 public:
  struct Options {
    std::optional<CommMode> mode;  // nullopt: PYPTO_COMM
    // Deadline of the barriers inside construction, reset() and destruction.
    std::chrono::milliseconds collective_timeout{120'000};
  };

  // Collective over session.world_comm(): every rank passes the same specs
  // in the same order (checked). Windows start zeroed. Throws ProgramError
  // for invalid specs, InfraError for MPI failures and mismatched specs.
  WindowSet(const MpiSession& session, std::vector<WindowSpec> specs);
  WindowSet(const MpiSession& session, std::vector<WindowSpec> specs, const Options& options);
  // Collective: unlocks and frees every window (MPI_Win_free).
  ~WindowSet();
  WindowSet(const WindowSet&) = delete;
  WindowSet& operator=(const WindowSet&) = delete;

  const MpiSession& session() const { return session_; }
  int rank() const { return session_.rank(); }
  int world() const { return session_.world(); }
  int size() const { return static_cast<int>(windows_.size()); }
  const WindowSpec& spec(int id) const { return windows_.at(id).spec; }
  CommPath path(int id) const { return windows_.at(id).path; }
  bool is_member(int id, int world_rank) const;
  // This rank's copy; nullptr when this rank is not a member.
  void* local(int id) const { return windows_.at(id).local; }
  // MPI_WIN_UNIFIED or MPI_WIN_SEPARATE (MPI_WIN_MODEL); 0 for non-members.
  int memory_model(int id) const { return windows_.at(id).model; }
  std::optional<int> find(std::string_view name) const;
  // What kernels see as ctx->windows (id = index); names point into this set.
  // A non-member's entry has local = NULL and bytes = 0.
  const std::vector<pypto_window>& kernel_windows() const { return kernel_windows_; }

  // ---- data-plane operations, callable from any core thread ----
  // Every one checks window id, peer (in range and a member), range and
  // alignment, and throws ProgramError whose message starts "rank R: <call>"
  // (InfraError when MPI itself fails). `call` names the kernel-level call.
  // Reads `bytes` of peer's copy at offset (remote_load, get).
  void load(const char* call, int id, int peer, uint64_t offset, void* dst, uint64_t bytes) const;
  // Plain store of `bytes` into peer's copy (remote_store SET, put).
  void store(const char* call, int id, int peer, uint64_t offset, const void* src,
             uint64_t bytes) const;
  // Element-wise atomic add of count elements of dtype (remote_store ADD).
  // `timeout` bounds the compare-and-swap retries of f16/bf16 on the rma path.
  void add(const char* call, int id, int peer, uint64_t offset, const void* src, uint64_t count,
           DType dtype, std::chrono::milliseconds timeout) const;
  // SET (op 0) or atomic ADD (op 1) on peer's int32 cell; releases this
  // rank's earlier stores to every window first.
  void notify(int id, int peer, uint64_t offset, int32_t value, int32_t op) const;
  // Atomically reads this rank's int32 cell.
  int32_t read_cell(int id, uint64_t offset) const;
  // Polls this rank's int32 cell with backoff until it compares `cmp` to
  // `expected`, then acquires the peers' stores to every window. Throws
  // ProgramError naming rank, window, cell, comparison, expected and last
  // seen value when `timeout` passes first.
  void wait(int id, uint64_t offset, int32_t cmp, int32_t expected,
            std::chrono::milliseconds timeout,
            const std::function<void(int32_t)>& on_change = {}) const;
  // Every rank of the world meets here (MPI_Ibarrier polled with backoff, so
  // the thread yields its core); stores before it are visible after it.
  // Exactly one thread per rank may be in it at a time. A timed-out barrier
  // leaves its request pending, so later barriers fail at once.
  void barrier(std::chrono::milliseconds timeout) const;
  // Peer's copy mapped into this process (shm path), nullptr on the rma
  // path; throws for a bad window or peer.
  void* peer_pointer(int id, int peer) const;

  // Collective over the world: zeroes every window (or one), fenced by
  // barriers so no peer's store lands before the zeroing. `kept[id]` bytes at
  // the start of window `id` are left as they are: they hold a resident
  // tensor that lives in the window (docs/resident-tensors.md), not scratch.
  void reset(const std::map<int, size_t>& kept = {});
  void reset(int id);

 private:
  struct Window {
    WindowSpec spec;
    CommPath path = CommPath::kRma;
    bool member = false;
    MPI_Comm comm = MPI_COMM_NULL;  // members only; owned by comms_
    MPI_Win win = MPI_WIN_NULL;
    // rma windows of the same members share one MPI window (one MPI_Win_allocate
    // instead of one per window): this window's bytes start at `disp` in it, and
    // the first of them owns it (locks, syncs and frees it).
    uint64_t disp = 0;
    bool owns_win = true;
    void* local = nullptr;
    int model = 0;
    std::vector<int> comm_rank;  // world rank -> rank in comm, -1 for non-members
    std::vector<char*> peer;     // world rank -> mapped copy (shm path), else nullptr
  };

  void create(Window& w, CommMode mode);
  bool members_share_node(const Window& w) const;
  void allocate_shared(Window& w);
  void allocate_rma(Window& w, uint64_t bytes);
  const Window& checked(const char* call, int id) const;
  int checked_peer(const char* call, const Window& w, int id, int peer) const;
  void check_range(const char* call, const Window& w, int id, int peer, uint64_t offset,
                   uint64_t bytes, uint64_t align) const;
  std::string where(const char* call) const;
  int32_t read_cell_unchecked(const Window& w, uint64_t offset) const;
  void release() const;  // this rank's stores -> visible to peers
  void acquire() const;  // peers' completed stores -> visible to this rank
  void zero(Window& w, size_t from = 0);
  void collective_barrier(const char* what) const;
  void barrier_on(MPI_Comm comm, std::chrono::milliseconds timeout, const char* what) const;
  void start_progress();
  void stop_progress();

  const MpiSession& session_;
  Options options_;
  MPI_Comm barrier_comm_ = MPI_COMM_NULL;
  std::vector<MPI_Comm> comms_;  // one per distinct member set
  std::vector<Window> windows_;
  std::vector<pypto_window> kernel_windows_;
  bool has_rma_ = false;  // this rank holds a copy of an rma-path window
  mutable std::atomic<bool> in_barrier_{false};
  mutable std::atomic<bool> barrier_broken_{false};
  // Passive-target progress for rma windows (docs/windows.md "Progress"):
  // a thread that enters MPI every kProgressInterval while the set lives, so
  // peers' operations on this rank's copies complete even while no core
  // thread is inside a comm call (computing, or between dispatches).
  std::thread progress_;
  std::mutex progress_mu_;
  std::condition_variable progress_cv_;
  bool progress_stop_ = false;
};

}  // namespace pypto::rank
