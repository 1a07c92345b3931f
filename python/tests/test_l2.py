"""The seeds' entry points on single-chip (L2) builds: compile, from_dir, calls,
ChipWorker, RunConfig, arrays at the boundary, errors, the deprecated shim,
benchmark, replay and execute_artifact."""
import dataclasses
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import pypto
from pypto import ir
from pypto.runtime import (BackendType, ChipWorker, CompileOptions, DfxOptions, ExecutionMode,
                           RunConfig, benchmark, execute_compiled)
from pypto.runtime.debug import invalidate_binary_cache, replay

from conftest import (EXAMPLES, coord_binary, copy_fixture, golden, marker_lines, run_python)


@pytest.fixture(scope="module")
def vector_add(scratch):
    return copy_fixture(scratch, "l2/vector_add")


def inputs(dir_):
    return golden(dir_, "inputs", "a"), golden(dir_, "inputs", "b")


# --- from_dir and calls ------------------------------------------------------------------------

def test_from_dir_call_writes_into_the_callers_array(vector_add):
    compiled = ir.CompiledProgram.from_dir(vector_add)
    assert compiled.name == "vector_add"
    assert compiled.platform == "a2a3sim"
    assert compiled.program is None
    assert [p.name for p in compiled.params] == ["a", "b", "c"]
    a, b = inputs(vector_add)
    # c is a view into the middle of a bigger buffer: filled only if the run used its memory.
    buffer = np.full(3072, -1.0, dtype=np.float32)
    c = buffer[1024:2048]
    assert compiled(a, b, c) is None
    np.testing.assert_allclose(c, golden(vector_add, "expected", "c"), rtol=1e-6)
    assert np.all(buffer[:1024] == -1.0) and np.all(buffer[2048:] == -1.0)


def test_chip_worker_runs_repeatedly_and_keeps_its_kernels(vector_add):
    compiled = ir.CompiledProgram.from_dir(vector_add)
    worker = ChipWorker()
    a, b = inputs(vector_add)
    results = []
    for scale in (1.0, 2.0, 3.0):
        c = np.zeros(1024, dtype=np.float32)
        results.append(worker.run(compiled, a * scale, b * scale, c))
        np.testing.assert_allclose(c, (a + b) * scale, rtol=1e-6)
    assert all(r.num_tasks >= 1 for r in results)
    assert results[2].assemble_ms < 1000  # loaded once: later runs only dispatch


def test_from_dir_platform_override_is_checked(vector_add):
    assert ir.CompiledProgram.from_dir(vector_add, platform="a2a3").platform == "a2a3"
    with pytest.raises(pypto.UsageError, match="a5sim"):
        ir.CompiledProgram.from_dir(vector_add, platform="a5sim")


# --- arrays at the boundary --------------------------------------------------------------------

def test_non_contiguous_array_is_refused(vector_add):
    compiled = ir.CompiledProgram.from_dir(vector_add)
    a, b = inputs(vector_add)
    strided = np.zeros(2048, dtype=np.float32)[::2]
    with pytest.raises(pypto.UsageError, match="argument 'c': the array is not C-contiguous"):
        compiled(a, b, strided)


def test_byte_swapped_array_is_refused(vector_add):
    compiled = ir.CompiledProgram.from_dir(vector_add)
    a, b = inputs(vector_add)
    with pytest.raises(pypto.UsageError, match="argument 'a': the array is byte-swapped"):
        compiled(a.astype(">f4"), b, np.zeros(1024, np.float32))


def test_wrong_dtype_shape_count_and_read_only_output(vector_add):
    compiled = ir.CompiledProgram.from_dir(vector_add)
    a, b = inputs(vector_add)
    c = np.zeros(1024, np.float32)
    with pytest.raises(pypto.UsageError, match="'a'"):
        compiled(a.astype(np.float64), b, c)
    with pytest.raises(pypto.UsageError, match="'b'"):
        compiled(a, b[:512].copy(), c)
    with pytest.raises(pypto.UsageError, match="takes 3 argument"):
        compiled(a, b)
    c.flags.writeable = False
    with pytest.raises(pypto.UsageError, match="'c' is an Out parameter, and its array is read-only"):
        compiled(a, b, c)


def test_objects_with_array_interface_are_used_without_copy(vector_add):
    class Exported:  # what torch-like libraries expose
        def __init__(self, array):
            self.array = array
            self.__array_interface__ = array.__array_interface__

    compiled = ir.CompiledProgram.from_dir(vector_add)
    a, b = inputs(vector_add)
    c = np.zeros(1024, np.float32)
    compiled(Exported(a), Exported(b), Exported(c))
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


# --- the GIL -----------------------------------------------------------------------------------

def test_the_gil_is_released_while_a_run_executes(vector_add):
    compiled = ir.CompiledProgram.from_dir(vector_add)
    worker = ChipWorker()
    a, b = inputs(vector_add)
    c = np.zeros(1024, np.float32)
    worker.run(compiled, a, b, c)  # load first
    spins = [0]
    stop = threading.Event()

    def spin():  # gives the GIL back every 1000 spins, so the main thread can go on
        while not stop.is_set():
            spins[0] += 1
            if spins[0] % 1000 == 0:
                time.sleep(0)

    previous = sys.getswitchinterval()
    # With a 10 s switch interval the spinning thread only runs while the main
    # thread has released the GIL itself.
    sys.setswitchinterval(10.0)
    thread = threading.Thread(target=spin)
    try:
        thread.start()
        before = spins[0]
        for _ in range(20):
            worker.run(compiled, a, b, c)
        during = spins[0] - before
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(previous)
    assert during > 1000


# --- errors ------------------------------------------------------------------------------------

def test_cpp_errors_arrive_as_their_python_classes(scratch, tmp_path):
    with pytest.raises(pypto.InfraError) as missing:
        ir.CompiledProgram.from_dir(tmp_path / "absent")
    assert missing.value.exit_code == 3
    with pytest.raises(pypto.ArtifactError, match="kernel_config.json"):
        ir.CompiledProgram.from_dir(copy_fixture(scratch, "l2_broken/truncated_sidecar"))

    def run(fixture):
        d = copy_fixture(scratch, fixture)
        compiled = ir.CompiledProgram.from_dir(d)
        a, b = golden(d, "inputs", "a"), golden(d, "inputs", "b")
        compiled(a, b, np.zeros_like(a))

    with pytest.raises(pypto.KernelRuntimeError, match="vadd") as runtime:
        run("l2_broken/runtime_error")
    assert runtime.value.exit_code == 1
    with pytest.raises(pypto.KernelCompileError, match="kernels/aiv/vadd.cpp"):
        run("l2_broken/compile_error")
    assert issubclass(pypto.ValidationError, AssertionError)
    assert issubclass(pypto.InterruptedError, KeyboardInterrupt)


# --- ir.compile --------------------------------------------------------------------------------

def test_compile_a_path_with_the_configs_compile_kwargs(tmp_path):
    config = RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / "softmax"))
    compiled = ir.compile(EXAMPLES / "softmax.ptl", **config.compile_kwargs())
    assert isinstance(compiled, ir.CompiledProgram)
    assert Path(compiled.work_dir) == tmp_path / "softmax"
    x = golden(compiled.work_dir, "inputs", compiled.params[0].name)
    out_param = compiled.params[1]
    y = np.zeros(out_param.shape, np.float32)
    compiled(x, y, config=config)
    np.testing.assert_allclose(y, golden(compiled.work_dir, "expected", out_param.name),
                               rtol=1e-5, atol=1e-6)


def test_compile_source_text_and_its_diagnostics(tmp_path):
    source = (EXAMPLES / "softmax.ptl").read_text()
    compiled = ir.compile(source, output_dir=tmp_path / "text")
    assert compiled.name == ir.CompiledProgram.from_dir(tmp_path / "text").name
    with pytest.raises(pypto.ProgramError, match="error"):
        ir.compile("fn broken( {\n", output_dir=tmp_path / "broken")
    with pytest.raises(pypto.UsageError, match="dump_passes=True is not supported"):
        ir.compile(source, output_dir=tmp_path / "x", dump_passes=True)
    with pytest.raises(pypto.UsageError, match="unknown platform 'x86'"):
        ir.compile(source, output_dir=tmp_path / "y", platform="x86")


# --- RunConfig ---------------------------------------------------------------------------------

def test_run_config_platform_axes_and_replace():
    assert RunConfig(arch=BackendType.Ascend950, execution_mode=ExecutionMode.ONBOARD).platform == "a5"
    assert RunConfig(platform="a5").arch is BackendType.Ascend950
    assert RunConfig().platform == "a2a3sim"
    cfg = RunConfig(platform="a2a3", enable_pmu=2)
    assert dataclasses.replace(cfg, device_id=3).platform == "a2a3"
    assert dataclasses.replace(cfg, arch=BackendType.Ascend950).platform == "a5"
    assert dataclasses.replace(cfg, platform="a5sim").execution_mode is ExecutionMode.SIM
    assert cfg.backend_type is BackendType.Ascend910B
    with pytest.raises(pypto.UsageError, match="unknown platform 'x86'"):
        RunConfig(platform="x86")
    with pytest.raises(pypto.UsageError, match="ring_heap"):
        RunConfig(ring_heap=3)


def test_run_config_views_cover_every_field():
    from pypto import _core

    owned = {name: owner for name, owner, _ in _core.run_config_fields()}
    fields = [f.name for f in dataclasses.fields(RunConfig)]
    assert sorted(fields) == sorted(owned)
    cfg = RunConfig(platform="a5sim", enable_dep_gen=True, device_id=2, save_kernels_dir="out",
                    ring_heap=1 << 20)
    assert cfg.dfx_options() == DfxOptions(enable_dep_gen=True)
    run = cfg.run_options()
    assert (run.platform, run.device_id, run.ring_heap, run.dfx) == ("a5sim", 2, 1 << 20,
                                                                      DfxOptions(enable_dep_gen=True))
    assert cfg.compile_options().output_dir == "out"
    # compile_kwargs() is the C++ RunConfig's mapping, key for key.
    kwargs = cfg.compile_kwargs()
    assert set(kwargs) == set(json.loads(_core.compile_kwargs(cfg._to_core())))
    assert kwargs == cfg.compile_options().as_compile_kwargs()
    assert CompileOptions(platform="a2a3").as_compile_kwargs()["platform"] == "a2a3"


# --- the deprecated shim and its precedence ----------------------------------------------------

def test_execute_compiled_warns_and_its_explicit_arguments_win(scratch):
    (scratch / "shim").mkdir()
    d = copy_fixture(scratch / "shim", "l2/vector_add")
    a, b = inputs(d)
    cfg = RunConfig(enable_dep_gen=True)
    c = np.zeros(1024, np.float32)
    with pytest.warns(DeprecationWarning, match="execute_compiled is deprecated"):
        result = execute_compiled(d, [a, b, c], config=cfg)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    assert result.dfx_dir is None  # the config's DFX switch lost to the explicit dfx (off)
    with pytest.warns(DeprecationWarning):
        result = execute_compiled(d, [a, b, c], dfx=DfxOptions(enable_dep_gen=True))
    assert result.dfx_dir is not None and (Path(result.dfx_dir) / "deps.json").is_file()
    # The explicit platform wins over the config's a2a3sim: onboard cannot run here.
    with pytest.warns(DeprecationWarning), pytest.raises(pypto.InfraError, match="a2a3"):
        execute_compiled(d, [a, b, c], platform="a2a3", config=cfg)


def test_call_with_a_config_lets_the_config_decide(scratch):
    (scratch / "call").mkdir()
    d = copy_fixture(scratch / "call", "l2/vector_add")
    a, b = inputs(d)
    c = np.zeros(1024, np.float32)
    # from_dir's platform only decides a call without a config.
    compiled = ir.CompiledProgram.from_dir(d, platform="a2a3")
    with pytest.raises(pypto.InfraError):
        compiled(a, b, c)
    compiled(a, b, c, config=RunConfig(enable_dep_gen=True))
    assert list((d / "dfx_outputs").rglob("deps.json"))


# --- benchmark ---------------------------------------------------------------------------------

def test_benchmark_statistics(vector_add):
    compiled = ir.CompiledProgram.from_dir(vector_add)
    a, b = inputs(vector_add)
    c = np.zeros(1024, np.float32)
    stats = benchmark(compiled, [a, b, c], rounds=7, warmup=2)
    assert stats.program == "vector_add"
    assert len(stats.round_ms) == 7 and stats.rounds.rounds == 7
    r = stats.rounds
    assert 0 < r.min_ms <= r.median_ms <= r.p90_ms <= r.max_ms
    assert r.min_ms == min(stats.round_ms) and r.max_ms == max(stats.round_ms)
    assert len(stats.per_rank) == 1 and stats.per_rank[0].rounds == 7
    assert stats.per_rank[0].max_ms <= r.max_ms
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


# --- replay ------------------------------------------------------------------------------------

def test_replay_after_a_kernel_edit(scratch):
    (scratch / "replay").mkdir()
    d = copy_fixture(scratch / "replay", "l2/vector_add")
    # Edit the .pto listing (newer than ptoas/vadd.cpp): replay splices it into the kernel.
    pto = d / "ptoas" / "vadd.pto"
    pto.write_text(pto.read_text().replace("tadd", "tsub"))
    with pytest.raises(pypto.ValidationError, match="output 'c'"):
        replay(d, validate=True)
    assert "tsub" in (d / "ptoas" / "vadd.pto").read_text()
    a, b = inputs(d)
    c = np.zeros(1024, np.float32)
    assert replay(d, a, b, c, recompile=False)[2] is c  # the edited binary, from the cache
    np.testing.assert_allclose(c, a - b, rtol=1e-6)
    assert invalidate_binary_cache(d) >= 1


def test_replay_command_line(vector_add):
    r = run_python(["-m", "pypto.runtime.debug.replay", str(vector_add), "--validate",
                    "--dep-gen", "--no-recompile", "--log-level", "warn"])
    assert r.returncode == 0, r.stderr
    assert "cache: kept (--no-recompile)" in r.stdout
    assert "validation: passed" in r.stdout


# --- execute_artifact --------------------------------------------------------------------------

def test_execute_artifact_prints_pypto_coord_execs_markers(scratch, tmp_path):
    (scratch / "exec").mkdir()
    good = copy_fixture(scratch / "exec", "l2/vector_add")
    broken = copy_fixture(scratch / "exec", "l2_broken/runtime_error")
    sidecar = copy_fixture(scratch / "exec", "l2_broken/truncated_sidecar")
    for d, marker, code in ((good, "PYPTO_EXEC_RESULT=PASS device=0", 0),
                            (broken, "PYPTO_EXEC_RESULT=FAIL", 1),
                            (sidecar, "PYPTO_EXEC_RESULT=INFRA", 3)):
        py = run_python(["-m", "pypto.runtime.execute_artifact", "--work-dir", str(d)])
        cpp = subprocess.run([coord_binary(), "exec", str(d)], capture_output=True, text=True,
                             timeout=300)
        assert (py.returncode, cpp.returncode) == (code, code), py.stderr
        assert marker_lines(py.stdout) == [marker] == marker_lines(cpp.stdout)
        assert py.stdout == cpp.stdout
    manifest = tmp_path / "batch.json"
    manifest.write_text(json.dumps([{"work_dir": str(good)}, {"work_dir": str(broken)}]))
    py = run_python(["-m", "pypto.runtime.execute_artifact", "--batch-manifest", str(manifest)])
    cpp = subprocess.run([coord_binary(), "exec", "--manifest", str(manifest)],
                         capture_output=True, text=True, timeout=300)
    assert py.returncode == cpp.returncode == 1
    assert py.stdout == cpp.stdout
    assert marker_lines(py.stdout) == [f"PYPTO_EXEC_RESULT=PASS work_dir={good} device=0",
                                       f"PYPTO_EXEC_RESULT=FAIL work_dir={broken}"]


BF16_DOUBLE = """
kernel aiv double(x: in bf16[1, 64], y: out bf16[1, 64]) {
  let t = load(x, [0, 0], [1, 64])
  store(add(t, t), y, [0, 0])
}
chip main(x: in bf16[1, 64], y: out bf16[1, 64]) { double(x, y) }
"""


def bf16_bits(values):
    """bf16 bits of float32 values that bf16 holds exactly."""
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def test_bf16_arrays_are_their_bits_without_ml_dtypes(tmp_path):
    from pypto import _arrays
    compiled = ir.compile(BF16_DOUBLE, output_dir=tmp_path / "bf16")
    values = np.linspace(-4, 4, 64, dtype=np.float32).reshape(1, 64)
    values = (bf16_bits(values).astype(np.uint32) << 16).view(np.float32)  # exact in bf16
    if _arrays.BFLOAT16 is None:
        x = bf16_bits(values)
        y = np.zeros((1, 64), np.uint16)
    else:  # ml_dtypes installed: bf16 arrays proper
        x = values.astype(_arrays.BFLOAT16)
        y = np.zeros((1, 64), _arrays.BFLOAT16)
    compiled(x, y)
    doubled = (y.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(doubled, 2 * values)  # doubling is exact in bf16
    with pytest.raises(pypto.UsageError, match="'x'"):
        compiled(values, y)  # float32 is not bf16


def test_dlpack_objects_are_inputs_only(vector_add):
    class DLPackOnly:  # an exporter without __array_interface__ / __array__
        def __init__(self, array):
            self._array = array

        def __dlpack__(self, stream=None):
            return self._array.__dlpack__()

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    compiled = ir.CompiledProgram.from_dir(vector_add)
    a, b = inputs(vector_add)
    c = np.zeros(1024, np.float32)
    compiled(DLPackOnly(a), DLPackOnly(b), c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    with pytest.raises(pypto.UsageError, match="'c' is an Out parameter, and its array is read-only"):
        compiled(a, b, DLPackOnly(c))


def test_execute_artifact_dir_in_process(scratch, capfd):
    from pypto.runtime.execute_artifact import execute_artifact_dir

    (scratch / "exec_dir").mkdir()
    d = copy_fixture(scratch / "exec_dir", "l2/vector_add")
    assert execute_artifact_dir(d, dfx=DfxOptions(enable_dep_gen=True)) == 0
    assert marker_lines(capfd.readouterr().out) == ["PYPTO_EXEC_RESULT=PASS device=0"]
    assert (d / "dfx_outputs" / "deps.json").is_file()


def test_every_command_answers_version_like_the_binaries():
    revision = pypto.__source_revision__
    assert revision and pypto.__version__
    for module in ("pypto.runtime.execute_artifact", "pypto.runtime.debug.replay"):
        r = run_python(["-m", module, "--version"])
        assert r.returncode == 0, r.stderr
        assert r.stdout.endswith(f" {pypto.__version__} (source revision {revision})\n")
    cpp = subprocess.run([coord_binary(), "--version"], capture_output=True, text=True, timeout=60)
    assert cpp.stdout == f"pypto-coord {pypto.__version__} (source revision {revision})\n"
