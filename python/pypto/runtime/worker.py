"""The execute layer: ChipWorker (one simulated chip, L2 programs) and
DistributedWorker (a set of rank agents, L3 programs). Both dispatch artifacts
with ``run(compiled, *args, config=...)``; arguments are arrays whose memory the
run uses directly, Out/InOut results are written into them. The GIL is released
while a run executes."""
import dataclasses
import threading
import time
from typing import Dict, List, Optional

from .. import _core
from .._arrays import as_array, as_arrays, core_dtype
from ..ir.compiled_program import CompiledProgram
from ..ir.distributed_compiled_program import DistributedCompiledProgram
from .run_config import RunConfig


@dataclasses.dataclass
class ChipRunResult:
    """One L2 dispatch: its times (ms), task count and DFX directory (when a switch was on)."""

    assemble_ms: float
    run_ms: float
    num_tasks: int
    dfx_dir: Optional[str]


@dataclasses.dataclass
class DispatchOutcome:
    """One dispatch of one rank, as it came back."""

    rank: int
    index: int
    program: str
    host: str
    start_unix_ns: int
    end_unix_ns: int
    timings_ns: Dict[str, int]

    @property
    def ms(self):
        return (self.end_unix_ns - self.start_unix_ns) / 1e6


@dataclasses.dataclass
class DistributedRunResult:
    """One L3 run: its wall time (ms) and every rank's dispatches (by rank, then k)."""

    wall_ms: float
    dispatches: List[DispatchOutcome]


def _distributed_result(d):
    return DistributedRunResult(d["wall_ms"], [DispatchOutcome(**x) for x in d["dispatches"]])


def _require(compiled, cls, entry):
    if not isinstance(compiled, cls):
        raise TypeError(f"{entry} takes a {cls.__name__} first, not {type(compiled).__name__}")


class ChipWorker:
    """The handle on one simulated chip. Keeps each program's assembled and loaded
    kernels between runs, so repeated runs of a program only dispatch."""

    def __init__(self, config=None):
        self._config = config
        self._core = None
        self._core_config = None
        self._lock = threading.Lock()

    def run(self, compiled, *args, config=None):
        """Runs ``compiled`` once. The config (this call's, else the worker's)
        decides the platform, device id, DFX and rings; without any, the
        program's own platform and defaults."""
        _require(compiled, CompiledProgram, "ChipWorker.run")
        config = config if config is not None else self._config
        program = compiled._core
        if config is None:
            config = RunConfig(platform=compiled.platform)
        else:
            program = program.with_platform(str(config.platform))
        arrays = as_arrays(args, compiled.params)
        core_config = config._to_core()
        with self._lock:
            if self._core is None or core_config != self._core_config:
                self._core = _core.ChipWorker(core_config)
                self._core_config = core_config
            return ChipRunResult(**self._core.run(program, arrays))


class RunHandle:
    """A submitted run. ``result()`` waits for it and returns its DistributedRunResult;
    the argument arrays then hold the outputs."""

    def __init__(self, worker, core_handle):
        self._worker = worker
        self._core = core_handle
        self._result = None

    def done(self):
        return self._result is not None or self._core.done()

    def result(self, timeout=None):
        """Waits until the run completes, at most ``timeout`` seconds (TimeoutError)."""
        if self._result is not None:
            return self._result
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while not self._core.done():
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the submitted run did not complete within {timeout} s")
                time.sleep(0.002)
        with self._worker._lock:
            self._result = _distributed_result(self._core.wait())
        return self._result


class DistributedWorker:
    """The handle on a set of rank agents, made by ``DistributedCompiledProgram.prepare()``.

    Any number of run()s or submit()s dispatch without relaunching; close() (or
    leaving a ``with`` block) shuts the agents down. A failure anywhere — a
    kernel error on one rank, a lost agent, an expired deadline, Ctrl-C — stops
    every agent; the worker then raises that first error again on every call.
    While the worker is open, Ctrl-C (SIGINT) is the worker's: it stops the
    agents, and the current or next call raises pypto.InterruptedError (a
    KeyboardInterrupt).
    """

    def __init__(self, core, programs, config, persistent):
        self._core = core
        self._programs = programs  # the C++ worker points into them: keep them alive
        self._config = config
        self._persistent = persistent
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def _prepare(cls, compiled, extra_compiled, config, persistent, startup_timeout_s):
        _require(compiled, DistributedCompiledProgram, "prepare")
        extra = list(extra_compiled)
        for e in extra:
            _require(e, DistributedCompiledProgram, "prepare(extra_compiled=...)")
        core = _core.DistributedWorker.prepare(
            compiled._core, [e._core for e in extra], float(startup_timeout_s))
        return cls(core, [compiled] + extra, config, persistent)

    @property
    def world(self):
        return self._core.world

    @property
    def prepare_report(self):
        """What prepare() shipped and compiled, per rank, and how long it took."""
        return self._core.prepare_report

    def _check(self, compiled, entry):
        _require(compiled, DistributedCompiledProgram, entry)
        if self._closed:
            raise RuntimeError(f"DistributedWorker.{entry} on a closed worker")
        if not any(p is compiled or p._core is compiled._core for p in self._programs):
            raise ValueError(
                f"{compiled.name} ({compiled.work_dir}) was not prepared on this worker; pass it "
                "to prepare(extra_compiled=[...])")

    def _config_of(self, config):
        config = config if config is not None else self._config
        return None if config is None else config._to_core()

    def run(self, compiled, *args, config=None, dispatch_timeout_s=None):
        """Runs every dispatch of ``compiled``'s host plan once; returns a
        DistributedRunResult. Out/InOut arrays are written in place."""
        self._check(compiled, "run")
        arrays = as_arrays(args, compiled.params)
        with self._lock:
            return _distributed_result(self._core.run(
                compiled._core, arrays, self._config_of(config), not self._persistent,
                dispatch_timeout_s))

    def submit(self, compiled, *args, config=None, dispatch_timeout_s=None):
        """Queues a run and returns a RunHandle at once (unless two runs are in
        flight: then it first waits for the oldest). Runs complete in order; the
        arrays must not be touched until the handle's result() returns."""
        self._check(compiled, "submit")
        arrays = as_arrays(args, compiled.params)
        with self._lock:
            handle = self._core.submit(compiled._core, arrays, self._config_of(config),
                                       not self._persistent, dispatch_timeout_s)
        return RunHandle(self, handle)

    # Resident tensors (docs/resident-tensors.md): data that stays in the agents
    # across runs. Pass one in place of an array to run()/submit(): it is neither
    # shipped nor returned.
    def alloc_stacked_tensor(self, part_shape, dtype):
        """A tensor of shape [world, *part_shape] whose row [r] lives on rank r,
        zero-filled."""
        with self._lock:
            return self._core.alloc_stacked_tensor(core_dtype(dtype), list(part_shape))

    def alloc_tensor(self, shape, dtype):
        """A tensor every rank holds a copy of, zero-filled; dispatches only read it."""
        with self._lock:
            return self._core.alloc_tensor(core_dtype(dtype), list(shape))

    def copy_to(self, resident, array):
        """Host -> agents: fills ``resident`` from ``array`` (same dtype and shape)."""
        with self._lock:
            self._core.copy_to(resident, as_array(array, "array"))

    def copy_from(self, resident, array):
        """Agents -> host: writes ``resident``'s data into ``array`` (same dtype and
        shape); returns ``array``."""
        with self._lock:
            self._core.copy_from(resident, as_array(array, "array"))
        return array

    def free(self, resident):
        """Frees ``resident`` on every rank; later use raises UsageError."""
        with self._lock:
            self._core.free(resident)

    def close(self):
        """Waits for every submitted run, shuts the agents down. Idempotent."""
        if self._closed:
            return
        with self._lock:
            self._closed = True
            self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the C++ destructor logs it
            pass
