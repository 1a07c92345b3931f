/* PyPTO kernel and orchestration ABI (docs/windows.md).
 *
 * Kernels and chip orchestrations are compiled by the host C++ compiler at run
 * time against this header; the runtime was compiled at install time. The
 * boundary is plain C so both sides always agree on layout. Any change to a
 * struct here bumps PYPTO_KERNEL_ABI_VERSION, which is part of every binary
 * cache key and is checked again when a binary is loaded (fail closed).
 */
#ifndef PYPTO_KERNEL_ABI_H_
#define PYPTO_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYPTO_KERNEL_ABI_VERSION 1
#define PYPTO_MAX_DIMS 8

/* Element types, numbered as in the .npy loader. */
typedef enum pypto_dtype {
  PYPTO_F32 = 0,
  PYPTO_F16 = 1,
  PYPTO_BF16 = 2,
  PYPTO_I8 = 3,
  PYPTO_I16 = 4,
  PYPTO_I32 = 5,
  PYPTO_I64 = 6,
  PYPTO_U8 = 7,
  PYPTO_BOOL = 8
} pypto_dtype;

typedef enum pypto_core_type { PYPTO_CORE_AIC = 0, PYPTO_CORE_AIV = 1 } pypto_core_type;

typedef enum pypto_direction { PYPTO_IN = 0, PYPTO_OUT = 1, PYPTO_INOUT = 2 } pypto_direction;

/* A strided view of a tensor. Element (i0..in) lives at
 * data + (offset + sum(ik * strides[k])) * element_size. Strides and offset
 * count elements, not bytes. */
typedef struct pypto_tensor {
  void* data;
  int32_t dtype; /* pypto_dtype */
  int32_t ndim;
  int64_t offset;
  int64_t shape[PYPTO_MAX_DIMS];
  int64_t strides[PYPTO_MAX_DIMS];
} pypto_tensor;

/* A window buffer as a kernel sees it: symmetric across the member ranks.
 * Empty (num_windows == 0) on single-chip (L2) runs. */
typedef struct pypto_window {
  const char* name;
  void* local;    /* this rank's copy */
  uint64_t bytes; /* size of every rank's copy */
  int32_t dtype;
  int32_t id;     /* index into pypto_kernel_ctx.windows */
} pypto_window;

struct pypto_kernel_ctx;

/* ---- communication (L3): window buffers across ranks ----
 * Offsets and cells count BYTES from the start of a rank's copy of the window.
 * Every call returns 0 on success; on failure the runtime has already
 * recorded why (bad window, peer or range; wait deadline; an L2 run, which has
 * no windows) and the kernel should return. */
typedef enum pypto_store_op { PYPTO_STORE_SET = 0, PYPTO_STORE_ADD = 1 } pypto_store_op;
typedef enum pypto_cmp {
  PYPTO_CMP_EQ = 0,
  PYPTO_CMP_NE = 1,
  PYPTO_CMP_GT = 2,
  PYPTO_CMP_GE = 3,
  PYPTO_CMP_LT = 4,
  PYPTO_CMP_LE = 5
} pypto_cmp;

typedef struct pypto_comm_api {
  /* Copies `bytes` from peer `rank`'s copy of window `window` at `offset` into `dst`. */
  int (*remote_load)(const struct pypto_kernel_ctx* ctx, int32_t window, int32_t rank,
                     uint64_t offset, void* dst, uint64_t bytes);
  /* Stores `count` elements of `dtype` into the peer's copy: plain (SET) or atomic add (ADD). */
  int (*remote_store)(const struct pypto_kernel_ctx* ctx, int32_t window, int32_t rank,
                      uint64_t offset, const void* src, uint64_t count, int32_t dtype,
                      int32_t op);
  /* Bulk copies; complete when the call returns. */
  int (*put)(const struct pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset,
             const void* src, uint64_t bytes);
  int (*get)(const struct pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset,
             void* dst, uint64_t bytes);
  /* Sets or atomically adds `value` to the int32 signal cell at `offset` of the peer's copy. */
  int (*notify)(const struct pypto_kernel_ctx* ctx, int32_t window, int32_t rank, uint64_t offset,
                int32_t value, int32_t op);
  /* Waits until this rank's int32 cell at `offset` compares `cmp` to `expected`; backs
   * off (spin, then yield and sleep) and fails after the wait deadline. */
  int (*wait)(const struct pypto_kernel_ctx* ctx, int32_t window, uint64_t offset, int32_t cmp,
              int32_t expected);
  /* All ranks of the run meet here. */
  int (*barrier)(const struct pypto_kernel_ctx* ctx);
  /* A pointer to the peer's copy when it is directly addressable (shared-memory
   * windows), else NULL: then use remote_load/remote_store/put/get. */
  void* (*peer_pointer)(const struct pypto_kernel_ctx* ctx, int32_t window, int32_t rank);
  /* Names the source line of the comm call that follows on this thread, so a
   * wait that fails can say where it is. Last member: kernels built before it
   * never read it. */
  void (*set_call_site)(const struct pypto_kernel_ctx* ctx, const char* file, int32_t line);
} pypto_comm_api;

/* DFX and error hooks the runtime provides to every kernel. */
typedef struct pypto_kernel_hooks {
  /* Fails the task with `message`; the kernel should return right after. */
  void (*report_error)(const struct pypto_kernel_ctx* ctx, const char* message);
  /* Marks a tensor argument for --dump-args level 1. */
  void (*tag_tensor)(const struct pypto_kernel_ctx* ctx, int32_t arg_index, const char* tag);
} pypto_kernel_hooks;

typedef struct pypto_kernel_ctx {
  int32_t rank;
  int32_t world;
  int32_t core_id;
  int32_t core_type; /* pypto_core_type */
  int64_t task_id;
  int32_t num_windows;
  const pypto_window* windows;
  const pypto_kernel_hooks* hooks;
  void* runtime; /* opaque, for the hooks */
  const pypto_comm_api* comm; /* never NULL; on L2 every call fails (no windows) */
  void* comm_state;           /* opaque, for the comm calls */
} pypto_kernel_ctx;

/* What a kernel entry receives: tensors first, then scalars, then the context. */
typedef struct pypto_kernel_args {
  uint32_t abi_version;
  int32_t num_tensors;
  const pypto_tensor* tensors;
  int32_t num_scalars;
  const int64_t* scalars; /* floating-point scalars travel as their bit pattern */
  const pypto_kernel_ctx* ctx;
} pypto_kernel_args;

/* Every kernel .so exports:  void kernel_entry(const pypto_kernel_args*);  */
typedef void (*pypto_kernel_entry_fn)(const pypto_kernel_args*);

/* ---- orchestration side ---- */

/* One tensor argument of a submitted task. */
typedef struct pypto_task_arg {
  pypto_tensor view;
  int32_t direction; /* pypto_direction */
} pypto_task_arg;

typedef struct pypto_orch_api {
  /* Submits one task; returns its task id, or -1 after reporting an error. */
  int64_t (*submit)(void* runtime, int32_t func_id, int32_t core_type, const pypto_task_arg* args,
                    int32_t num_args, const int64_t* scalars, int32_t num_scalars);
  /* Nested scopes group tasks for scope statistics. */
  void (*scope_begin)(void* runtime, const char* name);
  void (*scope_end)(void* runtime);
  void (*report_error)(void* runtime, const char* message);
} pypto_orch_api;

typedef struct pypto_orch_args {
  uint32_t abi_version;
  int32_t num_tensors;
  const pypto_tensor* tensors; /* the program's tensor parameters, in signature order */
  int32_t num_scalars;
  const int64_t* scalars;
  int32_t rank;
  int32_t world;
  int32_t num_windows;
  const pypto_window* windows;
  const pypto_orch_api* api;
  void* runtime;
} pypto_orch_args;

/* Every orchestration .so exports the function named in kernel_config.json
 * (default "orchestration_entry") with this type. */
typedef void (*pypto_orch_entry_fn)(const pypto_orch_args*);

/* Every binary built against this header exports its ABI version so that a
 * stale binary is refused at load time. Weak, so several translation units of
 * one binary may include the header. The runtime itself defines
 * PYPTO_RUNTIME_HOST and does not export it. */
#ifndef PYPTO_RUNTIME_HOST
__attribute__((weak, visibility("default"))) uint32_t pypto_abi_version(void) {
  return PYPTO_KERNEL_ABI_VERSION;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* PYPTO_KERNEL_ABI_H_ */
