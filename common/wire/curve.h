// ZeroMQ CURVE on the control plane (docs/protocol.md, "Authentication").
//
// Every run makes two fresh key pairs: the coordinator's (its ROUTER is a
// CURVE server) and the agents' (one pair shared by the ranks of the run,
// their DEALERs are CURVE clients). An agent needs the coordinator's public
// key and the agents' secret key; both travel in one environment variable,
// PYPTO_RUN_KEY (80 Z85 characters: the coordinator's public key, then the
// agents' secret key), which pypto-coord sets in mpirun's environment and
// exports with `-x PYPTO_RUN_KEY`, never in an argv. PYPTO_RUN_KEY_FILE names
// a file holding the same text instead; it must be private to its owner.
//
// CurveAuthenticator is the coordinator's ZAP handler: it accepts exactly the
// run's agent key, so a peer without it never completes the handshake and not
// one of its bytes reaches the protocol. Refusals and failed handshakes are
// logged, rate-limited.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "pypto/run_config.h"

namespace pypto::wire {

inline constexpr char kRunKeyEnv[] = "PYPTO_RUN_KEY";
inline constexpr char kRunKeyFileEnv[] = "PYPTO_RUN_KEY_FILE";

// Z85 text, 40 characters each.
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
};

// A fresh pair from libsodium's random source. Throws InfraError when this
// libzmq was built without CURVE.
CurveKeyPair generate_curve_keypair();

// What an agent holds: the coordinator's public key and the agents' key pair.
struct AgentKey {
  std::string server_public;
  CurveKeyPair client;
};

// The keys of one run, made by the coordinator.
struct RunKeys {
  CurveKeyPair server;
  CurveKeyPair client;
  static RunKeys generate();
  // The value of PYPTO_RUN_KEY for this run's agents.
  std::string agent_key_text() const;
};

// Parses PYPTO_RUN_KEY's text; `source` names where it came from in errors.
// Throws InfraError naming what is wrong (length, a character outside Z85).
AgentKey parse_agent_key(const std::string& text, const std::string& source);

// The agent's key: $PYPTO_RUN_KEY, else the file $PYPTO_RUN_KEY_FILE (a regular
// file of this user, no group or other permission bits). Throws InfraError
// when neither is set or the value is bad, saying how pypto-coord passes it.
AgentKey agent_key_from_env(const EnvLookup& env = process_env());

// Drops a counter of repeated events to a log line at most once per `interval`:
// the first few are logged one by one, then a summary of how many were seen.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::chrono::milliseconds interval = std::chrono::seconds(1),
                          int burst = 5)
      : interval_(interval), burst_(burst) {}
  // Logs `message` at warn level unless the limit is reached.
  void warn(const std::string& message);
  uint64_t total() const { return total_; }

 private:
  std::chrono::milliseconds interval_;
  int burst_;
  uint64_t total_ = 0;
  uint64_t suppressed_ = 0;
  int in_window_ = 0;
  std::chrono::steady_clock::time_point window_start_{};
};

// The ZAP handler (RFC 27) of one context, on a thread of its own, plus a
// monitor of one socket's failed handshakes. Construct it before the CURVE
// server socket binds; it lives as long as that socket.
class CurveAuthenticator {
 public:
  CurveAuthenticator(zmq::context_t& context, std::string allowed_client_public);
  ~CurveAuthenticator();
  CurveAuthenticator(const CurveAuthenticator&) = delete;
  CurveAuthenticator& operator=(const CurveAuthenticator&) = delete;

  // Logs handshakes of `socket` that fail (garbage bytes, a NULL-mechanism peer,
  // a wrong server key). Call once, from the socket's thread, right after it binds.
  void monitor(zmq::socket_t& socket);

  // Peers refused so far: ZAP denials plus failed handshakes.
  uint64_t refused() const { return refused_.load(); }
  // Peers the ZAP handler accepted.
  uint64_t accepted() const { return accepted_.load(); }

 private:
  void serve(zmq::socket_t zap, zmq::socket_t stop, zmq::socket_t monitor);
  void answer_zap(zmq::socket_t& zap);
  void read_monitor_event(zmq::socket_t& monitor);

  zmq::context_t& context_;
  std::string allowed_;  // 32 raw bytes
  std::string stop_endpoint_;
  std::string monitor_endpoint_;
  zmq::socket_t stop_sender_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> accepted_{0};
  RateLimitedLog log_;
  std::thread thread_;
};

}  // namespace pypto::wire
