// How a launched job's leader (mpirun) ended.
#pragma once

#include <string>

namespace pypto::launch {

struct ExitStatus {
  int code = -1;   // exit code when it exited normally; -1 otherwise
  int signal = 0;  // the signal that killed it, 0 when it exited

  bool success() const { return signal == 0 && code == 0; }
  // "exited with code 1", "was killed by signal 9 (Killed)"; "ended with an
  // unknown status" when it was reaped elsewhere (SIGCHLD ignored, see Job).
  std::string describe() const;

  // From a waitpid() status word.
  static ExitStatus from_wait_status(int status);
};

}  // namespace pypto::launch
