// The control-plane protocol between pypto-coord (a ZeroMQ ROUTER) and the
// pypto-rank agents (one DEALER each), docs/protocol.md. A message is one
// multipart ZeroMQ message:
//
//   frame 0     envelope + body: a fixed 12-byte prefix (magic "PPTO", protocol
//               version, sender rank; little-endian, written by hand so that it
//               never depends on the archive format) followed by a cereal
//               PortableBinary archive of {type, request id, body fields}
//   frame 1..n  payloads (file contents, tensor bytes), never inside the archive
//
// The ROUTER side sees the peer's routing identity as an extra first frame.
// Messages are plain structs (strings, integers, vectors) so the vocabulary
// stays small and stable; any change to a struct's layout bumps
// kProtocolVersion, and a peer of another version is refused by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>
#include <zmq.hpp>

#include "pypto/error.h"
#include "pypto/phase_timing.h"
#include "pypto/run_config.h"

namespace pypto {

// cereal finds it by argument-dependent lookup (PhaseTiming is a public type).
template <class Archive>
void serialize(Archive& ar, PhaseTiming& timing) {
  ar(timing.phase, timing.ns);
}

}  // namespace pypto

namespace pypto::wire {

// Bump on ANY change of a message's fields, order or meaning.
inline constexpr uint32_t kProtocolVersion = 6;
inline constexpr char kMagic[4] = {'P', 'P', 'T', 'O'};
// Bytes 0..11 of frame 0: magic, version (u32 LE), sender rank (i32 LE). Frozen for
// every protocol version, so a peer of any version can be named and refused.
inline constexpr size_t kPrefixSize = 12;
// The sender rank of messages from the coordinator.
inline constexpr int32_t kCoordinatorRank = -1;

enum class MessageType : uint8_t {
  kHello = 1,
  kWelcome = 2,
  kRefuse = 3,
  kHeartbeat = 4,
  kManifest = 5,
  kNeed = 6,
  kBlobs = 7,
  kReady = 8,
  kDispatch = 9,
  kDispatchDone = 10,
  kAbort = 11,
  kShutdown = 12,
  kAgentError = 13,
  kReset = 14,
  kClockProbe = 15,
  kClockReply = 16,
  kResident = 17,
  kResidentDone = 18,
  kStateQuery = 19,
  kRankState = 20,
  kAttach = 21,
};
// "HELLO", "DISPATCH_DONE", ...; "type 200" for a code this version does not know.
std::string message_type_name(MessageType type);

// Who is at this end of the wire; decides how errors name the peer.
enum class Role { kCoordinator, kAgent };

// ---------------------------------------------------------------------------------------------
// Shared value types.

// An error reported by an agent: the message and the exit-code class it maps to
// (1 FAIL: the program is wrong, 3 INFRA: setup), docs/errors.md.
struct WireError {
  std::string message;
  int32_t exit_code = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(message, exit_code);
  }
  bool operator==(const WireError&) const = default;
};

// A tensor as it crosses the wire: metadata here, bytes in a payload frame.
struct TensorMeta {
  std::string name;
  std::string dtype;           // "f32", "i64", ... (include/pypto/dtype.h names)
  std::vector<int64_t> shape;  // static extents
  std::string direction;       // "In", "Out", "InOut" (include/pypto/param_info.h names)
  uint64_t nbytes = 0;         // bytes of its payload frame (0 for an Out argument)
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, dtype, shape, direction, nbytes);
  }
  bool operator==(const TensorMeta&) const = default;
};

// One file of a rank's sub-build: path relative to next_levels/<r>/ ('/'-separated),
// size in bytes, SHA-256 of the content (lowercase hex), permission bits (0777 mask).
struct ManifestFile {
  std::string path;
  uint64_t size = 0;
  std::string sha256;
  uint32_t mode = 0644;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(path, size, sha256, mode);
  }
  bool operator==(const ManifestFile&) const = default;
};

// The five DFX switches of include/pypto/run_config.h DfxOptions.
struct WireDfxOptions {
  int32_t enable_chip_swimlane = 0;
  int32_t enable_dump_args = 0;
  int32_t enable_pmu = 0;
  bool enable_dep_gen = false;
  bool enable_scope_stats = false;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(enable_chip_swimlane, enable_dump_args, enable_pmu, enable_dep_gen, enable_scope_stats);
  }
  bool operator==(const WireDfxOptions&) const = default;
};
WireDfxOptions to_wire(const DfxOptions& options);
DfxOptions from_wire(const WireDfxOptions& options);

// What a rank needs of RunOptions for one dispatch, plus the deadlines.
struct WireRunOptions {
  std::string platform = "a2a3sim";
  int32_t device_id = 0;
  int32_t aicpu_thread_num = 0;
  // RingOverride values: empty = unset, one value = every level, kRingLevels values.
  std::vector<uint64_t> ring_task_window;
  std::vector<uint64_t> ring_heap;
  std::vector<uint64_t> ring_dep_pool;
  uint64_t dispatch_timeout_ms = 0;  // whole dispatch; 0 = the agent's default
  uint64_t wait_timeout_ms = 0;      // a kernel's wait() on a signal cell; 0 = default
  template <class Archive>
  void serialize(Archive& ar) {
    ar(platform, device_id, aicpu_thread_num, ring_task_window, ring_heap, ring_dep_pool,
       dispatch_timeout_ms, wait_timeout_ms);
  }
  bool operator==(const WireRunOptions&) const = default;
};
// The dispatch half of RunOptions (its DFX half travels as WireDfxOptions).
WireRunOptions to_wire(const RunOptions& options);
RunOptions from_wire(const WireRunOptions& options, const WireDfxOptions& dfx);

// One argument of a dispatch; which fields are meaningful depends on `kind`.
struct DispatchArg {
  // `tensor`; bytes in a payload frame when In/InOut. With window_id >= 0 (and
  // `window`), an in-place argument: the agent keeps it in that window's copy.
  static constexpr uint8_t kTensor = 0;
  static constexpr uint8_t kWindow = 1;  // `window` (its name) and `window_id` (host_orch index)
  static constexpr uint8_t kScalar = 2;  // `scalar`
  // `tensor` (box shape, direction; no payload) is the box at `offsets` of resident
  // tensor `resident_id`'s part on this rank (docs/resident-tensors.md).
  static constexpr uint8_t kResident = 3;
  uint8_t kind = kTensor;
  TensorMeta tensor;
  std::string window;
  int64_t window_id = -1;
  int64_t scalar = 0;
  uint64_t resident_id = 0;
  std::vector<int64_t> offsets;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(kind, tensor, window, window_id, scalar, resident_id, offsets);
  }
  bool operator==(const DispatchArg&) const = default;
};

using PhaseTiming = ::pypto::PhaseTiming;

// A window buffer of orchestration/host_orch.json, as every rank must create it: the same
// list in the same order on every rank (window creation is collective over the world).
struct WireWindow {
  std::string name;
  std::string dtype;           // "f32", "i32", ... (include/pypto/dtype.h names)
  uint64_t bytes = 0;          // size of each member's copy
  std::vector<int32_t> ranks;  // member world ranks, ascending
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, dtype, bytes, ranks);
  }
  bool operator==(const WireWindow&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Messages. Each has kType; the direction (agent -> coordinator or back) is in the comment.

// agent -> coordinator, first message after connecting.
struct Hello {
  static constexpr MessageType kType = MessageType::kHello;
  int32_t rank = 0;
  int32_t world = 0;
  std::string host;
  int64_t pid = 0;
  uint32_t protocol_version = kProtocolVersion;
  std::vector<std::string> held_hashes;  // blob-store hashes already on this host (a hint)
  std::string mpi_thread_level;          // "MPI_THREAD_MULTIPLE", ...
  // The agent's kernel (common/boot_id.h): the coordinator's own means one clock.
  std::string boot_id;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(rank, world, host, pid, protocol_version, held_hashes, mpi_thread_level, boot_id);
  }
  bool operator==(const Hello&) const = default;
};

// coordinator -> agent: HELLO accepted.
struct Welcome {
  static constexpr MessageType kType = MessageType::kWelcome;
  uint32_t protocol_version = kProtocolVersion;
  std::string run_id;
  uint32_t heartbeat_interval_ms = 1000;
  uint32_t deadline_ms = 10000;  // silence longer than this means the peer is gone
  // What the agent's worker thread sends back in ATTACH on its own connection, so
  // the coordinator knows that connection is this agent's (0: no data connection).
  uint64_t attach_token = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(protocol_version, run_id, heartbeat_interval_ms, deadline_ms, attach_token);
  }
  bool operator==(const Welcome&) const = default;
};

// coordinator -> agent: HELLO refused (version, duplicate rank, world mismatch); the agent exits.
struct Refuse {
  static constexpr MessageType kType = MessageType::kRefuse;
  std::string reason;
  uint32_t coordinator_version = kProtocolVersion;
  uint32_t agent_version = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(reason, coordinator_version, agent_version);
  }
  bool operator==(const Refuse&) const = default;
};

// both ways, every Welcome::heartbeat_interval_ms while there is no other traffic.
struct Heartbeat {
  static constexpr MessageType kType = MessageType::kHeartbeat;
  template <class Archive>
  void serialize(Archive&) {}
  bool operator==(const Heartbeat&) const = default;
};

// coordinator -> agent: the files of next_levels/<rank>/ of one build, and that build's
// windows. An agent holds several builds at once (a DistributedWorker's registered
// programs), each in its own workspace <workspace>/<build>/ with its own windows; every
// rank receives the MANIFESTs of a run in the same order, because window creation is
// collective.
struct Manifest {
  static constexpr MessageType kType = MessageType::kManifest;
  std::string build = "main";  // the build's id: one path component, [A-Za-z0-9_.-], not "." or ".."
  int32_t rank = 0;
  std::vector<ManifestFile> files;  // sorted by path
  std::vector<WireWindow> windows;  // host_orch.json's windows, in its order
  template <class Archive>
  void serialize(Archive& ar) {
    ar(build, rank, files, windows);
  }
  bool operator==(const Manifest&) const = default;
};

// agent -> coordinator: the manifest's hashes its host blob store lacks (may be empty).
struct Need {
  static constexpr MessageType kType = MessageType::kNeed;
  std::vector<std::string> hashes;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(hashes);
  }
  bool operator==(const Need&) const = default;
};

// coordinator -> agent: contents, one payload frame per hash, same order.
struct Blobs {
  static constexpr MessageType kType = MessageType::kBlobs;
  std::vector<std::string> hashes;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(hashes);
  }
  bool operator==(const Blobs&) const = default;
};

// agent -> coordinator: workspace materialized and kernels assembled (or why not).
struct Ready {
  static constexpr MessageType kType = MessageType::kReady;
  int32_t rank = 0;
  bool ok = false;
  WireError error;
  uint64_t cache_hits = 0;
  uint64_t compiles = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(rank, ok, error, cache_hits, compiles);
  }
  bool operator==(const Ready&) const = default;
};

// coordinator -> agent: run the rank's k-th dispatch of this run. Payload frames: one per
// tensor argument whose direction is In or InOut, in argument order (nbytes each).
struct Dispatch {
  static constexpr MessageType kType = MessageType::kDispatch;
  std::string build = "main";  // a build this agent holds (MANIFEST ... READY)
  uint64_t index = 0;  // k of dfx_outputs/rank<r>/d<k>, restarts at 0 every run
  std::string program;
  std::vector<DispatchArg> args;
  WireDfxOptions dfx;
  WireRunOptions run;
  // Zero the build's windows first, as a RESET would (collective over every
  // rank): the first dispatch of a run carries it, which saves the RESET's own
  // round trip; a rank without dispatches in the run gets a RESET.
  bool reset_windows = false;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(build, index, program, args, dfx, run, reset_windows);
  }
  bool operator==(const Dispatch&) const = default;
};

// agent -> coordinator, reply to DISPATCH (same request id). Payload frames: one per output
// (nbytes each), then one per DFX file, in order.
struct DispatchDone {
  static constexpr MessageType kType = MessageType::kDispatchDone;
  uint64_t index = 0;
  bool ok = false;
  WireError error;
  std::vector<PhaseTiming> timings;
  int64_t start_unix_ns = 0;  // CLOCK_REALTIME, so timelines of ranks can be merged
  int64_t end_unix_ns = 0;
  std::vector<TensorMeta> outputs;
  std::vector<std::string> dfx_files;  // relative to dfx_outputs/rank<r>/d<k>/
  template <class Archive>
  void serialize(Archive& ar) {
    ar(index, ok, error, timings, start_unix_ns, end_unix_ns, outputs, dfx_files);
  }
  bool operator==(const DispatchDone&) const = default;
};

// coordinator -> agent: the run failed elsewhere; stop what you do and exit nonzero.
struct Abort {
  static constexpr MessageType kType = MessageType::kAbort;
  std::string reason;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(reason);
  }
  bool operator==(const Abort&) const = default;
};

// coordinator -> agent: the run is over; exit 0.
struct Shutdown {
  static constexpr MessageType kType = MessageType::kShutdown;
  template <class Archive>
  void serialize(Archive&) {}
  bool operator==(const Shutdown&) const = default;
};

// agent -> coordinator: a failure outside a dispatch (MPI, workspace, a signal); fails the run.
struct AgentError {
  static constexpr MessageType kType = MessageType::kAgentError;
  int32_t rank = 0;
  std::string message;
  int32_t exit_code = 3;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(rank, message, exit_code);
  }
  bool operator==(const AgentError&) const = default;
};

// coordinator -> every agent: zero the windows of `build` before the next run (collective
// over the world, so it goes to every rank, also ranks without a dispatch). Answered by
// READY with the same request id.
struct Reset {
  static constexpr MessageType kType = MessageType::kReset;
  std::string build = "main";
  template <class Archive>
  void serialize(Archive& ar) {
    ar(build);
  }
  bool operator==(const Reset&) const = default;
};

// coordinator -> agent, a few times after WELCOME: measures the offset of the
// agent's host clock to the coordinator's (docs/dfx.md "Several hosts").
struct ClockProbe {
  static constexpr MessageType kType = MessageType::kClockProbe;
  int64_t coordinator_ns = 0;  // the coordinator's CLOCK_MONOTONIC when sent
  template <class Archive>
  void serialize(Archive& ar) {
    ar(coordinator_ns);
  }
  bool operator==(const ClockProbe&) const = default;
};

// agent -> coordinator: the answer to a CLOCK_PROBE, sent as soon as it arrives.
struct ClockReply {
  static constexpr MessageType kType = MessageType::kClockReply;
  int64_t coordinator_ns = 0;  // echoed from the probe
  int64_t agent_ns = 0;        // the agent host's CLOCK_MONOTONIC when answering
  int64_t agent_unix_ns = 0;   // and its CLOCK_REALTIME
  template <class Archive>
  void serialize(Archive& ar) {
    ar(coordinator_ns, agent_ns, agent_unix_ns);
  }
  bool operator==(const ClockReply&) const = default;
};

// coordinator -> agent: an operation on a resident tensor, a buffer that lives in the
// agent across runs until freed (docs/resident-tensors.md). Ordered with the rank's
// dispatches; answered by RESIDENT_DONE with the same request id.
struct Resident {
  static constexpr MessageType kType = MessageType::kResident;
  static constexpr uint8_t kAlloc = 0;  // a zero-filled part of `dtype`/`shape`
  static constexpr uint8_t kWrite = 1;  // one payload frame: the whole part's bytes
  static constexpr uint8_t kRead = 2;   // answered with the part's bytes
  static constexpr uint8_t kFree = 3;
  uint8_t op = kAlloc;
  uint64_t id = 0;             // chosen by the coordinator, unique per job
  std::string dtype;           // kAlloc
  std::vector<int64_t> shape;  // kAlloc: the part this rank holds
  uint64_t nbytes = 0;         // kWrite: bytes of its payload frame
  template <class Archive>
  void serialize(Archive& ar) {
    ar(op, id, dtype, shape, nbytes);
  }
  bool operator==(const Resident&) const = default;
};

// agent -> coordinator: RESIDENT done (or why not). A kRead that succeeded carries one
// payload frame of `nbytes`.
struct ResidentDone {
  static constexpr MessageType kType = MessageType::kResidentDone;
  uint64_t id = 0;
  bool ok = false;
  WireError error;
  bool has_data = false;
  uint64_t nbytes = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(id, ok, error, has_data, nbytes);
  }
  bool operator==(const ResidentDone&) const = default;
};

// coordinator -> agent, after a dispatch failed or stalled: what is this rank doing?
// Answered at once by RANK_STATE (same request id) from the agent's control thread,
// whatever its kernels are doing (docs/dfx.md "Why a run hangs").
struct StateQuery {
  static constexpr MessageType kType = MessageType::kStateQuery;
  template <class Archive>
  void serialize(Archive&) {}
  bool operator==(const StateQuery&) const = default;
};

// One of a rank's recent comm calls (rank_agent/comm_log.h), end_ns 0 while in progress.
struct WireCommOp {
  std::string kind;    // "wait", "notify", "remote_store", ...
  std::string window;  // its name; "" for a barrier
  int32_t peer = -1;
  int64_t cell = -1;   // element index into the window
  int32_t value = 0;   // notify: the value; wait: the expected value
  std::string mode;    // notify: "set"/"add"; wait: "eq", "ge", ...
  int32_t observed = 0;  // wait: the cell's value when last read
  int64_t task_id = -1;
  int32_t core_id = -1;
  int64_t start_ns = 0;  // the agent's CLOCK_MONOTONIC
  int64_t end_ns = 0;
  bool ok = true;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(kind, window, peer, cell, value, mode, observed, task_id, core_id, start_ns, end_ns, ok);
  }
  bool operator==(const WireCommOp&) const = default;
};

// A task in a kernel on one of the rank's cores.
struct WireRunningTask {
  int32_t core_id = -1;
  std::string core_type;  // "aic" / "aiv"
  int64_t task_id = -1;
  int32_t func_id = -1;
  std::string kernel;
  int64_t start_ns = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(core_id, core_type, task_id, func_id, kernel, start_ns);
  }
  bool operator==(const WireRunningTask&) const = default;
};

// agent -> coordinator: the answer to STATE_QUERY.
struct RankState {
  static constexpr MessageType kType = MessageType::kRankState;
  int64_t now_ns = 0;  // the agent's CLOCK_MONOTONIC when answering
  // The current dispatch, or the last one (-1: none yet); running says which.
  int64_t dispatch = -1;
  std::string program;
  bool running = false;
  bool ok = true;     // the last dispatch, once finished
  std::string error;  // and why it failed
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::vector<WireRunningTask> tasks;  // in a kernel now
  std::vector<WireCommOp> comm_ops;    // the dispatch's most recent comm calls, oldest first
  uint64_t comm_ops_recorded = 0;      // all of the dispatch's, kept or not
  template <class Archive>
  void serialize(Archive& ar) {
    ar(now_ns, dispatch, program, running, ok, error, start_ns, end_ns, tasks, comm_ops,
       comm_ops_recorded);
  }
  bool operator==(const RankState&) const = default;
};

// agent -> coordinator, the first message on the agent worker thread's own connection
// (the data connection, docs/protocol.md): from then on the coordinator sends that
// rank's RESET, DISPATCH and RESIDENT there, and the worker answers from it, so the
// agent's control thread takes no part in a dispatch. No reply.
struct Attach {
  static constexpr MessageType kType = MessageType::kAttach;
  int32_t rank = -1;
  uint64_t token = 0;  // the WELCOME's attach_token
  template <class Archive>
  void serialize(Archive& ar) {
    ar(rank, token);
  }
  bool operator==(const Attach&) const = default;
};

using Message = std::variant<Hello, Welcome, Refuse, Heartbeat, Manifest, Need, Blobs, Ready,
                             Dispatch, DispatchDone, Abort, Shutdown, AgentError, Reset,
                             ClockProbe, ClockReply, Resident, ResidentDone, StateQuery,
                             RankState, Attach>;

// Why `build` is not an acceptable build id (one path component of [A-Za-z0-9_.-], 1..64
// characters, not "." or ".."), or nullopt when it is.
std::optional<std::string> build_id_problem(std::string_view build);

MessageType type_of(const Message& message);

// How many payload frames `message` must travel with; a count mismatch is malformed.
size_t expected_payload_count(const Message& message);

// ---------------------------------------------------------------------------------------------
// Errors.

// A control message could not be decoded, or was not what the protocol allows at this point.
class ProtocolError : public InfraError {
 public:
  explicit ProtocolError(const std::string& message) : InfraError(message) {}
  // ROUTER side: the routing id of the peer that sent it, so the coordinator can answer
  // (a REFUSE to a peer of another version) or drop that peer.
  const std::string& peer_identity() const { return peer_identity_; }
  void set_peer_identity(std::string identity) { peer_identity_ = std::move(identity); }

 private:
  std::string peer_identity_;
};

// The peer speaks another protocol version; the message names both versions.
class ProtocolVersionError : public ProtocolError {
 public:
  ProtocolVersionError(const std::string& message, uint32_t peer_version, int32_t peer_rank)
      : ProtocolError(message), peer_version_(peer_version), peer_rank_(peer_rank) {}
  uint32_t peer_version() const { return peer_version_; }
  int32_t peer_rank() const { return peer_rank_; }  // kCoordinatorRank for the coordinator

 private:
  uint32_t peer_version_;
  int32_t peer_rank_;
};

// The text of a version mismatch between agent `agent_rank` and the coordinator, as
// `observer` says it: "agent rank 2 speaks control protocol 2, this coordinator speaks 1;
// use pypto-rank and pypto-coord from the same installation".
std::string version_mismatch_text(Role observer, int32_t agent_rank, uint32_t agent_version,
                                  uint32_t coordinator_version);
// The REFUSE a coordinator (of kProtocolVersion) sends to an agent of `agent_version`.
Refuse make_version_refusal(int32_t agent_rank, uint32_t agent_version);

// ---------------------------------------------------------------------------------------------
// Framing.

struct Envelope {
  uint32_t protocol_version = kProtocolVersion;
  MessageType type = MessageType::kHeartbeat;
  uint64_t request_id = 0;  // a reply (WELCOME, NEED, DISPATCH_DONE, ...) echoes its request's
  int32_t sender_rank = kCoordinatorRank;
};

struct Decoded {
  std::string identity;  // ROUTER side: the peer's routing id; empty on the DEALER side
  Envelope envelope;
  Message message;
  std::vector<zmq::message_t> payloads;

  MessageType type() const { return envelope.type; }
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(message);
  }
  // The body as T; throws ProtocolError "unexpected REFUSE from rank 3 (expected WELCOME)".
  template <class T>
  T& as() {
    if (T* body = std::get_if<T>(&message)) return *body;
    throw_unexpected(T::kType);
  }
  std::string_view payload(size_t i) const {
    return {static_cast<const char*>(payloads.at(i).data()), payloads.at(i).size()};
  }

 private:
  [[noreturn]] void throw_unexpected(MessageType expected) const;
};

// Who is decoding: names the peer in errors and phrases version refusals.
struct DecodeContext {
  Role role = Role::kCoordinator;
  int32_t local_rank = kCoordinatorRank;  // the agent's own rank when role == kAgent
};

// [frame 0][payload]*: what a DEALER sends. Throws ProtocolError when `payloads` does not
// match expected_payload_count (a bug in the sender; nothing is sent).
std::vector<zmq::message_t> encode(const Message& message,
                                   std::vector<zmq::message_t> payloads = {},
                                   int32_t sender_rank = kCoordinatorRank, uint64_t request_id = 0);
// [identity][frame 0][payload]*: what a ROUTER sends to the peer `identity`.
std::vector<zmq::message_t> encode_routed(std::string_view identity, const Message& message,
                                          std::vector<zmq::message_t> payloads = {},
                                          uint64_t request_id = 0);

// Decodes what a DEALER received; consumes `frames` (payloads move into the result). Reads the
// frozen prefix first, so a peer of another version raises ProtocolVersionError whatever
// the rest looks like. Anything malformed (bad magic, short or garbage body, trailing
// bytes, unknown type, wrong payload count or size, bad path or hash) raises
// ProtocolError "malformed control message from rank 3: ...". Never crashes.
Decoded decode(std::vector<zmq::message_t>& frames, const DecodeContext& context = {});
// Decodes what a ROUTER received: the identity frame first.
Decoded decode_routed(std::vector<zmq::message_t>& frames, const DecodeContext& context = {});

// A payload frame holding a copy of `bytes`.
zmq::message_t frame_of(std::string_view bytes);

}  // namespace pypto::wire
