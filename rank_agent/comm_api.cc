#include "rank_agent/comm_api.h"

#include <exception>
#include <optional>
#include <string>

#include "common/log.h"
#include "orchestration/dispatch_record.h"
#include "pypto/error.h"

namespace pypto::rank {

namespace {

void report(const pypto_kernel_ctx* ctx, const std::string& message) {
  if (ctx->hooks && ctx->hooks->report_error)
    ctx->hooks->report_error(ctx, message.c_str());
  else
    log::error("{}", message);  // a context without hooks still leaves a trace
}

// The kernel line of the next comm call on this thread (set_call_site); each
// kernel runs on one worker thread, so no other kernel can overwrite it.
thread_local const char* call_file = nullptr;
thread_local int32_t call_line = 0;

std::string at_call_site(const char* file, int32_t line) {
  if (file == nullptr) return "";
  return " (at " + std::string(file) + ":" + std::to_string(line) + ")";
}

// Runs `body` against the dispatch's CommState and records `op` (what the call
// does, filled in by the caller; nullopt: nothing to record) in the dispatch's
// CommLog from its start, so a state report shows it while it blocks; `body`
// gets the op's ticket (0 when not recorded). C++ errors stop here, at the C
// boundary, and become report_error + -1.
template <typename Body>
int guarded(const pypto_kernel_ctx* ctx, const char* call, std::optional<CommOp> op,
            Body&& body) {
  if (ctx == nullptr) return -1;
  const auto* state = static_cast<const CommState*>(ctx->comm_state);
  if (state == nullptr) {
    report(ctx, "rank " + std::to_string(ctx->rank) + ": " + call +
                    ": this dispatch has no window state (ctx->comm_state is NULL); the rank "
                    "agent sets it for L3 dispatches");
    return -1;
  }
  // A site names only the call it was set for; its text is built only on failure.
  const char* const file = call_file;
  const int32_t line = call_line;
  call_file = nullptr;
  CommLog* const log = op ? state->log() : nullptr;
  uint64_t ticket = 0;
  if (log) {
    op->task_id = ctx->task_id;
    op->core_id = ctx->core_id;
    op->start_ns = chip::now_ns();
    op->end_ns = 0;
    ticket = log->begin(*op);
  }
  const auto recorded = [&](bool ok) {
    if (log) log->finish(ticket, chip::now_ns(), ok);
  };
  try {
    body(*state, ticket);
    recorded(true);
    return 0;
  } catch (const std::exception& e) {
    recorded(false);
    report(ctx, e.what() + at_call_site(file, line));
  } catch (...) {
    recorded(false);
    report(ctx, "rank " + std::to_string(state->rank()) + ": " + call + ": unknown error" +
                    at_call_site(file, line));
  }
  return -1;
}

CommOp comm_op(CommOpKind kind, int32_t window, int32_t peer, uint64_t offset, uint64_t bytes = 0,
               int32_t value = 0, int32_t mode = 0) {
  CommOp op;
  op.kind = kind;
  op.window = window;
  op.peer = peer;
  op.offset = offset;
  op.bytes = bytes;
  op.value = value;
  op.mode = mode;
  return op;
}

DType checked_dtype(const CommState& state, const char* call, int32_t dtype) {
  if (dtype < PYPTO_F32 || dtype > PYPTO_BOOL)
    throw ProgramError("rank " + std::to_string(state.rank()) + ": " + call + ": dtype " +
                       std::to_string(dtype) + " is not a pypto_dtype (one of " + dtype_names() +
                       ")");
  return static_cast<DType>(dtype);
}

int remote_load(const pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset,
                void* dst, uint64_t bytes) {
  return guarded(ctx, "remote_load", comm_op(CommOpKind::kRemoteLoad, window, rank, offset, bytes),
                 [&](const CommState& s, uint64_t) {
    s.windows().load("remote_load", window, rank, offset, dst, bytes);
  });
}

int remote_store(const pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset,
                 const void* src, uint64_t count, int32_t dtype, int32_t op) {
  const char* call = "remote_store";
  const CommOpKind kind = op == PYPTO_STORE_ADD ? CommOpKind::kRemoteAdd : CommOpKind::kRemoteStore;
  const uint64_t bytes = dtype >= PYPTO_F32 && dtype <= PYPTO_BOOL
                             ? count * dtype_size(static_cast<DType>(dtype))
                             : 0;
  return guarded(ctx, call, comm_op(kind, window, rank, offset, bytes), [&](const CommState& s, uint64_t) {
    const DType type = checked_dtype(s, call, dtype);
    if (op == PYPTO_STORE_ADD) {
      s.windows().add(call, window, rank, offset, src, count, type, s.wait_timeout());
      return;
    }
    if (op != PYPTO_STORE_SET)
      throw ProgramError("rank " + std::to_string(s.rank()) + ": " + call + ": op " +
                         std::to_string(op) +
                         " is neither PYPTO_STORE_SET (0) nor PYPTO_STORE_ADD (1)");
    const uint64_t size = dtype_size(type);
    if (count > UINT64_MAX / size)
      throw ProgramError("rank " + std::to_string(s.rank()) + ": " + call + ": " +
                         std::to_string(count) + " elements overflow");
    s.windows().store(call, window, rank, offset, src, count * size);
  });
}

int put(const pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset, const void* src,
        uint64_t bytes) {
  return guarded(ctx, "put", comm_op(CommOpKind::kPut, window, rank, offset, bytes),
                 [&](const CommState& s, uint64_t) {
    s.windows().store("put", window, rank, offset, src, bytes);
  });
}

int get(const pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset, void* dst,
        uint64_t bytes) {
  return guarded(ctx, "get", comm_op(CommOpKind::kGet, window, rank, offset, bytes),
                 [&](const CommState& s, uint64_t) {
    s.windows().load("get", window, rank, offset, dst, bytes);
  });
}

int notify(const pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset,
           int32_t value, int32_t op) {
  return guarded(ctx, "notify", comm_op(CommOpKind::kNotify, window, rank, offset, 0, value, op),
                 [&](const CommState& s, uint64_t) { s.windows().notify(window, rank, offset, value, op); });
}

int wait(const pypto_kernel_ctx* ctx, int32_t window, uint64_t offset, int32_t cmp,
         int32_t expected) {
  return guarded(ctx, "wait", comm_op(CommOpKind::kWait, window, -1, offset, 0, expected, cmp),
                 [&](const CommState& s, uint64_t ticket) {
    CommLog* const log = s.log();
    if (!log) return s.windows().wait(window, offset, cmp, expected, s.wait_timeout());
    s.windows().wait(window, offset, cmp, expected, s.wait_timeout(),
                     [log, ticket](int32_t seen) { log->observe(ticket, seen); });
  });
}

int barrier(const pypto_kernel_ctx* ctx) {
  return guarded(ctx, "barrier", comm_op(CommOpKind::kBarrier, -1, -1, 0),
                 [&](const CommState& s, uint64_t) { s.windows().barrier(s.wait_timeout()); });
}

void* peer_pointer(const pypto_kernel_ctx* ctx, int32_t window, int32_t rank) {
  void* pointer = nullptr;
  // Not an operation on the data: looked up, never recorded.
  guarded(ctx, "peer_pointer", std::nullopt,
          [&](const CommState& s, uint64_t) { pointer = s.windows().peer_pointer(window, rank); });
  return pointer;
}

void set_call_site(const pypto_kernel_ctx*, const char* file, int32_t line) {
  call_file = file;
  call_line = line;
}

const pypto_comm_api kCommApi = {remote_load, remote_store, put,          get,
                                 notify,      wait,         barrier,      peer_pointer,
                                 set_call_site};

}  // namespace

const pypto_comm_api* comm_api() { return &kCommApi; }

}  // namespace pypto::rank
