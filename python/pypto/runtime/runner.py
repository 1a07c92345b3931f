"""The deprecated L2 execute path, and RunOptions (internal: dispatch entries
take a RunConfig).

execute_compiled's precedence differs from CompiledProgram.__call__'s:

    setting                      execute_compiled      CompiledProgram.__call__
    platform                     the explicit argument config.platform if config, else the build's
    device_id/dfx/aicpu_threads  the explicit argument from config
    ring overrides               from config           from config

so the migration merges the explicit arguments into the config:
``dataclasses.replace(cfg, platform="a2a3", device_id=0)``.
"""
import dataclasses
import warnings

from ..ir.compiled_program import CompiledProgram
from .run_config import DfxOptions, RunConfig, RunOptions  # noqa: F401 - RunOptions: internal
from .worker import ChipWorker


def execute_compiled(work_dir, args, *, platform=None, device_id=0, dfx=None,
                     aicpu_thread_num=0, config=None):
    """Deprecated: use ``ir.CompiledProgram.from_dir(work_dir)(*args, config=cfg)``.

    The explicit arguments win: ``platform`` (default: the build's),
    ``device_id``, ``dfx`` (a DfxOptions; default: every switch off) and
    ``aicpu_thread_num``; ``config`` only supplies the ring sizes."""
    warnings.warn(
        "execute_compiled is deprecated; use ir.CompiledProgram.from_dir(work_dir)(*args, "
        "config=cfg) with the explicit settings merged into cfg "
        "(dataclasses.replace(cfg, platform=..., device_id=...))",
        DeprecationWarning, stacklevel=2)
    compiled = CompiledProgram.from_dir(work_dir, platform=platform)
    dfx = dfx if dfx is not None else DfxOptions()
    rings = {}
    if config is not None:
        rings = {name: getattr(config, name)
                 for name in ("ring_task_window", "ring_heap", "ring_dep_pool")}
    cfg = RunConfig(platform=compiled.platform, device_id=device_id,
                    aicpu_thread_num=aicpu_thread_num, **dataclasses.asdict(dfx), **rings)
    return ChipWorker().run(compiled, *args, config=cfg)
