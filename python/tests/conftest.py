"""Shared helpers of the pytest suites (ctest runs them with the interpreter the
package is built for and PYTHONPATH=<build>/python)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SOURCE_DIR = Path(os.environ.get("PYPTO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
FIXTURES = SOURCE_DIR / "tests" / "fixtures"
EXAMPLES = SOURCE_DIR / "examples"


def copy_fixture(dest_root, rel):
    """A private copy of tests/fixtures/<rel>: runs write outputs/, cache/, dfx_outputs/."""
    dest = Path(dest_root) / Path(rel).name
    shutil.copytree(FIXTURES / rel, dest, symlinks=True)
    return dest


def golden(dir_, kind, name):
    return np.load(Path(dir_) / "golden" / kind / f"{name}.npy")


def run_python(args, cwd=None, timeout=300, env=None):
    """`python -m ...` in a child with this interpreter; returns the CompletedProcess."""
    return subprocess.run([sys.executable] + list(args), cwd=cwd, env=env, timeout=timeout,
                          capture_output=True, text=True)


def marker_lines(text):
    return [line for line in text.splitlines() if line.startswith("PYPTO_EXEC_RESULT=")]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("pypto")


def coord_binary():
    from pypto import _paths

    return _paths.COORD_BINARY
