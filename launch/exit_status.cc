#include "launch/exit_status.h"

#include <sys/wait.h>

#include <cstring>

namespace pypto::launch {

std::string ExitStatus::describe() const {
  if (signal != 0)
    return "was killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  if (code >= 0) return "exited with code " + std::to_string(code);
  return "ended with an unknown status";
}

ExitStatus ExitStatus::from_wait_status(int status) {
  ExitStatus result;
  if (WIFEXITED(status)) result.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace pypto::launch
