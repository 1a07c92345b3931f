"""replay(): re-run a build directory after hand edits, without recompiling the
program: splice edited ptoas/*.pto into the kernels, invalidate the binary
cache, then dispatch through the rebuilt program object (L2 or L3, detected
from the directory)."""
import logging
import os

from ... import _core
from ..._arrays import as_arrays, from_core
from ...errors import ValidationError
from ...ir.compiled_program import CompiledProgram
from ...ir.distributed_compiled_program import DistributedCompiledProgram

_log = logging.getLogger("pypto.replay")


def rebuild_kernel_cpp_from_pto(work_dir):
    """For each ptoas/<unit>.pto newer than its ptoas/<unit>.cpp (in the build and
    in every next_levels/<r>/): re-runs pypto-ptoas and splices the new body
    between the sentinels of the kernel sources. Skipped when pypto-ptoas is
    not found (PTOAS_ROOT, PATH) or PYPTO_REBUILD_FROM_PTO=0. Returns a dict
    with ``spliced``, ``updated_kernels``, ``tool_missing``, ``disabled`` and
    a one-line ``summary``."""
    return _core.rebuild_kernel_cpp_from_pto(os.fspath(work_dir))


def invalidate_binary_cache(work_dir):
    """Drops the cached binaries of the build (and of every next_levels/<r>/), so
    that edited sources are compiled again; returns how many were removed."""
    return _core.invalidate_binary_cache(os.fspath(work_dir))


def load(work_dir, platform=None):
    """The program object of a build directory, L2 or L3."""
    if _core.build_kind(os.fspath(work_dir)) == "L3":
        return DistributedCompiledProgram.from_dir(work_dir, platform=platform)
    return CompiledProgram.from_dir(work_dir, platform=platform)


def golden_arguments(compiled):
    """One fresh array per parameter: the build's golden inputs, zeroed outputs."""
    params = compiled.params
    return [from_core(a, p.dtype) for a, p in zip(compiled._core.golden_arguments(), params)]


def replay(work_dir, *args, config=None, recompile=True, validate=False):
    """Re-runs ``work_dir``: splices edited .pto files, invalidates the binary
    cache (``recompile=False`` keeps it; sources whose content changed are still
    rebuilt), then calls the program with ``args`` — or, without any, with the
    build's golden inputs — and ``config``. Returns the argument arrays (Out
    ones written). ``validate=True`` compares the outputs with golden/ and
    raises pypto.ValidationError (an AssertionError) on a mismatch,
    FileNotFoundError when the build has no golden/."""
    work_dir = os.fspath(work_dir)
    compiled = load(work_dir)  # a broken directory fails before any source is rewritten
    if validate and not compiled._core.has_golden:
        raise FileNotFoundError(f"replay(validate=True): {work_dir} has no golden/ to validate "
                                "against; compile it with golden data, or validate yourself")
    _log.info("%s", rebuild_kernel_cpp_from_pto(work_dir)["summary"])
    if recompile:
        _log.info("cache: invalidated %d cached binaries", invalidate_binary_cache(work_dir))
    arrays = as_arrays(args, compiled.params) if args else golden_arguments(compiled)
    compiled(*arrays, config=config)
    if validate:
        ok, problems = compiled._core.validate(arrays)
        if not ok:
            raise ValidationError(f"replay of {work_dir}: outputs differ from golden/:\n{problems}")
    return arrays
