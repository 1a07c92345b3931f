"""Parameter metadata of a build (a leaf module: imports nothing from pypto.runtime)."""
from typing import NamedTuple, Tuple


class ParamInfo(NamedTuple):
    name: str
    direction: str  # "In", "Out" or "InOut"
    shape: Tuple[int, ...]  # -1 for a dynamic extent
    dtype: str  # "f32", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "bool"

    @property
    def is_output(self):
        return self.direction != "In"


def params_from_core(core_params):
    return [ParamInfo(n, d, tuple(s), t) for n, d, s, t in core_params]
