#include "orchestration/kernel_guard.h"

#include <cxxabi.h>
#include <setjmp.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <typeinfo>
#include <vector>

namespace pypto::chip {

namespace {

thread_local sigjmp_buf* t_jump = nullptr;
// The alternate signal stack of this thread, released when the thread ends.
struct AltStack {
  std::vector<char> memory;
  ~AltStack() {
    if (memory.empty()) return;
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
  }
};
thread_local AltStack t_altstack;

const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

void on_crash(int sig, siginfo_t*, void*) {
  if (t_jump) siglongjmp(*t_jump, sig);
  // Not inside guarded code: die the ordinary way, with a core dump.
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
}

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  return name;
}

std::string describe_signal(int sig) {
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
                     : sig == SIGFPE ? "SIGFPE" : sig == SIGILL ? "SIGILL" : "signal";
  return std::string("crashed with ") + name + " (" + strsignal(sig) + ")";
}

}  // namespace

void prepare_guarded_thread() {
  static std::once_flag once;
  std::call_once(once, install_handlers);
  if (!t_altstack.memory.empty()) return;
  t_altstack.memory.resize(64 * 1024);
  stack_t ss{};
  ss.ss_sp = t_altstack.memory.data();
  ss.ss_size = t_altstack.memory.size();
  sigaltstack(&ss, nullptr);
}

std::optional<std::string> run_guarded(const std::function<void()>& fn) {
  prepare_guarded_thread();
  sigjmp_buf buf;
  sigjmp_buf* outer = t_jump;
  // savemask=0: saving the mask costs an rt_sigprocmask syscall per call (~2-5 us
  // on this VM); the handler runs with SA_NODEFER and an empty sa_mask, so a
  // crash leaves the mask as it was and there is nothing to restore.
  int sig = sigsetjmp(buf, 0);
  if (sig != 0) {
    t_jump = outer;
    return describe_signal(sig);
  }
  t_jump = &buf;
  std::optional<std::string> failure;
  try {
    fn();
  } catch (const std::exception& e) {
    failure = "threw " + type_name(typeid(e)) + ": " + e.what();
  } catch (...) {
    failure = "threw an exception that is not a std::exception";
  }
  t_jump = outer;
  return failure;
}

}  // namespace pypto::chip
