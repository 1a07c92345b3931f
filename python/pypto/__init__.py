"""pypto: the seeds' Python entry points over this project's C++ core.

    from pypto import ir
    from pypto.runtime import RunConfig

    compiled = ir.compile("examples/softmax.ptl", **RunConfig().compile_kwargs())
    compiled(x, y)                      # outputs are written into y

docs/python.md describes every entry point.
"""
import os as _os

from . import _paths


def _default_environment():
    # The C++ core finds pypto-rank, the kernel headers, the .ptl library and
    # pypto-ptoas beside its own executable, which here is the Python
    # interpreter; point it at this package's build or install instead. A value
    # the user set wins.
    for name, value in (
        ("PYPTO_RANK", _paths.RANK_BINARY),
        ("PYPTO_INCLUDE_DIR", _paths.INCLUDE_DIR),
        ("PYPTO_PTL_LIB_DIR", _paths.PTL_LIB_DIR),
        ("PTOAS_ROOT", _paths.PTOAS_DIR),
    ):
        if not _os.environ.get(name) and _os.path.exists(value):
            _os.environ[name] = value


_default_environment()

from .errors import (  # noqa: E402
    ArtifactError,
    Error,
    InfraError,
    InterruptedError,
    KernelCompileError,
    KernelRuntimeError,
    ProgramError,
    ToolError,
    UsageError,
    ValidationError,
)
from . import _core, ir, runtime  # noqa: E402

__version__ = _core.release_version()
# git describe of the source tree this package was built from.
__source_revision__ = _core.source_revision()

__all__ = [
    "ArtifactError",
    "Error",
    "InfraError",
    "InterruptedError",
    "KernelCompileError",
    "KernelRuntimeError",
    "ProgramError",
    "ToolError",
    "UsageError",
    "ValidationError",
    "ir",
    "runtime",
]
