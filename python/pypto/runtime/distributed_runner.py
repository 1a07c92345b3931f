"""The deprecated L3 execute path: a pure rename of from_dir plus one call."""
import warnings

from ..ir.distributed_compiled_program import DistributedCompiledProgram


def execute_distributed_compiled(work_dir, args, config=None, platform=None):
    """Deprecated: use
    ``ir.DistributedCompiledProgram.from_dir(work_dir, platform=...)(*args, config=cfg)``."""
    warnings.warn(
        "execute_distributed_compiled is deprecated; use "
        "ir.DistributedCompiledProgram.from_dir(work_dir, platform=...)(*args, config=cfg)",
        DeprecationWarning, stacklevel=2)
    DistributedCompiledProgram.from_dir(work_dir, platform=platform)(*args, config=config)
