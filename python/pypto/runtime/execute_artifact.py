"""python -m pypto.runtime.execute_artifact --work-dir DIR | --batch-manifest M
[--platform P] [dispatch flags] [--log-level L]

Runs a build directory (or each directory a manifest lists, each in a child
process) with its golden inputs, validates it, and prints the machine-readable
marker lines of ``pypto-coord exec`` on stdout — the same code prints them:

    PYPTO_EXEC_RESULT=PASS device=<N>      ran and validated (L3: device=0,1,...)
    PYPTO_EXEC_RESULT=FAIL                 the program is wrong
    PYPTO_EXEC_RESULT=INFRA                the directory or environment is

and with a manifest one line per entry with ``work_dir=<wd>``. Exit code 0 when
every directory passed, 1 when any failed, else 3.
"""
import os
import sys

from .. import _core

PROG = "python -m pypto.runtime.execute_artifact"


def _child_command():
    # A manifest entry runs in a child, so a kernel that kills its process
    # cannot take the batch with it; the child is this same module.
    return [sys.executable, "-m", "pypto.runtime.execute_artifact", "--work-dir"]


def _dfx_argv(dfx):
    if dfx is None:
        return []
    argv = []
    if dfx.enable_chip_swimlane:
        argv += ["--swimlane", str(dfx.enable_chip_swimlane)]
    if dfx.enable_dump_args:
        argv += ["--dump-args", str(dfx.enable_dump_args)]
    if dfx.enable_pmu:
        argv += ["--pmu", str(dfx.enable_pmu)]
    if dfx.enable_dep_gen:
        argv.append("--dep-gen")
    if dfx.enable_scope_stats:
        argv.append("--scope-stats")
    return argv


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    return _core.exec_main(PROG, argv, _child_command())


def execute_artifact_dir(work_dir, platform=None, dfx=None):
    """Runs and validates one directory in this process, prints its marker line;
    returns the exit code (0 PASS, 1 FAIL, 3 INFRA)."""
    argv = ["--work-dir", os.fspath(work_dir)] + _dfx_argv(dfx)
    if platform:
        argv += ["--platform", platform]
    return main(argv)


def execute_batch_manifest(manifest, platform=None, dfx=None):
    """Runs every directory the JSON manifest lists, each in a child process;
    prints one marker line per entry; returns the exit code."""
    argv = ["--batch-manifest", os.fspath(manifest)] + _dfx_argv(dfx)
    if platform:
        argv += ["--platform", platform]
    return main(argv)


if __name__ == "__main__":
    sys.exit(main())
