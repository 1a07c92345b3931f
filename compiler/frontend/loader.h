// Loads a program and everything it imports. `import "path.ptl"` names a
// file relative to the importing file, else relative to each library
// directory (--lib-dir, in order). A file imported twice is loaded once;
// all declarations share one namespace, so the shipped collectives library
// is just more .ptl files. Import cycles are errors.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"

namespace pypto::compiler {

// Returns a file's contents, or nullopt when it cannot be read. Tests pass
// an in-memory file system; the command reads the disk.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;
FileReader disk_reader();

struct LoadOptions {
  std::vector<std::string> lib_dirs;
  FileReader read = disk_reader();
};

// Parses `root_path` and its imports (modules come after what they import).
// Problems (unreadable files, syntax errors, cycles) go to `diags`.
Program load_program(const std::string& root_path, const LoadOptions& options,
                     SourceManager& sources, DiagnosticEngine& diags);

}  // namespace pypto::compiler
