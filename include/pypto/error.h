// One error hierarchy for the whole project. Every message says what failed,
// where (file, field, rank, dispatch, kernel) and what to do; the class decides
// the process exit code (docs/errors.md).
#pragma once

#include <stdexcept>
#include <string>

namespace pypto {

enum class ExitCode : int {
  kOk = 0,
  kFail = 1,   // the program is wrong: kernel error, compile error, mismatch
  kUsage = 2,  // bad command line
  kInfra = 3,  // setup, reconstruction, launch, missing device or tool
  kInterrupted = 130,  // stopped by SIGINT/SIGTERM (128 + SIGINT, as shells report it)
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode exit_code() const { return code_; }

 private:
  ExitCode code_;
};

// Exit 2: the command line itself is wrong.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ExitCode::kUsage, message) {}
};

// Exit 3: the environment or the build directory could not be set up.
class InfraError : public Error {
 public:
  explicit InfraError(const std::string& message) : Error(ExitCode::kInfra, message) {}
};

// A file of a build directory is missing, truncated or invalid. The message
// names the file and the field and says which compile rewrites it.
class ArtifactError : public InfraError {
 public:
  ArtifactError(const std::string& file, const std::string& field, const std::string& problem,
                const std::string& remedy);
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  std::string field_;
};

// A tool the run needs (the host C++ compiler, pypto-ptoas, mpirun) is absent or broken.
class ToolError : public InfraError {
 public:
  explicit ToolError(const std::string& message) : InfraError(message) {}
};

// Exit 1: the program is wrong.
class ProgramError : public Error {
 public:
  explicit ProgramError(const std::string& message) : Error(ExitCode::kFail, message) {}
};

// A kernel or orchestration source does not compile; quotes the diagnostics.
class KernelCompileError : public ProgramError {
 public:
  KernelCompileError(const std::string& source, const std::string& diagnostics);
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// A kernel or orchestration failed at run time: it reported an error, threw,
// crashed with a signal, or did not finish before the deadline. The message
// names the program, the kernel and the task.
class KernelRuntimeError : public ProgramError {
 public:
  explicit KernelRuntimeError(const std::string& message) : ProgramError(message) {}
};

// Outputs differ from golden/expected beyond rtol/atol.
class ValidationError : public ProgramError {
 public:
  explicit ValidationError(const std::string& message) : ProgramError(message) {}
};

// The user interrupted the run (Ctrl-C, SIGTERM); everything it started was stopped.
class InterruptedError : public Error {
 public:
  explicit InterruptedError(const std::string& message) : Error(ExitCode::kInterrupted, message) {}
};

// Maps any exception escaping a command to its exit code.
ExitCode exit_code_of(const std::exception& e);

}  // namespace pypto
