"""pypto.ir: the compile layer and its two artifact types.

    from pypto import ir
    compiled = ir.compile("examples/allreduce.ptl", world=2)

Prefer ``ir.compile`` to importing the name (it shadows the builtin compile).
"""
from .compile import compile  # noqa: A004
from .compiled_program import CompiledProgram
from .distributed_compiled_program import DistributedCompiledProgram, DistributedConfig
from .param_info import ParamInfo

__all__ = ["compile", "CompiledProgram", "DistributedCompiledProgram", "DistributedConfig",
           "ParamInfo"]
