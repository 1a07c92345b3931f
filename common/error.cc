#include "pypto/error.h"

namespace pypto {

namespace {
std::string artifact_message(const std::string& file, const std::string& field,
                             const std::string& problem, const std::string& remedy) {
  std::string msg = file;
  if (!field.empty()) msg += ": field '" + field + "'";
  msg += ": " + problem;
  if (!remedy.empty()) msg += ". " + remedy;
  return msg;
}
}  // namespace

ArtifactError::ArtifactError(const std::string& file, const std::string& field,
                             const std::string& problem, const std::string& remedy)
    : InfraError(artifact_message(file, field, problem, remedy)), file_(file), field_(field) {}

KernelCompileError::KernelCompileError(const std::string& source, const std::string& diagnostics)
    : ProgramError("kernel source " + source + " does not compile; fix the source and run again." +
                   "\ncompiler diagnostics:\n" + diagnostics),
      source_(source) {}

ExitCode exit_code_of(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) return err->exit_code();
  return ExitCode::kInfra;
}

}  // namespace pypto
