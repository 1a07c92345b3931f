"""benchmark(): timed dispatches of a live program, prepared once."""
import dataclasses
import time
from typing import List, Optional

from .. import _core
from ..ir.compiled_program import CompiledProgram
from ..ir.distributed_compiled_program import DistributedCompiledProgram
from .worker import ChipWorker


@dataclasses.dataclass
class RoundStats:
    """Statistics of a set of times, in milliseconds (p90: nearest rank)."""

    rounds: int
    min_ms: float
    median_ms: float
    mean_ms: float
    p90_ms: float
    max_ms: float

    @classmethod
    def of(cls, ms):
        return cls(**_core.round_stats(list(ms)))


@dataclasses.dataclass
class BenchmarkResult:
    """``rounds``: the wall time of each timed round as the caller saw it;
    ``per_rank[r]``: rank r's device-side time per round (L2: the one chip's run
    time; L3: the sum of the rank's dispatches in the round); ``prepare_ms``:
    assembling (and for L3 launching and shipping) before the first round."""

    program: str
    prepare_ms: float
    round_ms: List[float]
    rounds: RoundStats
    per_rank: List[RoundStats]


def benchmark(compiled, args, rounds=100, warmup=3, config=None, worker=None):
    """Runs ``compiled`` ``warmup`` untimed and ``rounds`` timed times with ``args``
    (the Out arrays hold the last round's results). An L3 program runs on
    ``worker`` when given (a prepared DistributedWorker, left open), else on one
    prepared here and closed afterwards."""
    if rounds < 1:
        raise ValueError("benchmark needs rounds >= 1")
    if warmup < 0:
        raise ValueError("benchmark needs warmup >= 0")
    if isinstance(compiled, DistributedCompiledProgram):
        return _benchmark_l3(compiled, args, rounds, warmup, config, worker)
    if not isinstance(compiled, CompiledProgram):
        raise TypeError("benchmark takes a CompiledProgram or a DistributedCompiledProgram")
    chip = ChipWorker(config)
    start = time.perf_counter()
    chip.run(compiled, *args)  # assembles and loads once
    prepare_ms = (time.perf_counter() - start) * 1e3
    for _ in range(max(warmup - 1, 0)):
        chip.run(compiled, *args)
    wall, device = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        r = chip.run(compiled, *args)
        wall.append((time.perf_counter() - start) * 1e3)
        device.append(r.run_ms)
    return BenchmarkResult(compiled.name, prepare_ms, wall, RoundStats.of(wall),
                           [RoundStats.of(device)])


def _benchmark_l3(compiled, args, rounds, warmup, config, worker):
    own = worker is None
    start = time.perf_counter()
    if own:
        worker = compiled.prepare(config=config)
    prepare_ms = (time.perf_counter() - start) * 1e3
    try:
        for _ in range(warmup):
            worker.run(compiled, *args, config=config)
        wall = []
        per_rank = [[] for _ in range(compiled.world_size)]
        for _ in range(rounds):
            start = time.perf_counter()
            r = worker.run(compiled, *args, config=config)
            wall.append((time.perf_counter() - start) * 1e3)
            sums = [0.0] * compiled.world_size
            for d in r.dispatches:
                sums[d.rank] += d.ms
            for rank, ms in enumerate(sums):
                per_rank[rank].append(ms)
    finally:
        if own:
            worker.close()
    return BenchmarkResult(compiled.name, prepare_ms, wall, RoundStats.of(wall),
                           [RoundStats.of(ms) for ms in per_rank])
