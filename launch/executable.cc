#include "launch/executable.h"

#include <unistd.h>

#include <system_error>

#include "common/subprocess.h"

namespace pypto::launch {

namespace fs = std::filesystem;

std::optional<fs::path> resolve_executable(const fs::path& program) {
  const std::string text = program.string();
  if (text.empty()) return std::nullopt;
  if (text.find('/') == std::string::npos) return find_program_in_path(text);
  std::error_code ec;
  if (!fs::is_regular_file(program, ec) || ::access(program.c_str(), X_OK) != 0)
    return std::nullopt;
  fs::path absolute = fs::absolute(program, ec);
  return ec ? program : absolute.lexically_normal();
}

}  // namespace pypto::launch
