"""DistributedCompiledProgram: an L3 (multi-chip) build directory, and the
DistributedConfig that selects it at compile time. pypto.runtime imports this
module directly (the one import from the runtime into pypto.ir)."""
import dataclasses
import os
from typing import List

from .. import _core
from .param_info import params_from_core


@dataclasses.dataclass
class DistributedConfig:
    """Compile-side settings of an L3 program: one device id per rank."""

    device_ids: List[int] = dataclasses.field(default_factory=lambda: [0])
    runtime: str = "tensormap_and_ringbuffer"
    aicpu_thread_num: int = 4
    num_sub_workers: int = 0

    def _to_core(self):
        return dataclasses.asdict(self)


class DistributedCompiledProgram:
    """The artifact of an L3 compile: a host plan and one sub-build per rank."""

    def __init__(self, core):
        self._core = core
        self.program = None

    @classmethod
    def from_dir(cls, work_dir, platform=None, distributed_config=None, device_ids=None):
        """Loads the build in ``work_dir``. ``platform`` overrides the recorded one
        within its architecture; ``distributed_config`` (or ``device_ids``)
        overrides the recorded device ids, one per rank."""
        if distributed_config is not None:
            if device_ids is not None:
                raise TypeError("pass distributed_config or device_ids, not both")
            device_ids = distributed_config.device_ids
        return cls(
            _core.DistributedCompiledProgram.from_dir(
                os.fspath(work_dir), platform, None if device_ids is None else list(device_ids)
            )
        )

    @property
    def name(self):
        return self._core.name

    @property
    def work_dir(self):
        return self._core.dir

    @property
    def platform(self):
        return self._core.platform

    @property
    def recorded_platform(self):
        return self._core.recorded_platform

    @property
    def world_size(self):
        return self._core.world_size

    @property
    def device_ids(self):
        return list(self._core.device_ids)

    @property
    def params(self):
        return params_from_core(self._core.params)

    def prepare(self, config=None, extra_compiled=(), persistent=False, startup_timeout_s=120.0):
        """Launches the rank agents (``mpirun -n <world> pypto-rank``) and prepares
        this program and every one of ``extra_compiled`` on them. Returns a
        DistributedWorker: run()/submit() any number of times, then close() (or
        use it as a context manager). ``config`` is the default RunConfig of its
        runs; ``persistent=True`` keeps the windows' contents between runs."""
        from ..runtime.worker import DistributedWorker

        return DistributedWorker._prepare(
            self, extra_compiled, config=config, persistent=persistent,
            startup_timeout_s=startup_timeout_s,
        )

    def __call__(self, *args, config=None):
        """Runs the program once: launches the agents, runs every dispatch, writes
        the Out/InOut arrays in place, shuts the agents down."""
        with self.prepare(config=config) as worker:
            worker.run(self, *args)

    def __repr__(self):
        return (f"DistributedCompiledProgram({self.name!r}, work_dir={self.work_dir!r}, "
                f"world_size={self.world_size})")
