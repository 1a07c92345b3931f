// Which pypto-rank the launched MPI job runs.
#pragma once

#include <filesystem>
#include <optional>

namespace pypto::launch {

// The pypto-rank to launch, as an absolute path (mpirun starts it on every
// host, so it must not depend on PATH there). The first that applies wins:
//   1. explicit_path (the caller's --rank-binary),
//   2. $PYPTO_RANK,
//   3. pypto-rank next to this executable (an installed pypto-coord),
//   4. rank_agent/pypto-rank beside this executable's directory (pypto-coord
//      run from the build tree, build/coordinator/ next to build/rank_agent/),
//   5. <prefix>/bin/pypto-rank of a host program's installed libpypto.so
//      (<prefix>/lib/); "this executable" in 3 and 4 is then the library,
//   6. pypto-rank in PATH.
// A value in 1 or 2 that is not an executable file is an error rather than a
// reason to fall through: the user asked for that binary. A bare name there is
// looked up in PATH. Throws InfraError (exit 3) naming what was tried.
std::filesystem::path find_rank_binary(const std::optional<std::filesystem::path>& explicit_path);

// The same search with this executable's path given (the tests' seam for 3-5).
std::filesystem::path find_rank_binary(const std::optional<std::filesystem::path>& explicit_path,
                                       const std::filesystem::path& self_exe);

}  // namespace pypto::launch
