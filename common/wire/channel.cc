#include "common/wire/channel.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <zmq_addon.hpp>

namespace pypto::wire {

namespace {

void apply_options(zmq::socket_t& socket, const ChannelOptions& options) {
  socket.set(zmq::sockopt::linger, static_cast<int>(options.linger.count()));
  socket.set(zmq::sockopt::sndtimeo, static_cast<int>(options.send_timeout.count()));
  socket.set(zmq::sockopt::sndhwm, options.high_water_mark);
  socket.set(zmq::sockopt::rcvhwm, options.high_water_mark);
  if (options.transport_heartbeat.count() > 0) {
    socket.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(options.transport_heartbeat.count()));
    socket.set(zmq::sockopt::heartbeat_timeout,
               static_cast<int>(options.transport_heartbeat_timeout.count()));
  }
}

std::string describe_identity(std::string_view identity) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char c : identity) {
    text.push_back(kHex[c >> 4]);
    text.push_back(kHex[c & 0xf]);
  }
  return text;
}

}  // namespace

Channel::Channel(zmq::socket_t socket, DecodeContext context)
    : socket_(std::move(socket)), context_(context) {}

Channel Channel::connect(zmq::context_t& context, const std::string& endpoint, int32_t rank,
                         const ChannelOptions& options) {
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  apply_options(socket, options);
  if (options.curve_client) {
    socket.set(zmq::sockopt::curve_serverkey, options.curve_client->server_public);
    socket.set(zmq::sockopt::curve_publickey, options.curve_client->client.public_key);
    socket.set(zmq::sockopt::curve_secretkey, options.curve_client->client.secret_key);
  }
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw InfraError("rank " + std::to_string(rank) + " cannot connect to the coordinator at '" +
                     endpoint + "': " + e.what() + "; pass --coord tcp://HOST:PORT as printed " +
                     "by pypto-coord");
  }
  return Channel(std::move(socket), DecodeContext{Role::kAgent, rank});
}

Channel Channel::bind(zmq::context_t& context, const std::string& endpoint,
                      const ChannelOptions& options) {
  zmq::socket_t socket(context, zmq::socket_type::router);
  apply_options(socket, options);
  // Fail loudly instead of dropping a message addressed to a peer that has gone.
  socket.set(zmq::sockopt::router_mandatory, true);
  if (options.curve_server) {
    socket.set(zmq::sockopt::curve_server, true);
    socket.set(zmq::sockopt::curve_secretkey, options.curve_server->secret_key);
    socket.set(zmq::sockopt::zap_domain, "pypto");
  }
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw InfraError("the coordinator cannot bind its control socket to '" + endpoint +
                     "': " + e.what() + "; choose another --bind address or port");
  }
  return Channel(std::move(socket), DecodeContext{Role::kCoordinator, kCoordinatorRank});
}

std::string Channel::endpoint() const { return socket_.get(zmq::sockopt::last_endpoint); }

void Channel::send_frames(std::vector<zmq::message_t>& frames, const std::string& what) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    zmq::send_result_t sent;
    try {
      sent = socket_.send(frames[i], flags);
    } catch (const zmq::error_t& e) {
      if (e.num() == EHOSTUNREACH) {
        throw InfraError("cannot send " + what + ": the peer has disconnected");
      }
      throw InfraError("cannot send " + what + ": " + e.what());
    }
    // ZeroMQ queues a multipart message atomically: only the first frame can time out.
    if (!sent) {
      throw InfraError("cannot send " + what + ": the peer has not read for " +
                       std::to_string(socket_.get(zmq::sockopt::sndtimeo)) +
                       " ms (its queue is full); it is stuck or gone");
    }
  }
}

void Channel::send(const Message& message, std::vector<zmq::message_t> payloads,
                   uint64_t request_id) {
  std::vector<zmq::message_t> frames =
      encode(message, std::move(payloads), context_.local_rank, request_id);
  send_frames(frames, message_type_name(type_of(message)) + " to the coordinator");
}

void Channel::send_to(std::string_view identity, const Message& message,
                      std::vector<zmq::message_t> payloads, uint64_t request_id) {
  std::vector<zmq::message_t> frames =
      encode_routed(identity, message, std::move(payloads), request_id);
  send_frames(frames, message_type_name(type_of(message)) + " to the agent with routing id " +
                          describe_identity(identity));
}

std::optional<Decoded> Channel::receive(std::chrono::milliseconds timeout) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  for (;;) {
    std::vector<zmq::message_t> frames;
    zmq::recv_result_t received;
    try {
      // Straight to the socket: a zmq_poll first would cost two more system calls.
      received =
          zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) return std::nullopt;
      throw InfraError(std::string("reading the control socket failed: ") + e.what());
    }
    if (received)
      return context_.role == Role::kCoordinator ? decode_routed(frames, context_)
                                                 : decode(frames, context_);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !wait({}, left)) return std::nullopt;
  }
}

bool Channel::wait(std::span<pollfd> others, std::chrono::milliseconds timeout) {
  try {
    // ZMQ_FD only says the socket's mailbox changed: what is already queued must be
    // seen before sleeping on it.
    if (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN) {
      for (pollfd& fd : others) fd.revents = 0;
      return true;
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw InfraError(std::string("waiting on the control socket failed: ") + e.what());
  }
  std::vector<pollfd> fds(others.begin(), others.end());
  fds.push_back({socket_.get(zmq::sockopt::fd), POLLIN, 0});
  const int timeout_ms =
      timeout.count() < 0 ? -1 : static_cast<int>(std::min<int64_t>(timeout.count(), INT32_MAX));
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
    if (errno == EINTR) return false;
    throw InfraError(std::string("waiting on the control socket failed: ") + std::strerror(errno));
  }
  for (size_t i = 0; i < others.size(); ++i) others[i].revents = fds[i].revents;
  return fds.back().revents != 0;
}

std::optional<Decoded> Channel::receive_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  // Round up: a sub-millisecond remainder must still sleep, not spin on 0 ms polls.
  return receive(
      std::max(std::chrono::ceil<std::chrono::milliseconds>(left), std::chrono::milliseconds(0)));
}

}  // namespace pypto::wire
