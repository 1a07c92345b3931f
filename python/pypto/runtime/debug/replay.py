"""python -m pypto.runtime.debug.replay DIR [--pmu N] [--swimlane] [--dep-gen]
[--scope-stats] [--no-recompile] [--no-rebuild-from-pto] [--validate]
[--log-level L] ...: the same command as ``pypto-coord replay`` (docs/commands.md),
same flags, output and exit codes."""
import sys

from ... import _core

PROG = "python -m pypto.runtime.debug.replay"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    return _core.replay_main(PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
