#include "common/wire/curve.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>
#include <zmq_addon.hpp>

#include "common/log.h"
#include "pypto/error.h"

namespace pypto::wire {

namespace {

constexpr size_t kZ85KeyLength = 40;

std::string how_it_is_passed() {
  return std::string("pypto-coord sets ") + kRunKeyEnv +
         " for the agents it launches; with --agents external, launch them with the command "
         "pypto-coord prints (it sets " +
         kRunKeyEnv + " and passes it with mpirun -x " + kRunKeyEnv + ")";
}

// A unique inproc name per use, so two authenticators of one process never meet.
std::string inproc_name(const char* what) {
  static std::atomic<uint64_t> counter{0};
  return "inproc://pypto-curve-" + std::string(what) + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++);
}

std::string frame_text(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

std::string handshake_failure(uint16_t event, uint32_t value) {
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) return "its CURVE key is not this run's";
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) return "the connection broke off";
  switch (value) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
      return "it does not speak CURVE (no key)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
      return "its handshake does not decrypt (a wrong coordinator key)";
    default:
      return "it broke the ZMTP/CURVE handshake (protocol error " + std::to_string(value) + ")";
  }
}

}  // namespace

CurveKeyPair generate_curve_keypair() {
  if (!zmq_has("curve"))
    throw InfraError(
        "this libzmq was built without CURVE, which the control plane needs to authenticate its "
        "peers; install Debian's libzmq5 (built with libsodium)");
  std::array<char, 41> public_key{}, secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0)
    throw InfraError(std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno()));
  return {public_key.data(), secret_key.data()};
}

RunKeys RunKeys::generate() { return {generate_curve_keypair(), generate_curve_keypair()}; }

std::string RunKeys::agent_key_text() const { return server.public_key + client.secret_key; }

AgentKey parse_agent_key(const std::string& raw, const std::string& source) {
  std::string text = raw;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (text.size() != 2 * kZ85KeyLength)
    throw InfraError(source + " holds " + std::to_string(text.size()) +
                     " characters, but a run key is " + std::to_string(2 * kZ85KeyLength) +
                     " (Z85: the coordinator's public key, then the agents' secret key); " +
                     how_it_is_passed());
  AgentKey key;
  key.server_public = text.substr(0, kZ85KeyLength);
  key.client.secret_key = text.substr(kZ85KeyLength);
  std::array<uint8_t, 32> raw_key{};
  for (const std::string* part : {&key.server_public, &key.client.secret_key})
    if (!zmq_z85_decode(raw_key.data(), part->c_str()))
      throw InfraError(source + " is not a run key: it holds characters outside Z85; " +
                       how_it_is_passed());
  std::array<char, 41> public_key{};
  if (zmq_curve_public(public_key.data(), key.client.secret_key.c_str()) != 0)
    throw InfraError(std::string("cannot derive the agents' public key: ") +
                     zmq_strerror(zmq_errno()));
  key.client.public_key = public_key.data();
  return key;
}

AgentKey agent_key_from_env(const EnvLookup& env) {
  if (auto text = env(kRunKeyEnv); text && !text->empty())
    return parse_agent_key(*text, std::string("$") + kRunKeyEnv);
  if (auto file = env(kRunKeyFileEnv); file && !file->empty()) {
    const std::string source = std::string("$") + kRunKeyFileEnv + " (" + *file + ")";
    struct stat info {};
    if (::stat(file->c_str(), &info) != 0)
      throw InfraError(source + " cannot be read: " + std::strerror(errno) + "; " +
                       how_it_is_passed());
    if (!S_ISREG(info.st_mode)) throw InfraError(source + " is not a regular file");
    if (info.st_uid != ::geteuid() || (info.st_mode & (S_IRWXG | S_IRWXO)) != 0)
      throw InfraError(source + " is readable by others (mode " +
                       std::to_string((info.st_mode >> 6) & 7) +
                       std::to_string((info.st_mode >> 3) & 7) + std::to_string(info.st_mode & 7) +
                       " or another owner); make it yours with chmod 600");
    std::ifstream in(*file);
    std::stringstream content;
    content << in.rdbuf();
    return parse_agent_key(content.str(), source);
  }
  throw InfraError(std::string("no run key: neither ") + kRunKeyEnv + " nor " + kRunKeyFileEnv +
                   " is set, and the coordinator accepts only agents that hold its run's key; " +
                   how_it_is_passed());
}

void RateLimitedLog::warn(const std::string& message) {
  const auto now = std::chrono::steady_clock::now();
  ++total_;
  if (now - window_start_ >= interval_) {
    if (suppressed_ > 0)
      log::warn("... and {} more like it in the last {} ms", suppressed_, interval_.count());
    window_start_ = now;
    in_window_ = 0;
    suppressed_ = 0;
  }
  if (in_window_ < burst_) {
    ++in_window_;
    log::warn("{}", message);
  } else {
    ++suppressed_;
  }
}

CurveAuthenticator::CurveAuthenticator(zmq::context_t& context, std::string allowed_client_public)
    : context_(context),
      stop_endpoint_(inproc_name("stop")),
      monitor_endpoint_(inproc_name("monitor")),
      stop_sender_(context, zmq::socket_type::pair) {
  allowed_.resize(32);
  if (!zmq_z85_decode(reinterpret_cast<uint8_t*>(allowed_.data()), allowed_client_public.c_str()))
    throw InfraError("the agents' public key is not Z85 text");
  // Bound here, before any CURVE server of this context accepts a connection.
  zmq::socket_t zap(context, zmq::socket_type::rep);
  zap.set(zmq::sockopt::linger, 0);
  try {
    zap.bind("inproc://zeromq.zap.01");
  } catch (const zmq::error_t& e) {
    throw InfraError(std::string("cannot start the control plane's authenticator: ") + e.what() +
                     " (another ZAP handler in this ZeroMQ context?)");
  }
  zmq::socket_t stop(context, zmq::socket_type::pair);
  stop.bind(stop_endpoint_);
  stop_sender_.set(zmq::sockopt::linger, 0);
  stop_sender_.connect(stop_endpoint_);
  // Connected before the monitored socket binds its end (inproc allows either order).
  zmq::socket_t monitor(context, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(monitor_endpoint_);
  thread_ = std::thread([this, zap = std::move(zap), stop = std::move(stop),
                         monitor = std::move(monitor)]() mutable {
    serve(std::move(zap), std::move(stop), std::move(monitor));
  });
}

CurveAuthenticator::~CurveAuthenticator() {
  try {
    stop_sender_.send(zmq::str_buffer("stop"), zmq::send_flags::dontwait);
  } catch (const std::exception&) {
  }
  if (thread_.joinable()) thread_.join();
}

void CurveAuthenticator::monitor(zmq::socket_t& socket) {
  const int events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  if (zmq_socket_monitor(socket.handle(), monitor_endpoint_.c_str(), events) != 0)
    log::warn("cannot watch the control socket's failed handshakes: {}", zmq_strerror(zmq_errno()));
}

void CurveAuthenticator::serve(zmq::socket_t zap, zmq::socket_t stop, zmq::socket_t monitor) {
  for (;;) {
    zmq::pollitem_t items[3] = {{zap.handle(), 0, ZMQ_POLLIN, 0},
                                {stop.handle(), 0, ZMQ_POLLIN, 0},
                                {monitor.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 3, std::chrono::milliseconds(-1));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      if (e.num() != ETERM) log::error("the control plane's authenticator stopped: {}", e.what());
      return;
    }
    try {
      if (items[1].revents & ZMQ_POLLIN) return;
      if (items[0].revents & ZMQ_POLLIN) answer_zap(zap);
      if (items[2].revents & ZMQ_POLLIN) read_monitor_event(monitor);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      log::error("the control plane's authenticator: {}", e.what());
    }
  }
}

void CurveAuthenticator::answer_zap(zmq::socket_t& zap) {
  std::vector<zmq::message_t> request;
  if (!zmq::recv_multipart(zap, std::back_inserter(request), zmq::recv_flags::dontwait)) return;
  // RFC 27: version, request id, domain, address, identity, mechanism, credentials.
  std::string status = "400", text = "not this run's key";
  std::string address = request.size() > 3 ? frame_text(request[3]) : "?";
  if (request.size() < 6 || frame_text(request[0]) != "1.0") {
    text = "malformed ZAP request";
  } else if (frame_text(request[5]) != "CURVE") {
    text = "CURVE only";
  } else if (request.size() == 7 && request[6].size() == 32 && frame_text(request[6]) == allowed_) {
    status = "200";
    text = "OK";
  }
  std::array<zmq::const_buffer, 6> reply = {
      zmq::buffer(std::string_view("1.0")),
      zmq::buffer(request.size() > 1 ? request[1].data() : nullptr,
                  request.size() > 1 ? request[1].size() : 0),
      zmq::buffer(std::string_view(status)),
      zmq::buffer(std::string_view(text)),
      zmq::buffer(std::string_view(status == "200" ? "agent" : "")),
      zmq::const_buffer()};
  zmq::send_multipart(zap, reply);
  if (status == "200") {
    ++accepted_;
  } else {
    log_.warn("control plane: refused a connection from " + address + ": " + text +
              "; the peer was dropped and the run goes on");
  }
}

void CurveAuthenticator::read_monitor_event(zmq::socket_t& monitor) {
  std::vector<zmq::message_t> event;
  if (!zmq::recv_multipart(monitor, std::back_inserter(event), zmq::recv_flags::dontwait)) return;
  if (event.empty() || event[0].size() < 6) return;
  uint16_t id = 0;
  uint32_t value = 0;
  std::memcpy(&id, event[0].data(), sizeof id);
  std::memcpy(&value, static_cast<const char*>(event[0].data()) + 2, sizeof value);
  ++refused_;
  // A ZAP denial was logged, with the peer's address, when it was made.
  if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) return;
  const std::string endpoint = event.size() > 1 ? frame_text(event[1]) : "the control socket";
  log_.warn("control plane: dropped a connection to " + endpoint + ": " +
            handshake_failure(id, value) + "; the run goes on");
}

}  // namespace pypto::wire
