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
    if type(value).__name__ == "ResidentTensor" and type(value).__module__.startswith("pypto"):
        return value  # stays in the agents (docs/resident-tensors.md)
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


_CORE_DTYPES = {
    np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8", np.dtype(np.bool_): "bool",
}


def core_dtype(dtype):
    """The core's name of a dtype given as a NumPy dtype (or type) or as a core name
    ("f32", "bf16", ...)."""
    if isinstance(dtype, str) and dtype in set(_CORE_DTYPES.values()) | {"bf16"}:
        return dtype
    d = np.dtype(dtype)
    if BFLOAT16 is not None and d == BFLOAT16:
        return "bf16"
    if d not in _CORE_DTYPES:
        raise TypeError(f"dtype {d} has no pypto equivalent; use one of "
                        f"{', '.join(str(k) for k in _CORE_DTYPES)} or a name such as 'f32'")
    return _CORE_DTYPES[d]


def from_core(array, dtype_name):
    """An array the core returned; bf16 comes as uint16 bits."""
    if dtype_name == "bf16" and BFLOAT16 is not None:
        return array.view(BFLOAT16)
    return array
