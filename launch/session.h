// The processes of a session, read from /proc. A job runs in its own session
// because Open MPI's mpirun moves every rank it starts into a process group of
// its own: kill(-pgid) reaches mpirun but not the ranks, while the session id
// survives setpgid() and is inherited by everything the job starts (short of a
// process calling setsid() itself).
#pragma once

#include <sys/types.h>

#include <vector>

namespace pypto::launch {

// Live (not zombie) processes whose session id is `sid`, this process excluded.
std::vector<pid_t> session_members(pid_t sid);

// Sends `signal` to each of session_members(sid); returns how many it reached.
int signal_session(pid_t sid, int signal);

}  // namespace pypto::launch
