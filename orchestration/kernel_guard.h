// Runs user code (a kernel or an orchestration entry) so that an error it
// reports, an exception it throws, or a crash with SIGSEGV/SIGBUS/SIGFPE/SIGILL
// becomes a failure message instead of taking the process down. A crash is
// caught by a signal handler that jumps back to the guard (on an alternate
// stack, so a stack overflow is caught too); the process stays usable where
// the crash did not corrupt shared state.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace pypto::chip {

// Prepares the calling thread (alternate signal stack) and installs the
// process-wide handlers once. Call on every thread that runs guarded code.
void prepare_guarded_thread();

// Runs `fn`; returns nullopt on success or the reason it failed:
// "threw std::runtime_error: ...", "crashed with SIGSEGV (segmentation fault)".
std::optional<std::string> run_guarded(const std::function<void()>& fn);

}  // namespace pypto::chip
