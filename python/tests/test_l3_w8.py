"""An 8-rank (L3) build through one prepared worker: run, submit, benchmark."""
import numpy as np
import pytest

import pypto
from pypto import ir
from pypto.ir import DistributedConfig
from pypto.runtime import benchmark

from conftest import copy_fixture, golden


@pytest.fixture(scope="module")
def compiled(scratch):
    return ir.DistributedCompiledProgram.from_dir(copy_fixture(scratch, "l3/allreduce_w8"))


def arguments(compiled):
    x = golden(compiled.work_dir, "inputs", "x")
    return x, np.zeros_like(x)


def test_device_ids_override(compiled):
    ids = [7, 6, 5, 4, 3, 2, 1, 0]
    overridden = ir.DistributedCompiledProgram.from_dir(
        compiled.work_dir, distributed_config=DistributedConfig(device_ids=ids))
    assert overridden.device_ids == ids
    assert compiled.device_ids == list(range(8))
    with pytest.raises(pypto.UsageError, match="8"):
        ir.DistributedCompiledProgram.from_dir(compiled.work_dir, device_ids=[0, 1])


def test_one_worker_runs_submits_and_benchmarks(compiled):
    expected = golden(compiled.work_dir, "expected", "y")
    with compiled.prepare(startup_timeout_s=120) as worker:
        assert worker.world == 8
        assert len(worker.prepare_report["ranks"]) == 8
        x, y = arguments(compiled)
        result = worker.run(compiled, x, y)
        np.testing.assert_allclose(y, expected, rtol=1e-6)
        assert sorted({d.rank for d in result.dispatches}) == list(range(8))

        runs = [arguments(compiled) for _ in range(2)]
        handles = [worker.submit(compiled, x, y) for x, y in runs]
        for handle, (_, y) in zip(handles, runs):
            handle.result(timeout=120)
            np.testing.assert_allclose(y, expected, rtol=1e-6)

        x, y = arguments(compiled)
        stats = benchmark(compiled, [x, y], rounds=3, warmup=1, worker=worker)
        assert stats.rounds.rounds == 3 and len(stats.per_rank) == 8
        assert all(r.rounds == 3 and r.min_ms > 0 for r in stats.per_rank)
        np.testing.assert_allclose(y, expected, rtol=1e-6)
