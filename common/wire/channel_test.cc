#include "common/wire/channel.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/hash.h"

namespace pypto::wire {
namespace {

using std::chrono::milliseconds;

// Options that keep a failing test from hanging: short send timeout, no linger.
ChannelOptions test_options() {
  ChannelOptions options;
  options.linger = milliseconds(0);
  options.send_timeout = milliseconds(2000);
  return options;
}

class ChannelTest : public ::testing::Test {
 protected:
  zmq::context_t context_{1};
  Channel coordinator_ = Channel::bind(context_, "tcp://127.0.0.1:*", test_options());
};

TEST_F(ChannelTest, BindsAnEphemeralPortAndReportsIt) {
  const std::string endpoint = coordinator_.endpoint();
  EXPECT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;
  EXPECT_NE(endpoint, "tcp://127.0.0.1:*");
  EXPECT_EQ(coordinator_.role(), Role::kCoordinator);
}

TEST_F(ChannelTest, HelloWelcomeManifestNeedBlobs) {
  Channel agent = Channel::connect(context_, coordinator_.endpoint(), 2, test_options());
  EXPECT_EQ(agent.role(), Role::kAgent);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);

  Hello hello;
  hello.rank = 2;
  hello.world = 4;
  hello.host = "localhost";
  hello.pid = 1;
  agent.send(hello, {}, 1);

  std::optional<Decoded> got = coordinator_.receive_until(deadline);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->as<Hello>(), hello);
  EXPECT_EQ(got->envelope.sender_rank, 2);
  ASSERT_FALSE(got->identity.empty());
  const std::string peer = got->identity;
  coordinator_.send_to(peer, Welcome{kProtocolVersion, "run-1", 100, 1000}, {},
                       got->envelope.request_id);

  got = agent.receive_until(deadline);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->as<Welcome>().run_id, "run-1");
  EXPECT_EQ(got->envelope.request_id, 1u);
  EXPECT_EQ(got->envelope.sender_rank, kCoordinatorRank);

  const std::string a = "int main() {}\n";
  const std::string b(100000, 'b');  // bigger than one TCP segment
  Manifest manifest;
  manifest.rank = 2;
  manifest.files = {{"a.cpp", a.size(), sha256_hex(a), 0644},
                    {"kernels/b.bin", b.size(), sha256_hex(b), 0644}};
  coordinator_.send_to(peer, manifest, {}, 2);

  got = agent.receive_until(deadline);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->as<Manifest>(), manifest);
  agent.send(Need{{sha256_hex(b)}}, {}, 2);

  got = coordinator_.receive_until(deadline);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->identity, peer);
  ASSERT_EQ(got->as<Need>().hashes.size(), 1u);
  std::vector<zmq::message_t> payloads;
  payloads.push_back(frame_of(b));
  coordinator_.send_to(peer, Blobs{got->as<Need>().hashes}, std::move(payloads), 2);

  got = agent.receive_until(deadline);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->as<Blobs>().hashes, std::vector<std::string>{sha256_hex(b)});
  ASSERT_EQ(got->payloads.size(), 1u);
  EXPECT_EQ(got->payload(0), b);
}

TEST_F(ChannelTest, VersionMismatchOverTheWireGetsARefusal) {
  // A raw DEALER playing an agent of a later protocol.
  zmq::socket_t future(context_, zmq::socket_type::dealer);
  future.set(zmq::sockopt::linger, 0);
  future.set(zmq::sockopt::rcvtimeo, 5000);
  future.connect(coordinator_.endpoint());
  std::string frame = "PPTO";
  const uint32_t later = kProtocolVersion + 1;
  for (uint32_t v : {later, 6u}) {
    for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  frame += "whatever a later protocol looks like";
  future.send(zmq::buffer(frame));

  try {
    coordinator_.receive(milliseconds(5000));
    FAIL() << "expected ProtocolVersionError";
  } catch (const ProtocolVersionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "agent rank 6 speaks control protocol " + std::to_string(later) +
                  ", this coordinator speaks " + std::to_string(kProtocolVersion) +
                  "; use pypto-rank and pypto-coord from the same installation");
    // The coordinator answers in its own version; the stranger reads the fixed prefix.
    coordinator_.send_to(e.peer_identity(), make_version_refusal(e.peer_rank(), e.peer_version()));
  }
  zmq::message_t reply;
  ASSERT_TRUE(future.recv(reply));
  ASSERT_GE(reply.size(), kPrefixSize);
  EXPECT_EQ(std::string(static_cast<const char*>(reply.data()), 4), "PPTO");
  EXPECT_EQ(static_cast<const uint8_t*>(reply.data())[4], kProtocolVersion);
  // A same-version agent would read the reason itself.
  std::vector<zmq::message_t> frames;
  frames.push_back(std::move(reply));
  Decoded decoded = decode(frames, {Role::kAgent, 6});
  EXPECT_EQ(decoded.as<Refuse>().agent_version, later);
}

TEST_F(ChannelTest, GarbageFromAPeerIsAnErrorNotACrash) {
  zmq::socket_t stranger(context_, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::linger, 0);
  stranger.connect(coordinator_.endpoint());
  stranger.send(zmq::buffer(std::string("\x13\x37garbage")));
  try {
    coordinator_.receive(milliseconds(5000));
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed control message from an unidentified peer"),
              std::string::npos)
        << e.what();
    EXPECT_FALSE(e.peer_identity().empty());
  }
  // The channel keeps working afterwards.
  Channel agent = Channel::connect(context_, coordinator_.endpoint(), 0, test_options());
  agent.send(Heartbeat{});
  auto got = coordinator_.receive(milliseconds(5000));
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->is<Heartbeat>());
}

double thread_cpu_ms() {
  struct rusage usage;
  ::getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_utime.tv_sec * 1e3 + usage.ru_utime.tv_usec / 1e3 + usage.ru_stime.tv_sec * 1e3 +
         usage.ru_stime.tv_usec / 1e3;
}

TEST_F(ChannelTest, ReceiveDeadlineSleepsInsteadOfSpinning) {
  Channel agent = Channel::connect(context_, coordinator_.endpoint(), 0, test_options());
  // Measured in a thread of its own so only the wait is counted.
  auto measured = std::async(std::launch::async, [&] {
    const double cpu_before = thread_cpu_ms();
    const auto start = std::chrono::steady_clock::now();
    std::optional<Decoded> got = agent.receive(milliseconds(300));
    const auto wall = std::chrono::steady_clock::now() - start;
    return std::make_tuple(got.has_value(), wall, thread_cpu_ms() - cpu_before);
  });
  const auto [got, wall, cpu_ms] = measured.get();
  EXPECT_FALSE(got);
  EXPECT_GE(wall, milliseconds(290));
  EXPECT_LT(wall, milliseconds(2000));
  EXPECT_LT(cpu_ms, 20.0) << "receive() must block in poll(2), not spin";
}

TEST_F(ChannelTest, WaitReturnsForAQueuedMessageAnotherDescriptorOrTheTimeout) {
  using Clock = std::chrono::steady_clock;
  Channel agent = Channel::connect(context_, coordinator_.endpoint(), 0, test_options());
  agent.send(Heartbeat{}, {}, 1);
  agent.send(Heartbeat{}, {}, 2);
  ASSERT_TRUE(coordinator_.wait({}, milliseconds(5000)));
  std::optional<Decoded> first = coordinator_.receive_until(Clock::now() + milliseconds(5000));
  ASSERT_TRUE(first);
  // The second is queued already: ZMQ_FD need not signal it again, wait must see it.
  auto start = Clock::now();
  EXPECT_TRUE(coordinator_.wait({}, milliseconds(5000)));
  std::optional<Decoded> second = coordinator_.receive(milliseconds(0));
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  ASSERT_TRUE(second);
  EXPECT_EQ(first->envelope.request_id + second->envelope.request_id, 3u);

  const int event = eventfd(1, EFD_CLOEXEC);  // readable from the start
  ASSERT_GE(event, 0);
  pollfd other{event, POLLIN, 0};
  start = Clock::now();
  EXPECT_FALSE(coordinator_.wait({&other, 1}, milliseconds(5000)));
  EXPECT_TRUE(other.revents & POLLIN);
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  ::close(event);

  start = Clock::now();
  EXPECT_FALSE(coordinator_.wait({}, milliseconds(150)));
  EXPECT_GE(Clock::now() - start, milliseconds(140));
}

TEST_F(ChannelTest, ReceiveUntilAPassedDeadlineReturnsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(coordinator_.receive_until(start - milliseconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(100));
}

TEST_F(ChannelTest, SendingToAGonePeerFails) {
  try {
    coordinator_.send_to("no-such-peer", Shutdown{});
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot send SHUTDOWN to the agent"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("disconnected"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pypto::wire
