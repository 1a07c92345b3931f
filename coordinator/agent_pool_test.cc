// The coordinator's view of one agent whose worker thread opens a data connection
// (docs/protocol.md, "The data connection"): fake agent sockets, a real AgentPool.
#include "coordinator/agent_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "common/wire/channel.h"
#include "common/wire/curve.h"

namespace pypto::coord {
namespace {

using namespace std::chrono_literals;

class AgentPoolTest : public ::testing::Test {
 protected:
  AgentPoolTest() : pool_(context_, options()) {
    const std::string key_text = pool_.agent_key_text();
    key_ = wire::agent_key_from_env([&](const char* name) -> std::optional<std::string> {
      if (std::string(name) == wire::kRunKeyEnv) return key_text;
      return std::nullopt;
    });
  }

  static AgentPoolOptions options() {
    AgentPoolOptions options;
    options.world = 1;
    options.run_id = "agent-pool-test";
    return options;
  }

  wire::Channel connect() {
    wire::ChannelOptions options;
    options.curve_client = key_;
    return wire::Channel::connect(context_, pool_.endpoint(), 0, options);
  }

  // The next message on `channel` other than a HEARTBEAT, within `timeout`.
  static std::optional<wire::Decoded> receive(wire::Channel& channel,
                                              std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (auto message = channel.receive_until(deadline))
      if (!message->is<wire::Heartbeat>()) return message;
    return std::nullopt;
  }

  // Lets the pool read what has arrived (ATTACHes are consumed on the way).
  void pump() {
    const auto until = Clock::now() + 300ms;
    while (Clock::now() < until) ASSERT_FALSE(pool_.next(until)) << "no work was outstanding";
  }

  zmq::context_t context_;
  AgentPool pool_;
  wire::AgentKey key_;
};

TEST_F(AgentPoolTest, WorkGoesToTheDataConnectionOnlyOnceItsAttachCarriesTheWelcomeToken) {
  wire::Channel control = connect();
  wire::Hello hello;
  hello.rank = 0;
  hello.world = 1;
  hello.host = "another-host";  // not this one: no process checks
  hello.pid = 4242;
  control.send(hello, {}, 1);
  pool_.accept_all(Clock::now() + 10s, "");
  std::optional<wire::Decoded> welcome = receive(control, 5s);
  ASSERT_TRUE(welcome);
  const uint64_t token = welcome->as<wire::Welcome>().attach_token;
  ASSERT_NE(token, 0u);

  // A connection with a wrong token is not this agent's: work stays on the control one.
  wire::Channel stranger = connect();
  stranger.send(wire::Attach{0, token + 1});
  pump();
  pool_.send_work(0, wire::Reset{"main"}, {}, 5);
  std::optional<wire::Decoded> reset = receive(control, 5s);
  ASSERT_TRUE(reset);
  EXPECT_TRUE(reset->is<wire::Reset>());
  EXPECT_EQ(reset->envelope.request_id, 5u);
  EXPECT_FALSE(receive(stranger, 200ms));

  // The worker's connection with the WELCOME's token gets the next work, and its
  // answer is the rank's.
  wire::Channel data = connect();
  data.send(wire::Attach{0, token});
  pump();
  pool_.send_work(0, wire::Reset{"main"}, {}, 6);
  std::optional<wire::Decoded> on_data = receive(data, 5s);
  ASSERT_TRUE(on_data);
  EXPECT_TRUE(on_data->is<wire::Reset>());
  EXPECT_EQ(on_data->envelope.request_id, 6u);
  EXPECT_FALSE(receive(control, 200ms)) << "the work went to both connections";
  wire::Ready ready;
  ready.rank = 0;
  ready.ok = true;
  data.send(ready, {}, 6);
  std::optional<AgentPool::Incoming> answer = pool_.next(Clock::now() + 5s);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->rank, 0);
  EXPECT_TRUE(answer->decoded.is<wire::Ready>());
  EXPECT_EQ(answer->decoded.envelope.request_id, 6u);

  // A second connection cannot take the rank's place, even with the token.
  stranger.send(wire::Attach{0, token});
  pump();
  pool_.send_work(0, wire::Reset{"main"}, {}, 7);
  std::optional<wire::Decoded> again = receive(data, 5s);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->envelope.request_id, 7u);
  EXPECT_FALSE(receive(stranger, 200ms));
}

}  // namespace
}  // namespace pypto::coord
