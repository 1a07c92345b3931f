"""The seeds' entry points on a 2-rank (L3) build. One worker, prepared once in a
``with`` block, serves most tests; the others launch their own agents (each
test says why)."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import pypto
from pypto import ir
from pypto.runtime import RunConfig, benchmark, execute_distributed_compiled
from pypto.runtime.debug import replay

from conftest import (EXAMPLES, coord_binary, copy_fixture, golden, marker_lines, run_python)


@pytest.fixture(scope="module")
def build(scratch):
    """examples/allreduce.ptl compiled for 2 ranks."""
    compiled = ir.compile(EXAMPLES / "allreduce.ptl", world=2, output_dir=scratch / "allreduce")
    assert isinstance(compiled, ir.DistributedCompiledProgram)
    return compiled


@pytest.fixture(scope="module")
def fixture_w2(scratch):
    return ir.DistributedCompiledProgram.from_dir(copy_fixture(scratch, "l3/allreduce_w2"))


@pytest.fixture(scope="module")
def worker(build, fixture_w2):
    with build.prepare(extra_compiled=[fixture_w2]) as w:
        yield w
    with pytest.raises(RuntimeError, match="closed worker"):
        w.run(build, *arguments(build))


def arguments(compiled):
    x = golden(compiled.work_dir, "inputs", "x")
    return x, np.zeros_like(x)


def expected(compiled):
    return golden(compiled.work_dir, "expected", "y")


def test_compile_returns_a_distributed_program(build):
    assert build.world_size == 2
    assert build.device_ids == [0, 1]
    assert [p.name for p in build.params] == ["x", "y"]


def test_worker_run_writes_into_the_callers_array(worker, build):
    assert worker.world == 2
    x, y = arguments(build)
    address = y.ctypes.data
    result = worker.run(build, x, y)
    assert y.ctypes.data == address
    np.testing.assert_allclose(y, expected(build), rtol=1e-6)
    assert sorted({d.rank for d in result.dispatches}) == [0, 1]
    assert result.wall_ms > 0


def test_worker_runs_every_prepared_program(worker, fixture_w2):
    x, y = arguments(fixture_w2)
    worker.run(fixture_w2, x, y, config=RunConfig(enable_dep_gen=True))
    np.testing.assert_allclose(y, expected(fixture_w2), rtol=1e-6)


def test_submit_then_result(worker, build):
    runs = [arguments(build) for _ in range(3)]
    handles = [worker.submit(build, x, y) for x, y in runs]
    for handle, (x, y) in zip(handles, runs):
        result = handle.result(timeout=120)
        assert handle.done()
        assert len(result.dispatches) >= 2
        np.testing.assert_allclose(y, expected(build), rtol=1e-6)


def test_bad_arguments_leave_the_worker_usable(worker, build, tmp_path):
    x, y = arguments(build)
    with pytest.raises(pypto.UsageError, match="'x'"):
        worker.run(build, x[:1].copy(), y)
    other = ir.compile(EXAMPLES / "allreduce.ptl", world=2, output_dir=tmp_path / "other")
    with pytest.raises(ValueError, match="was not prepared on this worker"):
        worker.run(other, x, y)
    worker.run(build, x, y)
    np.testing.assert_allclose(y, expected(build), rtol=1e-6)


def test_resident_tensors_stay_in_the_agents(worker, build):
    x_host, _ = arguments(build)
    x = worker.alloc_stacked_tensor(x_host.shape[1:], np.float32)
    y = worker.alloc_stacked_tensor(x_host.shape[1:], "f32")
    assert x.shape == x_host.shape and x.layout == "stacked" and x.dtype == "f32"
    worker.copy_to(x, x_host)
    for _ in range(2):
        worker.run(build, x, y)  # nothing shipped, nothing returned
    y_host = worker.copy_from(y, np.zeros_like(x_host))
    np.testing.assert_allclose(y_host, expected(build), rtol=1e-6)
    # Mixed: a resident input, a host output.
    y_array = np.zeros_like(x_host)
    worker.run(build, x, y_array)
    np.testing.assert_allclose(y_array, expected(build), rtol=1e-6)
    with pytest.raises(pypto.UsageError, match="differ in dtype or shape"):
        worker.copy_to(x, x_host[:1].copy())
    worker.free(y)
    assert y.freed
    with pytest.raises(pypto.UsageError, match="was freed"):
        worker.run(build, x, y)
    worker.run(build, x, y_array)  # still usable
    worker.free(x)


def test_benchmark_on_a_prepared_worker(worker, build):
    x, y = arguments(build)
    stats = benchmark(build, [x, y], rounds=4, warmup=1, worker=worker)
    assert stats.rounds.rounds == 4 and len(stats.round_ms) == 4
    assert len(stats.per_rank) == 2
    for rank in stats.per_rank:
        assert rank.rounds == 4 and 0 < rank.min_ms <= rank.max_ms <= stats.rounds.max_ms
    np.testing.assert_allclose(y, expected(build), rtol=1e-6)


# --- calls that launch their own agents ---------------------------------------------------------

def test_from_dir_call(fixture_w2):
    # A program object's call is one prepare + run + close.
    compiled = ir.DistributedCompiledProgram.from_dir(fixture_w2.work_dir, platform="a2a3sim")
    x, y = arguments(compiled)
    compiled(x, y, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_allclose(y, expected(compiled), rtol=1e-6)


def test_execute_distributed_compiled_is_deprecated(fixture_w2):
    x, y = arguments(fixture_w2)
    with pytest.warns(DeprecationWarning, match="execute_distributed_compiled is deprecated"):
        execute_distributed_compiled(fixture_w2.work_dir, [x, y])
    np.testing.assert_allclose(y, expected(fixture_w2), rtol=1e-6)


def test_replay_validates_through_the_rebuilt_program(build):
    arrays = replay(build.work_dir, validate=True, config=RunConfig(enable_dep_gen=True))
    np.testing.assert_allclose(arrays[1], expected(build), rtol=1e-6)
    assert (build.work_dir and os.path.isdir(os.path.join(build.work_dir, "dfx_outputs", "rank1")))


def test_execute_artifact_matches_pypto_coord_exec(fixture_w2):
    py = run_python(["-m", "pypto.runtime.execute_artifact", "--work-dir", fixture_w2.work_dir])
    cpp = subprocess.run([coord_binary(), "exec", fixture_w2.work_dir], capture_output=True,
                         text=True, timeout=300)
    assert py.returncode == cpp.returncode == 0, py.stderr
    assert marker_lines(py.stdout) == ["PYPTO_EXEC_RESULT=PASS device=0,1"]
    assert py.stdout == cpp.stdout


def test_a_rank_kernel_error_raises_kernel_runtime_error(scratch):
    compiled = ir.DistributedCompiledProgram.from_dir(
        copy_fixture(scratch, "l3_broken/kernel_error_w4"))
    x, y = arguments(compiled)
    with compiled.prepare() as w:
        with pytest.raises(pypto.KernelRuntimeError, match="rank 2") as error:
            w.run(compiled, x, y)
        assert "injected failure on rank 2" in str(error.value)
        # The worker has stopped: every later call raises that first error again.
        with pytest.raises(pypto.KernelRuntimeError, match="rank 2"):
            w.run(compiled, x, y)


def test_ctrl_c_raises_keyboard_interrupt_and_stops_the_agents(scratch):
    slow = copy_fixture(scratch, "l3_broken/slow_w2")
    script = textwrap.dedent(f"""
        import os
        import sys
        import numpy as np
        from pypto import ir
        compiled = ir.DistributedCompiledProgram.from_dir({str(slow)!r})
        x = np.load({str(slow / "golden" / "inputs" / "x.npy")!r})
        with compiled.prepare() as worker:
            print("prepared", flush=True)
            try:
                worker.run(compiled, x, np.zeros_like(x))
            except KeyboardInterrupt as e:
                print("interrupted:", type(e).__module__, type(e).__name__, e, flush=True)
                pid = os.getpid()
                with open(f"/proc/{{pid}}/task/{{pid}}/children") as f:
                    print("children:", len(f.read().split()), flush=True)
                sys.exit(130)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "prepared"
        time.sleep(1.0)  # inside the 20 s dispatch
        started = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert "interrupted: pypto.errors InterruptedError" in out
    assert time.monotonic() - started < 15
    assert "children: 0" in out  # mpirun (and with it every agent) is gone


def test_persistent_worker_keeps_the_windows(scratch):
    # accumulate_w2 adds into a window it never clears: y grows run by run unless
    # the windows are reset (the default).
    compiled = ir.DistributedCompiledProgram.from_dir(copy_fixture(scratch, "l3/accumulate_w2"))
    x, y = arguments(compiled)
    with compiled.prepare(persistent=True) as worker:
        worker.run(compiled, x, y)
        first = y.copy()
        np.testing.assert_allclose(first, expected(compiled), rtol=1e-6)
        worker.run(compiled, x, y)
        assert not np.allclose(y, first)
