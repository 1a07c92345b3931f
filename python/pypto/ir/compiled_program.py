"""CompiledProgram: an L2 (single-chip) build directory as a callable program.

from_dir() reloads the sidecars only: it neither splices ptoas/*.pto nor
invalidates the binary cache (pypto.runtime.debug.replay does both).
"""
import os

from .. import _core
from .param_info import ParamInfo, params_from_core  # noqa: F401 - re-exported


class CompiledProgram:
    """The artifact of an L2 compile. Call it to dispatch once."""

    def __init__(self, core):
        self._core = core
        # The IR is not persisted; a program from a build directory has none.
        self.program = None

    @classmethod
    def from_dir(cls, work_dir, platform=None):
        """Loads the build in ``work_dir``; ``platform`` overrides the recorded one
        (within its architecture: a2a3sim -> a2a3) for calls without a config."""
        return cls(_core.CompiledProgram.from_dir(os.fspath(work_dir), platform))

    @property
    def name(self):
        return self._core.name

    @property
    def work_dir(self):
        return self._core.dir

    @property
    def platform(self):
        """The platform a call without ``config`` runs on."""
        return self._core.platform

    @property
    def recorded_platform(self):
        return self._core.recorded_platform

    @property
    def params(self):
        return params_from_core(self._core.params)

    def __call__(self, *args, config=None):
        """Runs the program once on a fresh ChipWorker. With ``config`` the config
        decides everything about the run (platform, device id, DFX, rings);
        without, the recorded (or from_dir-overridden) platform and defaults.
        Out/InOut arrays are written in place."""
        from ..runtime.worker import ChipWorker

        ChipWorker().run(self, *args, config=config)

    def __repr__(self):
        return f"CompiledProgram({self.name!r}, work_dir={self.work_dir!r}, platform={self.platform!r})"
