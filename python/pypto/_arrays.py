"""Arguments at the boundary: NumPy arrays, or anything exposing
``__array_interface__``, ``__array__`` or ``__dlpack__`` (torch CPU tensors),
viewed as NumPy arrays without copying. The C++ core then borrows their memory:
outputs are written into the caller's arrays."""
import numpy as np

try:  # bf16 arrays, when ml_dtypes is installed
    import ml_dtypes as _ml_dtypes

    BFLOAT16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # then bf16 data is its bits, as uint16
    BFLOAT16 = None


def as_array(value, name):
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        return np.asarray(value)
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)  # read-only: fine for inputs
    raise TypeError(
        f"argument {name!r}: {type(value).__name__} is not an array; pass a numpy.ndarray "
        "(or an object with __array_interface__, __array__ or __dlpack__)"
    )


def as_arrays(values, params):
    names = [p.name for p in params] + [f"#{i}" for i in range(len(params), len(values))]
    return [as_array(v, names[i]) for i, v in enumerate(values)]


def from_core(array, dtype_name):
    """An array the core returned; bf16 comes as uint16 bits."""
    if dtype_name == "bf16" and BFLOAT16 is not None:
        return array.view(BFLOAT16)
    return array
