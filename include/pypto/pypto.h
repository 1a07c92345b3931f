// The C++ SDK of the PyPTO distributed runtime (docs/cpp-api.md): everything a
// host program uses, in one include. Link libpypto (CMake: find_package(pypto
// CONFIG) and pypto::pypto; pkg-config: pypto).
//
//   auto program = pypto::DistributedCompiledProgram::from_dir("out/allreduce");
//   auto worker = pypto::DistributedWorker::prepare(program);
//   worker->run(program, args);   // as many times as you like
//
// The kernel ABI headers beside these (kernel_abi.h, tile.h, pto_runtime.h)
// are what generated kernels compile against, not part of a host program.
#pragma once

#include "pypto/build_kind.h"
#include "pypto/chip_worker.h"
#include "pypto/compiled_program.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/distributed_worker.h"
#include "pypto/dtype.h"
#include "pypto/error.h"
#include "pypto/golden_spec.h"
#include "pypto/mpirun_options.h"
#include "pypto/npy.h"
#include "pypto/param_info.h"
#include "pypto/phase_timing.h"
#include "pypto/run_config.h"
#include "pypto/scalar_param.h"
#include "pypto/tensor.h"
