// The control plane is authenticated (docs/protocol.md, "Threat model"): a
// local process without the run's key can neither join a run, nor abort it,
// nor read anything of it; one that holds the key but is not an agent of the
// job is refused by the HELLO identity check. The run itself goes on and
// validates.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/wire/channel.h"
#include "common/wire/curve.h"
#include "common/wire/protocol.h"
#include "tests/e2e/l3_util.h"

namespace pypto::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A DEALER on `endpoint`: without CURVE when `key` is null, else a CURVE client.
zmq::socket_t intruder(zmq::context_t& context, const std::string& endpoint,
                       const wire::AgentKey* key) {
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  if (key) {
    dealer.set(zmq::sockopt::curve_serverkey, key->server_public);
    dealer.set(zmq::sockopt::curve_publickey, key->client.public_key);
    dealer.set(zmq::sockopt::curve_secretkey, key->client.secret_key);
  }
  dealer.connect(endpoint);
  return dealer;
}

// A well-formed HELLO claiming `rank`, with this process's pid.
void send_hello(zmq::socket_t& dealer, int rank, int world) {
  wire::Hello hello;
  hello.rank = rank;
  hello.world = world;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  hello.host = host;
  hello.pid = ::getpid();
  hello.protocol_version = wire::kProtocolVersion;
  hello.mpi_thread_level = "MPI_THREAD_MULTIPLE";
  zmq::send_multipart(dealer, wire::encode(hello, {}, rank, 1));
}

// Frames the peer received within `wait`.
std::vector<zmq::message_t> received(zmq::socket_t& dealer, milliseconds wait) {
  std::vector<zmq::message_t> frames;
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, wait) > 0)
    (void)zmq::recv_multipart(dealer, std::back_inserter(frames), zmq::recv_flags::dontwait);
  return frames;
}

void write_raw(int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    (void)written;
  }
  ::close(fd);
}

TEST(ControlPlaneAuthTest, StrangersCannotJoinAbortOrReadARunAndImpostorsAreRefused) {
  const std::string tag = "auth";
  const fs::path dir = copy_fixture("l3/allreduce_w2", "l3_auth");
  const int port = free_tcp_port();
  ASSERT_GT(port, 0);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  Background coordinator = start_background(
      {kCoordBin.string(), "run", dir.string(), "--validate", "--agents", "external", "--bind",
       endpoint, "--startup-timeout", "60"},
      l3_env(tag), "auth_coord");
  const std::string key_text = printed_run_key(coordinator);
  ASSERT_EQ(key_text.size(), 80u) << coordinator.stderr_text();
  const wire::AgentKey key = wire::parse_agent_key(key_text, "the output");

  zmq::context_t context;
  // No key at all: a HELLO for each rank, an AGENT_ERROR, an empty frame.
  zmq::socket_t plain = intruder(context, endpoint, nullptr);
  send_hello(plain, 0, 2);
  send_hello(plain, 1, 2);
  zmq::send_multipart(plain, wire::encode(wire::AgentError{0, "forged", 1}, {}, 0));
  plain.send(zmq::message_t(), zmq::send_flags::none);
  // The coordinator's public key but another client key (what a peer that read the
  // server key somewhere, not the agents' secret, could do).
  wire::AgentKey stolen_server = key;
  stolen_server.client = wire::generate_curve_keypair();
  zmq::socket_t half = intruder(context, endpoint, &stolen_server);
  send_hello(half, 0, 2);
  // Bytes that are not ZMTP at all.
  write_raw(port, std::string(64, '\0') + "GET / HTTP/1.1\r\n\r\n");
  // The full key, but not an agent of the job: the HELLO identity check refuses it.
  zmq::socket_t impostor = intruder(context, endpoint, &key);
  send_hello(impostor, 1, 2);
  std::vector<zmq::message_t> refusal = received(impostor, seconds(20));
  ASSERT_EQ(refusal.size(), 1u) << coordinator.stderr_text();
  wire::Decoded refused = wire::decode(refusal, {wire::Role::kAgent, 1});
  ASSERT_TRUE(refused.is<wire::Refuse>());
  EXPECT_TRUE(contains(refused.as<wire::Refuse>().reason, "not a pypto-rank agent"))
      << refused.as<wire::Refuse>().reason;

  // Now the real agents, with the key the coordinator printed.
  std::vector<std::string> env = l3_env(tag);
  env.push_back("PYPTO_RUN_KEY=" + key_text);
  CoordResult agents = run_split(
      {kMpirun.string(), "--allow-run-as-root", "--oversubscribe", "-x", "PYPTO_RUN_KEY", "-n",
       "2", kRankBin.string(), "--coord", endpoint},
      env);
  EXPECT_EQ(agents.exit_code, 0) << agents.all();
  const auto status = coordinator.job.wait_for(seconds(60));
  ASSERT_TRUE(status);
  const std::string err = coordinator.stderr_text();
  EXPECT_EQ(status->code, 0) << coordinator.stdout_text() << err;
  EXPECT_TRUE(contains(coordinator.stdout_text(), "validation: passed")) << err;
  // Nothing of the run reached the peers without the key.
  EXPECT_TRUE(received(plain, milliseconds(200)).empty());
  EXPECT_TRUE(received(half, milliseconds(200)).empty());
  // The coordinator said what it dropped.
  EXPECT_TRUE(contains(err, "control plane: dropped a connection to " + endpoint)) << err;
  EXPECT_TRUE(contains(err, "refused a connection from 127.0.0.1: not this run's key")) << err;
  EXPECT_TRUE(contains(err, "refused a HELLO claiming rank 1")) << err;
  EXPECT_TRUE(survivors(tag).empty()) << "processes of the run were left behind";
}

}  // namespace
}  // namespace pypto::e2e
