#include "launch/rank_binary.h"

#include <cstdlib>
#include <string>

#include "common/module_path.h"
#include "launch/executable.h"
#include "pypto/error.h"

namespace pypto::launch {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRankName = "pypto-rank";

fs::path required(const fs::path& path, const std::string& origin) {
  if (auto found = resolve_executable(path)) return *found;
  throw InfraError(origin + " names the rank agent " + path.string() +
                   ", which is not an executable file; build pypto-rank (ninja pypto-rank) or "
                   "point " +
                   origin + " at it");
}

}  // namespace

fs::path find_rank_binary(const std::optional<fs::path>& explicit_path) {
  return find_rank_binary(explicit_path, current_module());
}

fs::path find_rank_binary(const std::optional<fs::path>& explicit_path, const fs::path& self_exe) {
  if (explicit_path) return required(*explicit_path, "--rank-binary");
  if (const char* env = std::getenv("PYPTO_RANK"); env && *env) return required(env, "PYPTO_RANK");
  std::string tried;
  if (!self_exe.empty()) {
    const fs::path dir = self_exe.parent_path();
    for (const fs::path& candidate :
         {dir / kRankName, dir.parent_path() / "rank_agent" / kRankName,
          install_prefix_of(self_exe) / "bin" / kRankName}) {
      if (auto found = resolve_executable(candidate)) return *found;
      tried += candidate.string() + ", ";
    }
  }
  if (auto found = resolve_executable(kRankName)) return *found;
  throw InfraError("cannot find the rank agent pypto-rank (tried " + tried +
                   "and PATH); build and install it (scripts/setup.sh), or set PYPTO_RANK to "
                   "its path");
}

}  // namespace pypto::launch
