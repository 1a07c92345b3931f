#include "artifact/build_paths.h"

namespace pypto {

std::string sidecar_display(const fs::path& dir, std::string_view file) {
  return (dir / fs::path(file)).lexically_normal().generic_string();
}

fs::path next_level_dir(const fs::path& dir, int64_t rank) {
  return dir / fs::path(kNextLevelsDir) / std::to_string(rank);
}

fs::path compile_output_dir(const fs::path& dir) {
  fs::path normal = dir.lexically_normal();
  if (normal.filename().empty()) normal = normal.parent_path();  // "build/x/" -> "build/x"
  if (normal.parent_path().filename() == kNextLevelsDir) return normal.parent_path().parent_path();
  return dir;
}

std::string recompile_remedy(const fs::path& dir) {
  fs::path out = compile_output_dir(dir);
  std::string shown = out.empty() ? std::string(".") : out.generic_string();
  const char* where = out == dir ? "this directory" : "its build directory";
  return std::string("Rewrite it by recompiling the program into ") + where +
         " (pypto-compile <program>.ptl -o " + shown +
         "); for a hand-written fixture, restore the file from version control";
}

}  // namespace pypto
