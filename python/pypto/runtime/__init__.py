"""pypto.runtime: the execute layer.

    from pypto.runtime import RunConfig, ChipWorker, benchmark
"""
from .benchmark import BenchmarkResult, RoundStats, benchmark
from .distributed_runner import execute_distributed_compiled
from .run_config import BackendType, CompileOptions, DfxOptions, ExecutionMode, RunConfig
from .runner import execute_compiled
from .worker import (
    ChipRunResult,
    ChipWorker,
    DispatchOutcome,
    DistributedRunResult,
    DistributedWorker,
    RunHandle,
)

__all__ = [
    "BackendType",
    "BenchmarkResult",
    "ChipRunResult",
    "ChipWorker",
    "CompileOptions",
    "DfxOptions",
    "DispatchOutcome",
    "DistributedRunResult",
    "DistributedWorker",
    "ExecutionMode",
    "RoundStats",
    "RunConfig",
    "RunHandle",
    "benchmark",
    "execute_compiled",
    "execute_distributed_compiled",
]
