// The #include closure of a kernel source: every project header it pulls in,
// read once, for the binary cache key. Internal to the artifact layer.
//
// Resolution mirrors the compiler's: `#include "x"` is looked up beside the
// including file, then in the include directories in order; `#include <x>`
// only in the include directories. An angle include found in none of them is
// a system header, which the compiler identity covers, and is skipped. Every
// directive is followed, including those under #if (a conservative superset
// of what the compiler reads).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pypto {

struct IncludedFile {
  // Independent of where the tree lives: "<i>:<path relative to include dir i>"
  // or "src:<path relative to the source's directory>", so identical sources
  // in next_levels/0 and next_levels/1 get identical keys.
  std::string name;
  std::filesystem::path path;
  std::string content;
};

struct IncludeClosure {
  std::string source_content;
  std::vector<IncludedFile> files;  // in discovery order, each file once, without the source
  // Why the closure cannot be established (a quoted include that cannot be
  // found or read, an unreadable project header, a computed #include); empty
  // when it is complete. The caller must then rebuild: fail closed.
  std::string failure;

  bool ok() const { return failure.empty(); }
};

// Never throws for problems of the scanned files; they end up in `failure`.
IncludeClosure include_closure(const std::filesystem::path& source,
                               const std::vector<std::filesystem::path>& include_dirs);

struct IncludeDirective {
  enum class Kind { kQuoted, kAngle, kComputed };
  Kind kind;
  std::string target;  // the name between the delimiters; the raw text for kComputed
  int line;            // 1-based
  bool include_next;
};

// The #include directives of `text`, ignoring comments and string literals.
std::vector<IncludeDirective> scan_includes(std::string_view text);

}  // namespace pypto
