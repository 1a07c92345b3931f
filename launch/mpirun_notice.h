// mpirun's own account of how the first rank of its job ended abnormally, read
// from its stderr (launch/stderr_relay.h). Open MPI names the rank there, also
// for a rank that died before it could say HELLO, and its exit code alone
// cannot: 137 says "some rank was killed by SIGKILL", the notice says which.
//
// Open MPI 4 writes, in a block between dashed lines, either
//   mpiexec noticed that process rank 0 with PID 4242 on node vm exited on
//   signal 9 (Killed).
// or
//   mpiexec detected that one or more processes exited with non-zero status,
//   thus causing the job to be terminated. The first process to do so was:
//     Process name: [[54273,1],1]
//     Exit code:    1
// or, for a rank that exited with status 0 without MPI_Finalize,
//   mpiexec has exited due to process rank 1 with PID 0 on node vm exiting
//   improperly. There are three reasons this could occur: ...
// (the text wrapped at any space).
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace pypto::launch {

struct RankEnded {
  int rank = -1;
  int signal = 0;      // the signal that killed it, or 0
  int exit_code = -1;  // its exit code when it exited, or -1
  bool improper = false;  // it exited without MPI_Finalize ("exiting improperly": status 0)
  std::string notice;  // mpirun's sentence, on one line
};

// Fed mpirun's stderr line by line from one thread, read from another.
class MpirunNotices {
 public:
  void add_line(std::string_view line);
  // The first rank mpirun said ended abnormally, once it has said so.
  std::optional<RankEnded> first() const;

 private:
  mutable std::mutex mutex_;
  std::string block_;  // the current dashed block's text, lines joined by spaces
  std::optional<RankEnded> first_;
};

// Whether `block` (a dashed block, as launch/stderr_relay.h holds it) is mpirun's
// account of tearing the job down because ranks exited nonzero ("Primary job
// terminated normally, but 1 process returned a non-zero exit code", "detected that
// one or more processes exited with non-zero status"). After the coordinator has
// aborted the job itself, and said why, such a block tells the user nothing.
bool is_nonzero_exit_banner(std::string_view block);

// The notice in `text` (one block's lines joined by spaces), if there is one.
std::optional<RankEnded> parse_mpirun_notice(const std::string& text);

}  // namespace pypto::launch
