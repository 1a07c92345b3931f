"""pypto.runtime.debug: replaying a build directory after hand edits.

    from pypto.runtime.debug import replay
    replay("build_output/allreduce", config=RunConfig(enable_pmu=2))

``python -m pypto.runtime.debug.replay DIR [flags]`` is the command-line form.
"""
from ._replay import invalidate_binary_cache, rebuild_kernel_cpp_from_pto, replay

__all__ = ["invalidate_binary_cache", "rebuild_kernel_cpp_from_pto", "replay"]
