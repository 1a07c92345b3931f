#include "common/wire/curve.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "common/wire/channel.h"
#include "common/wire/wire_test_util.h"

namespace pypto::wire {
namespace {

using std::chrono::milliseconds;

EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InfraError& e) {
    return e.what();
  }
  return "";
}

TEST(CurveKeys, TheAgentKeyCarriesTheServerPublicAndTheClientPair) {
  const RunKeys keys = RunKeys::generate();
  EXPECT_EQ(keys.server.public_key.size(), 40u);
  const std::string text = keys.agent_key_text();
  ASSERT_EQ(text.size(), 80u);
  const AgentKey parsed = parse_agent_key(text + "\n", "test");
  EXPECT_EQ(parsed.server_public, keys.server.public_key);
  EXPECT_EQ(parsed.client.secret_key, keys.client.secret_key);
  EXPECT_EQ(parsed.client.public_key, keys.client.public_key);  // derived
  EXPECT_NE(RunKeys::generate().agent_key_text(), text);        // fresh per run
}

TEST(CurveKeys, BadKeysAreNamedWithTheirSource) {
  EXPECT_NE(error_of([] { parse_agent_key("short", "$PYPTO_RUN_KEY"); })
                .find("$PYPTO_RUN_KEY holds 5 characters, but a run key is 80"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_agent_key(std::string(80, '\''), "$PYPTO_RUN_KEY"); })
                .find("characters outside Z85"),
            std::string::npos);
  EXPECT_NE(error_of([] { agent_key_from_env(env_of({})); })
                .find("no run key: neither PYPTO_RUN_KEY nor PYPTO_RUN_KEY_FILE is set"),
            std::string::npos);
}

TEST(CurveKeys, AKeyFileMustBePrivate) {
  testing::ScratchDir dir;
  const std::string path = (dir / "key").string();
  const RunKeys keys = RunKeys::generate();
  std::ofstream(path) << keys.agent_key_text() << "\n";
  ::chmod(path.c_str(), 0644);
  EXPECT_NE(error_of([&] { agent_key_from_env(env_of({{kRunKeyFileEnv, path}})); })
                .find("is readable by others (mode 644"),
            std::string::npos);
  ::chmod(path.c_str(), 0600);
  EXPECT_EQ(agent_key_from_env(env_of({{kRunKeyFileEnv, path}})).server_public,
            keys.server.public_key);
  // The variable wins over the file.
  const RunKeys other = RunKeys::generate();
  EXPECT_EQ(agent_key_from_env(env_of({{kRunKeyEnv, other.agent_key_text()},
                                       {kRunKeyFileEnv, path}}))
                .server_public,
            other.server.public_key);
}

TEST(RateLimitedLog, CountsEverythingAndLogsABurst) {
  RateLimitedLog log(std::chrono::seconds(60), 2);
  for (int i = 0; i < 100; ++i) log.warn("dropped");
  EXPECT_EQ(log.total(), 100u);
}

class CurveChannelTest : public ::testing::Test {
 protected:
  ChannelOptions server_options() {
    ChannelOptions options;
    options.linger = milliseconds(0);
    options.curve_server = keys_.server;
    return options;
  }
  ChannelOptions client_options(const RunKeys& keys) {
    ChannelOptions options;
    options.linger = milliseconds(0);
    options.curve_client = parse_agent_key(keys.agent_key_text(), "test");
    return options;
  }
  // A message from `agent` reaches the coordinator within `wait`.
  bool arrives(Channel& agent, milliseconds wait) {
    agent.send(Heartbeat{});
    return coordinator_.receive(wait).has_value();
  }

  zmq::context_t context_{1};
  RunKeys keys_ = RunKeys::generate();
  CurveAuthenticator authenticator_{context_, keys_.client.public_key};
  Channel coordinator_ = Channel::bind(context_, "tcp://127.0.0.1:*", server_options());
};

TEST_F(CurveChannelTest, OnlyTheRunsKeyGetsThrough) {
  authenticator_.monitor(coordinator_.socket());
  zmq::context_t agents{1};
  Channel good = Channel::connect(agents, coordinator_.endpoint(), 0, client_options(keys_));
  ASSERT_TRUE(arrives(good, milliseconds(5000)));
  EXPECT_EQ(authenticator_.accepted(), 1u);

  // Right server key, wrong client key: the ZAP handler refuses it.
  RunKeys wrong_client = keys_;
  wrong_client.client = generate_curve_keypair();
  Channel impostor = Channel::connect(agents, coordinator_.endpoint(), 1, client_options(wrong_client));
  EXPECT_FALSE(arrives(impostor, milliseconds(1000)));

  // No key at all (NULL mechanism), and a raw TCP peer writing garbage.
  Channel plain = Channel::connect(agents, coordinator_.endpoint(), 2, ChannelOptions{});
  EXPECT_FALSE(arrives(plain, milliseconds(1000)));
  const std::string endpoint = coordinator_.endpoint();
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string garbage(300, '\xff');
  EXPECT_GT(::write(fd, garbage.data(), garbage.size()), 0);
  EXPECT_FALSE(coordinator_.receive(milliseconds(1000)).has_value());
  ::close(fd);

  // The authorised agent is unaffected.
  EXPECT_TRUE(arrives(good, milliseconds(5000)));
  for (int i = 0; i < 50 && authenticator_.refused() < 2; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_GE(authenticator_.refused(), 2u);  // the wrong key and the plain peer at least
}

}  // namespace
}  // namespace pypto::wire
