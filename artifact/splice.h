// The .pto splice of replay (docs/cache-and-replay.md): a hand-edited ptoas/<unit>.pto is
// run through pypto-ptoas again and the result replaces the generated body of
// the matching kernel sources, between the two sentinel lines. Edits outside
// the sentinels (wrapper, includes, entry point) survive.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pypto {

inline constexpr std::string_view kPtoasBeginSentinel = "// --- ptoas-generated code ---";
inline constexpr std::string_view kKernelEntrySentinel = "// --- Kernel entry point ---";

struct SkippedUnit {
  std::string unit;    // "ptoas/<unit>.pto" relative to the build directory given
  std::string reason;  // "up to date", "pypto-ptoas not found", ...
};

struct SpliceReport {
  bool disabled = false;                      // PYPTO_REBUILD_FROM_PTO=0: nothing was looked at
  bool tool_missing = false;                  // some .pto needed pypto-ptoas, which was not found
  std::optional<std::filesystem::path> tool;  // the pypto-ptoas that ran, if any
  std::vector<std::string> spliced;           // units rerun through pypto-ptoas
  std::vector<std::string> updated_kernels;   // kernel sources rewritten
  std::vector<SkippedUnit> skipped;

  std::string summary() const;  // one line for logs
};

// For each ptoas/<unit>.pto of build_dir and of every next_levels/<r>/ (at any
// depth) that is newer than ptoas/<unit>.cpp, or has no .cpp: runs
// `pypto-ptoas <unit>.pto -o <unit>.cpp` and splices the output into
// kernels/aic/<unit>.cpp and kernels/aiv/<unit>.cpp, whichever exist, each
// written atomically. ptoas/<unit>.cpp is replaced last, so a failed splice
// is retried by the next replay.
// pypto-ptoas is $PTOAS_ROOT/pypto-ptoas, $PTOAS_ROOT/bin/pypto-ptoas, then
// PATH; without it the splice is skipped with one warning and nothing changes.
// Throws ArtifactError naming the kernel file for missing, repeated or
// misordered sentinels; KernelCompileError naming the .pto and quoting
// pypto-ptoas when it rejects the file; ToolError when it crashes or hangs.
SpliceReport rebuild_kernel_cpp_from_pto(const std::filesystem::path& build_dir);

// False when PYPTO_REBUILD_FROM_PTO is 0, false, off or no.
bool rebuild_from_pto_enabled();

// Where pypto-ptoas is, by the lookup above.
std::optional<std::filesystem::path> find_pypto_ptoas();

// `kernel_text` with everything between the sentinel lines replaced by `body`
// (a trailing newline is added when missing). `kernel_file` names the file in
// errors. Throws ArtifactError when the sentinels are missing, repeated or in
// the wrong order.
std::string splice_between_sentinels(const std::string& kernel_text, const std::string& body,
                                     const std::string& kernel_file);

}  // namespace pypto
