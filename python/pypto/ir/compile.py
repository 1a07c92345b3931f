"""ir.compile: a .ptl program (a path or its source text) to a build directory,
returned as a CompiledProgram (L2) or a DistributedCompiledProgram (L3)."""
import os
import tempfile

from .. import _core
from ..errors import InfraError, ProgramError, UsageError
from .compiled_program import CompiledProgram
from .distributed_compiled_program import DistributedCompiledProgram, DistributedConfig

# Options CompileOptions.as_compile_kwargs() produces that this compiler has no
# counterpart for: accepted at their default values (so that
# **config.compile_kwargs() works), refused otherwise rather than ignored.
_DEFAULT_ONLY = {
    "strategy": "default",
    "dump_passes": False,
    "dump_ptoas_passes": False,
    "profiling": False,
    "diagnostic_phase": None,
    "disabled_diagnostics": (),
    "analyze_auto_scopes_for_deps": False,
    "memory_planner": None,
}

_ERRORS = {1: ProgramError, 2: UsageError, 3: InfraError}


def _is_path(program):
    if isinstance(program, os.PathLike):
        return True
    if not isinstance(program, str):
        raise TypeError(f"ir.compile: program must be a .ptl path or source text, not "
                        f"{type(program).__name__}")
    return "\n" not in program and (program.endswith(".ptl") or os.path.isfile(program))


def compile(program, *, platform="a2a3sim", output_dir=None, world=None, device_ids=None,  # noqa: A001
            distributed_config=None, seed=0, golden=True, **options):
    """Compiles ``program`` — a path to a .ptl file, or .ptl source text — into
    ``output_dir`` (default ``build_output/<name>``) and loads the result.

    ``platform`` is the target (a2a3sim, a2a3, a5sim, a5). An L3 program runs on
    ``world`` ranks, or on one per id of ``device_ids`` /
    ``distributed_config.device_ids``. ``seed`` seeds the golden inputs and
    ``golden=False`` writes none. The other CompileOptions keywords are accepted
    at their defaults only. Compile diagnostics raise ProgramError (their text
    is the message); bad options UsageError.
    """
    for name, value in options.items():
        if name not in _DEFAULT_ONLY:
            raise TypeError(f"ir.compile() got an unexpected keyword argument {name!r}")
        default = _DEFAULT_ONLY[name]
        if value != default and not (default in (None, ()) and not value):
            raise UsageError(
                f"ir.compile: {name}={value!r} is not supported by pypto-compile; leave it at "
                f"its default ({default!r})")
    if distributed_config is not None:
        if not isinstance(distributed_config, DistributedConfig):
            raise TypeError("distributed_config must be a pypto.ir.DistributedConfig")
        default = DistributedConfig()
        for field in ("runtime", "aicpu_thread_num", "num_sub_workers"):
            if getattr(distributed_config, field) != getattr(default, field):
                raise UsageError(
                    f"ir.compile: distributed_config.{field} is fixed by this runtime "
                    f"({getattr(default, field)!r}); leave it at its default")
        if device_ids is not None:
            raise UsageError("ir.compile: pass device_ids or distributed_config, not both")
        device_ids = distributed_config.device_ids

    with tempfile.TemporaryDirectory(prefix="pypto-compile-") as scratch:
        if _is_path(program):
            source = os.fspath(program)
            stem = os.path.splitext(os.path.basename(source))[0]
        else:
            stem = "program"
            source = os.path.join(scratch, "program.ptl")
            with open(source, "w", encoding="utf-8") as f:
                f.write(program)
        out = os.fspath(output_dir) if output_dir is not None else os.path.join("build_output", stem)
        code, _, diagnostics = _core.compile(
            source, out, platform, world, [int(d) for d in (device_ids or [])], int(seed),
            not golden)
    if code != 0:
        raise _ERRORS.get(code, ProgramError)(diagnostics.rstrip() or f"pypto-compile exited {code}")
    if _core.build_kind(out) == "L3":
        return DistributedCompiledProgram.from_dir(out)
    return CompiledProgram.from_dir(out)
