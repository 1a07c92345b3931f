"""The C++ error classes as Python exceptions (docs/errors.md).

Each class carries the exit code the command-line tools use for it
(``exit_code``): 1 the program is wrong, 2 bad usage, 3 infrastructure,
130 interrupted. An error raised by the C++ core arrives as the class of the
same name with the same message.
"""


class Error(Exception):
    """Base of every pypto error."""

    exit_code = 1


class UsageError(Error):
    """Bad arguments: a wrong option, dtype, shape or value (exit 2)."""

    exit_code = 2


class InfraError(Error):
    """The environment or the build directory could not be set up (exit 3)."""

    exit_code = 3


class ArtifactError(InfraError):
    """A file of a build directory is missing, truncated or invalid (exit 3)."""


class ToolError(InfraError):
    """A tool the run needs (C++ compiler, pypto-ptoas, mpirun) is absent or broken (exit 3)."""


class ProgramError(Error):
    """The program is wrong: compile diagnostics, a kernel error, a mismatch (exit 1)."""

    exit_code = 1


class KernelCompileError(ProgramError):
    """A kernel or orchestration source does not compile; the message quotes the compiler."""


class KernelRuntimeError(ProgramError):
    """A kernel failed at run time: reported an error, crashed, or missed its deadline."""


class ValidationError(ProgramError, AssertionError):
    """Outputs differ from the golden data beyond rtol/atol (also an AssertionError)."""


class InterruptedError(KeyboardInterrupt):  # noqa: A001 - the C++ class's name
    """Ctrl-C or SIGTERM stopped a run; everything it started was stopped (exit 130).

    A KeyboardInterrupt, so ``except Exception`` does not swallow it.
    """

    exit_code = 130
