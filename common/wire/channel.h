// A control-plane socket with the protocol's framing, socket options and
// blocking receive: the coordinator binds a ROUTER, each agent connects a
// DEALER. receive() sleeps in poll(2) until a message arrives or the timeout
// passes; nothing on the control plane ever busy-polls (8 agents share 2
// cores on the development machines, docs/protocol.md).
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "common/wire/curve.h"
#include "common/wire/protocol.h"

namespace pypto::wire {

struct ChannelOptions {
  // How long close() may still flush queued messages (a final SHUTDOWN or AGENT_ERROR);
  // short, so a process never hangs on exit behind a dead peer.
  std::chrono::milliseconds linger{500};
  // A send that cannot be queued for this long (the peer stopped reading) fails.
  std::chrono::milliseconds send_timeout{30000};
  // Messages (not frames) queued per peer in each direction.
  int high_water_mark = 10000;
  // ZMTP-level ping: closes the connection of a peer whose host vanished without a TCP
  // reset. 0 turns it off. The protocol's own HEARTBEAT messages are what decides liveness;
  // the timeout is longer than theirs so that a freeze of the whole host (after which
  // both sides discount the pause, common/pause_log.h) does not drop a connection and
  // the messages queued on it.
  std::chrono::milliseconds transport_heartbeat{1000};
  std::chrono::milliseconds transport_heartbeat_timeout{30000};
  // CURVE (common/wire/curve.h). bind(): the coordinator's key pair makes the ROUTER a
  // CURVE server. connect(): the agent's key makes the DEALER a CURVE client. Unset:
  // no encryption (unit tests of the framing only; pypto-coord and pypto-rank always
  // set them).
  std::optional<CurveKeyPair> curve_server;
  std::optional<AgentKey> curve_client;
};

class Channel {
 public:
  // Agent side: a DEALER connected to `endpoint` ("tcp://host:port"), sending as `rank`.
  static Channel connect(zmq::context_t& context, const std::string& endpoint, int32_t rank,
                         const ChannelOptions& options = {});
  // Coordinator side: a ROUTER bound to `endpoint`; "tcp://127.0.0.1:*" takes an ephemeral
  // port, which endpoint() then reports.
  static Channel bind(zmq::context_t& context, const std::string& endpoint,
                      const ChannelOptions& options = {});

  Channel(Channel&&) noexcept = default;
  Channel& operator=(Channel&&) noexcept = default;

  Role role() const { return context_.role; }
  // ZMQ_LAST_ENDPOINT: the resolved address ("tcp://127.0.0.1:41234").
  std::string endpoint() const;

  // DEALER: sends to the coordinator. Throws InfraError when the send times out.
  void send(const Message& message, std::vector<zmq::message_t> payloads = {},
            uint64_t request_id = 0);
  // ROUTER: sends to the agent whose routing id is `identity` (Decoded::identity). Throws
  // InfraError when that peer is gone (the ROUTER is mandatory-routing) or the send times out.
  void send_to(std::string_view identity, const Message& message,
               std::vector<zmq::message_t> payloads = {}, uint64_t request_id = 0);

  // Blocks in wait() up to `timeout` (0: just look). nullopt when nothing arrived in time
  // or a signal interrupted the wait (callers loop on their own deadline and check their
  // signal flags). A malformed message throws ProtocolError (a version mismatch:
  // ProtocolVersionError) and is consumed.
  std::optional<Decoded> receive(std::chrono::milliseconds timeout);
  std::optional<Decoded> receive_until(std::chrono::steady_clock::time_point deadline);
  // Sleeps until a message may be waiting on the socket, one of `others` is readable
  // (their revents say which), `timeout` passes (negative: no limit) or a signal
  // arrives; true when the socket may have a message (then receive(0) says). One
  // poll(2) on the socket's ZMQ_FD beside `others`, where zmq_poll makes several calls.
  bool wait(std::span<pollfd> others, std::chrono::milliseconds timeout);

  // For callers that poll this socket together with other descriptors.
  zmq::socket_t& socket() { return socket_; }
  const DecodeContext& decode_context() const { return context_; }

 private:
  Channel(zmq::socket_t socket, DecodeContext context);
  void send_frames(std::vector<zmq::message_t>& frames, const std::string& what);

  zmq::socket_t socket_;
  DecodeContext context_;
};

}  // namespace pypto::wire
