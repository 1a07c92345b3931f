"""RunConfig: one aggregate carrying compile-time and dispatch-time settings,
and its three views (docs/configuration.md, docs/python.md):

    CompileOptions  what ir.compile reads; compile_kwargs() is the one mapping
    RunOptions      dispatch: platform, device id, aicpu threads, rings, nested DFX
    DfxOptions      the five DFX switches

The platform is two decisions: ``arch`` (a BackendType) and ``execution_mode``;
``platform`` is derived from them, and ``platform=`` still constructs both.
Every field's owner comes from the C++ RunConfig's table, so the views and the
C++ type cannot drift apart silently (the extension refuses a dict that does
not match it).
"""
import dataclasses
import enum
from typing import List, Optional, Sequence, Union

from .. import _core
from ..ir.distributed_compiled_program import DistributedConfig


class BackendType(enum.Enum):
    """The architecture half of a platform."""

    Ascend910B = "a2a3"
    Ascend950 = "a5"


class ExecutionMode(enum.Enum):
    """The execution half: the simulator (the ``sim`` suffix) or a real device."""

    SIM = "sim"
    ONBOARD = "onboard"


def _platform_name(arch, mode):
    return arch.value + ("sim" if mode is ExecutionMode.SIM else "")


def _axes(platform):
    """(BackendType, ExecutionMode) of a platform string; UsageError when unknown."""
    arch, mode = _core.parse_platform(platform)
    return BackendType(arch), ExecutionMode.SIM if mode == "sim" else ExecutionMode.ONBOARD


class _DerivedPlatform(str):
    """RunConfig.platform as read back: a str, marked so that
    dataclasses.replace(cfg, arch=...) (which passes the old platform back to
    __init__) does not undo the new axes."""


Ring = Optional[Union[int, Sequence[int]]]


@dataclasses.dataclass(frozen=True)
class DfxOptions:
    """Which diagnostics one dispatch collects (docs/dfx.md)."""

    enable_chip_swimlane: int = 0
    enable_dump_args: int = 0
    enable_pmu: int = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False

    def any(self):
        return any(dataclasses.astuple(self))


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """The compile half, named as ir.compile names its keywords."""

    platform: str = "a2a3sim"
    strategy: str = "default"
    dump_passes: bool = False
    dump_ptoas_passes: bool = False
    profiling: bool = False
    diagnostic_phase: Optional[str] = None
    disabled_diagnostics: Sequence[str] = ()
    analyze_auto_scopes_for_deps: bool = False
    output_dir: Optional[str] = None
    memory_planner: Optional[str] = None
    distributed_config: Optional[DistributedConfig] = None

    def as_compile_kwargs(self):
        """The keyword arguments of ir.compile; unset optionals are absent, so the
        compiler's defaults apply."""
        _axes(self.platform)  # an unknown target never reaches the compiler
        kwargs = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            # As the C++ mapping: empty strings and no distributed_config are unset.
            if value is None or (isinstance(value, str) and not value):
                continue
            kwargs[f.name] = list(value) if f.name == "disabled_diagnostics" else value
        return kwargs


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The dispatch half. Internal: dispatch entries take a RunConfig."""

    platform: str = "a2a3sim"
    device_id: int = 0
    aicpu_thread_num: int = 0
    ring_task_window: Ring = None
    ring_heap: Ring = None
    ring_dep_pool: Ring = None
    dfx: DfxOptions = DfxOptions()


@dataclasses.dataclass
class RunConfig:
    """Compile and dispatch settings; ``RunConfig(platform="a2a3")`` sets both axes."""

    platform: dataclasses.InitVar[Optional[str]] = None
    arch: BackendType = BackendType.Ascend910B
    execution_mode: ExecutionMode = ExecutionMode.SIM
    # Compile (CompileOptions)
    strategy: str = "default"
    dump_passes: bool = False
    dump_ptoas_passes: bool = False
    compile_profiling: bool = False
    diagnostic_phase: Optional[str] = None
    disabled_diagnostics: List[str] = dataclasses.field(default_factory=list)
    analyze_auto_scopes_for_deps: bool = False
    save_kernels_dir: Optional[str] = None
    memory_planner: Optional[str] = None
    distributed_config: Optional[DistributedConfig] = None
    # Dispatch (RunOptions); a ring is None, one size for every level, or 4 per-level sizes
    device_id: int = 0
    aicpu_thread_num: int = 0
    ring_task_window: Ring = None
    ring_heap: Ring = None
    ring_dep_pool: Ring = None
    # DFX (DfxOptions)
    enable_chip_swimlane: int = 0
    enable_dump_args: int = 0
    enable_pmu: int = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False
    # The system-test harness only
    golden_data_dir: Optional[str] = None
    save_kernels: bool = False
    codegen_only: bool = False
    rtol: float = 1e-5
    atol: float = 1e-5

    def __post_init__(self, platform):
        if platform is not None and not isinstance(platform, _DerivedPlatform):
            self.arch, self.execution_mode = _axes(platform)
        if not isinstance(self.arch, BackendType):
            raise TypeError(f"RunConfig.arch must be a BackendType, not {self.arch!r}")
        if not isinstance(self.execution_mode, ExecutionMode):
            raise TypeError(f"RunConfig.execution_mode must be an ExecutionMode, not "
                            f"{self.execution_mode!r}")
        _core.validate_run_config(self._to_core())  # rings, DFX levels, numbers: UsageError

    @property
    def backend_type(self):
        """The compiler's name for ``arch`` (read-only)."""
        return self.arch

    def _owned(self, owner):
        return [(name, view) for name, o, view in _core.run_config_fields() if o == owner]

    def compile_options(self):
        kwargs = {view: getattr(self, name) for name, view in self._owned("CompileOptions")}
        kwargs["disabled_diagnostics"] = tuple(kwargs["disabled_diagnostics"])
        return CompileOptions(platform=str(self.platform), **kwargs)

    def dfx_options(self):
        return DfxOptions(**{view: getattr(self, name) for name, view in self._owned("DfxOptions")})

    def run_options(self):
        kwargs = {view: getattr(self, name) for name, view in self._owned("RunOptions")}
        return RunOptions(platform=str(self.platform), dfx=self.dfx_options(), **kwargs)

    def compile_kwargs(self):
        """THE mapping into ir.compile: ``compile_options().as_compile_kwargs()``."""
        return self.compile_options().as_compile_kwargs()

    def _to_core(self):
        d = {}
        for f in dataclasses.fields(self):
            if f.name in ("arch", "execution_mode"):
                continue
            value = getattr(self, f.name)
            if f.name == "distributed_config" and value is not None:
                value = value._to_core()
            if f.name.startswith("ring_") and value is not None and not isinstance(value, int):
                value = [int(v) for v in value]
            d[f.name] = value
        d["platform"] = str(self.platform)
        return d


def _platform(self):
    """The wire spelling of the two axes: "a2a3sim", "a2a3", "a5sim", "a5"."""
    return _DerivedPlatform(_platform_name(self.arch, self.execution_mode))


# After the dataclass is made, so that the InitVar keeps its None default.
RunConfig.platform = property(_platform)
