#include "launch/session.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pypto::launch {

namespace {

// State and session of /proc/<pid>/stat; false when the process is gone.
// The command name in parentheses may itself hold spaces and ')', so fields
// are counted after the last ')'.
bool read_stat(pid_t pid, char& state, pid_t& session) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[1024];
  ssize_t n;
  do {
    n = ::read(fd, buffer, sizeof buffer - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return false;
  buffer[n] = '\0';
  const char* close_paren = std::strrchr(buffer, ')');
  if (!close_paren) return false;
  int ppid = 0;
  int pgrp = 0;
  int sid = 0;
  if (std::sscanf(close_paren + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4) return false;
  session = static_cast<pid_t>(sid);
  return true;
}

}  // namespace

std::vector<pid_t> session_members(pid_t sid) {
  std::vector<pid_t> members;
  DIR* proc = ::opendir("/proc");
  if (!proc) return members;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    char state = 0;
    pid_t session = 0;
    if (!read_stat(static_cast<pid_t>(pid), state, session) || session != sid) continue;
    // Zombies are dead already; their parent (or init) reaps them.
    if (state == 'Z' || state == 'X') continue;
    members.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return members;
}

int signal_session(pid_t sid, int signal) {
  int reached = 0;
  for (pid_t pid : session_members(sid))
    if (::kill(pid, signal) == 0) ++reached;
  return reached;
}

}  // namespace pypto::launch
