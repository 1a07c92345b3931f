"""The installed C++ SDK as a new user meets it (docs/cpp-api.md): the build
tree installed into a scratch prefix, examples/cpp/ configured with
find_package(pypto) and built with pkg-config against that prefix alone, and
the host program run on 2 and 8 ranks with nothing of the source or build tree
on its include path, PATH or environment."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from tagged_processes import survivors  # noqa: E402

SOURCE_DIR = Path(os.environ["PYPTO_SOURCE_DIR"])
BUILD_DIR = Path(os.environ["PYPTO_BINARY_DIR"])
CMAKE = os.environ.get("PYPTO_CMAKE", "cmake")
CXX = os.environ.get("PYPTO_CXX", "c++")
TAG = f"cpp_sdk_{os.getpid()}"
# What a user's shell has: the system's programs, not the project's.
SYSTEM_PATH = "/usr/bin:/bin"


def run(argv, env=None, cwd=None, timeout=300):
    proc = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{' '.join(map(str, argv))} exited {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def user_env(scratch):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYPTO_") and k not in ("LD_LIBRARY_PATH", "CPATH", "PYTHONPATH")}
    env["PATH"] = SYSTEM_PATH
    env["HOME"] = str(scratch / "home")  # the rank agents' cache and blob store
    env["PYPTO_E2E_TAG"] = TAG           # marks every process of the test
    return env


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("sdk")
    prefix = scratch / "prefix"
    run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix])
    (scratch / "home").mkdir()
    yield scratch, prefix
    shutil.rmtree(scratch, ignore_errors=True)


def lib_dir(prefix):
    return next(p.parent for p in prefix.glob("lib*/**/libpypto.so"))


def test_the_library_is_versioned_and_the_package_files_are_installed(prefix):
    _, prefix = prefix
    libdir = lib_dir(prefix)
    real = (libdir / "libpypto.so").resolve()
    dynamic = run(["readelf", "-d", real]).stdout
    assert "Library soname: [libpypto.so.0.1]" in dynamic, dynamic
    assert (libdir / "libpypto.so.0.1").resolve() == real
    assert (libdir / "cmake" / "pypto" / "pyptoConfig.cmake").is_file()
    assert (libdir / "pkgconfig" / "pypto.pc").is_file()
    assert (prefix / "include" / "pypto" / "pypto.h").is_file()
    # The runtime's internals are not installed.
    assert not (prefix / "include" / "artifact").exists()
    assert not list((prefix / "include").glob("**/kernel_config.h"))


# What generated kernels compile against, with tile.h pulling in pto_runtime.h.
KERNEL_HEADERS = {"tile.h", "pto_runtime.h"}


def test_every_public_header_compiles_on_its_own(prefix):
    scratch, prefix = prefix
    headers = [h for h in sorted((prefix / "include" / "pypto").glob("*.h"))
               if h.name not in KERNEL_HEADERS]
    assert len(headers) >= 15
    for header in headers:
        source = scratch / f"only_{header.stem}.cc"
        source.write_text(f"#include <pypto/{header.name}>\n")
        run([CXX, "-std=c++20", "-fsyntax-only", "-Werror", "-Wall", f"-I{prefix / 'include'}",
             source], env=user_env(scratch))


def compile_example(scratch, world):
    out = scratch / f"allreduce_w{world}"
    env = user_env(scratch)
    run([prefix_bin(scratch) / "pypto-compile", SOURCE_DIR / "examples" / "allreduce.ptl", "-o",
         out, "--world", str(world)], env=env)
    return out


def prefix_bin(scratch):
    return scratch / "prefix" / "bin"


def expect_two_good_runs(program, build, scratch, world, log_level=None):
    env = user_env(scratch)
    if log_level:
        env["PYPTO_RUNTIME_LOG"] = log_level
    proc = run([program, build], env=env, timeout=240)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"run 1: {world} ranks, {world} dispatches in "), proc.stdout
    assert lines[0].endswith(f", 0 of {world * 256} outputs wrong"), proc.stdout
    assert lines[1].startswith(f"run 2: {world} ranks, {world} dispatches in "), proc.stdout
    assert lines[2] == "allreduce_host: both runs match the sums computed on the host"
    assert survivors(TAG) == []
    return proc


def test_find_package_builds_the_example_and_it_runs_on_8_ranks(prefix):
    scratch, prefix = prefix
    example = scratch / "example"
    env = user_env(scratch)
    run([CMAKE, "-S", SOURCE_DIR / "examples" / "cpp", "-B", example, "-G", "Ninja",
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
         f"-DCMAKE_MAKE_PROGRAM={shutil.which('ninja')}"], env=env)
    run([CMAKE, "--build", example], env=env)
    commands = json.loads((example / "compile_commands.json").read_text())
    for entry in commands:
        # The example's own source is the only file of the source tree it reads.
        flags = entry["command"].replace(str(SOURCE_DIR / "examples" / "cpp"), "")
        assert str(SOURCE_DIR) not in flags and str(BUILD_DIR) not in flags, entry["command"]
        assert f"-isystem {prefix / 'include'}" in flags or f"-I{prefix / 'include'}" in flags
    proc = expect_two_good_runs(example / "allreduce_host", compile_example(scratch, 8), scratch, 8)
    # The library logs to stderr at info by default, and starts the installed agent.
    assert "[info] launching 8 agents: " in proc.stderr, proc.stderr
    assert f" {prefix / 'bin' / 'pypto-rank'} --coord " in proc.stderr, proc.stderr


def test_pkg_config_builds_the_example_and_it_runs_on_2_ranks(prefix):
    scratch, prefix = prefix
    env = user_env(scratch)
    env["PKG_CONFIG_PATH"] = str(lib_dir(prefix) / "pkgconfig")
    flags = run(["pkg-config", "--cflags", "--libs", "pypto"], env=env).stdout.split()
    program = scratch / "allreduce_host_pc"
    run([CXX, SOURCE_DIR / "examples" / "cpp" / "allreduce_host.cc", "-o", program, *flags],
        env=env)
    proc = expect_two_good_runs(program, compile_example(scratch, 2), scratch, 2, log_level="warn")
    assert "[info]" not in proc.stderr, proc.stderr  # PYPTO_RUNTIME_LOG applies to the library


def test_a_bad_build_directory_is_a_clear_error(prefix):
    scratch, prefix = prefix
    program = scratch / "allreduce_host_pc"
    if not program.exists():
        pytest.skip("built by the pkg-config test")
    proc = subprocess.run([program, scratch / "no_such_build"], env=user_env(scratch),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("allreduce_host: "), proc.stderr
    assert "no_such_build" in proc.stderr, proc.stderr
