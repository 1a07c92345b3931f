// A scratch directory of a test or benchmark: made fresh under $TMPDIR (or
// /tmp) with mkdtemp, removed with everything in it when the object goes, on an
// error too. Files made read-only (blob-store entries) are made writable first,
// so the removal cannot fail on them.
#pragma once

#include <filesystem>
#include <string>

namespace pypto {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  // <temp>/<prefix>_XXXXXX. Throws InfraError naming the path when it cannot be made.
  explicit ScratchDir(const std::string& prefix = "pypto");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const fs::path& path() const { return path_; }
  fs::path operator/(const fs::path& relative) const { return path_ / relative; }

 private:
  fs::path path_;
};

}  // namespace pypto
