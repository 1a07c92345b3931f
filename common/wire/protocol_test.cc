#include "common/wire/protocol.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/hash.h"

namespace pypto::wire {
namespace {

std::string hash_of(std::string_view text) { return sha256_hex(text); }

std::string as_string(const zmq::message_t& frame) {
  return {static_cast<const char*>(frame.data()), frame.size()};
}

std::vector<zmq::message_t> frames_of(std::vector<std::string> parts) {
  std::vector<zmq::message_t> frames;
  for (const std::string& part : parts) frames.push_back(frame_of(part));
  return frames;
}

// Copies a message so a test can encode it, decode it and compare.
template <class T>
void expect_round_trip(const T& message, std::vector<std::string> payloads = {}, int32_t sender = 3,
                       uint64_t request_id = 77) {
  std::vector<zmq::message_t> frames =
      encode(Message(message), frames_of(payloads), sender, request_id);
  ASSERT_EQ(frames.size(), 1 + payloads.size());
  Decoded decoded = decode(frames);
  EXPECT_EQ(decoded.type(), T::kType);
  EXPECT_EQ(decoded.envelope.protocol_version, kProtocolVersion);
  EXPECT_EQ(decoded.envelope.request_id, request_id);
  EXPECT_EQ(decoded.envelope.sender_rank, sender);
  EXPECT_TRUE(decoded.identity.empty());
  ASSERT_TRUE(decoded.is<T>());
  EXPECT_EQ(decoded.as<T>(), message);
  ASSERT_EQ(decoded.payloads.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) EXPECT_EQ(decoded.payload(i), payloads[i]);
}

TensorMeta tensor(std::string name, std::string direction, uint64_t nbytes) {
  return TensorMeta{
      std::move(name), "f32", {2, static_cast<int64_t>(nbytes / 8)}, std::move(direction), nbytes};
}

TEST(ProtocolTest, EveryMessageRoundTripsWithItsPayloads) {
  Hello hello;
  hello.rank = 3;
  hello.world = 8;
  hello.host = "node-1";
  hello.pid = 4242;
  hello.held_hashes = {hash_of("a"), hash_of("b")};
  hello.mpi_thread_level = "MPI_THREAD_MULTIPLE";
  expect_round_trip(hello);

  expect_round_trip(Welcome{kProtocolVersion, "run-20240101-abc", 250, 5000, 0x5eed}, {},
                    kCoordinatorRank);
  expect_round_trip(Refuse{"rank 3 is already connected", kProtocolVersion, kProtocolVersion});
  expect_round_trip(Heartbeat{});

  Manifest manifest;
  manifest.rank = 3;
  manifest.files = {{"kernel_config.json", 10, hash_of("k"), 0644},
                    {"kernels/aiv/vadd.cpp", 1234, hash_of("v"), 0600}};
  manifest.build = "softmax-2.v1";
  manifest.windows = {{"data", "f32", 1024, {0, 1, 2, 3}}, {"signal", "i32", 32, {1, 3}}};
  expect_round_trip(manifest);
  expect_round_trip(Reset{"softmax-2.v1"}, {}, kCoordinatorRank);
  expect_round_trip(ClockProbe{123456789}, {}, kCoordinatorRank);
  expect_round_trip(ClockReply{123456789, -42, 1700000000000000000}, {}, 5);
  expect_round_trip(Need{{hash_of("k"), hash_of("v")}});
  expect_round_trip(Blobs{{hash_of("k"), hash_of("")}}, {"k", ""});
  expect_round_trip(Ready{3, false, {"vadd.cpp:3: error: expected ';'", 1}, 4, 2});

  Dispatch dispatch;
  dispatch.index = 5;
  dispatch.build = "extra_1";
  dispatch.program = "allreduce_chip";
  DispatchArg in{DispatchArg::kTensor, tensor("x", "In", 16), "", -1, 0};
  DispatchArg out{DispatchArg::kTensor, tensor("y", "Out", 0), "", -1, 0};
  DispatchArg inout{DispatchArg::kTensor, tensor("z", "InOut", 8), "", -1, 0};
  DispatchArg window{DispatchArg::kWindow, {}, "scratch", 2, 0};
  DispatchArg scalar{DispatchArg::kScalar, {}, "", -1, -17};
  DispatchArg resident{DispatchArg::kResident, tensor("w", "InOut", 0), "", -1, 0, 7, {0, 0}};
  dispatch.args = {in, out, window, inout, scalar, resident};
  dispatch.dfx = {2, 1, 3, true, false};
  dispatch.run.platform = "a5sim";
  dispatch.run.ring_heap = {1 << 20};
  dispatch.run.ring_task_window = {1024, 0, 2048, 0};
  dispatch.run.dispatch_timeout_ms = 60000;
  dispatch.run.wait_timeout_ms = 10000;
  expect_round_trip(dispatch, {std::string(16, 'x'), std::string(8, 'z')}, kCoordinatorRank);
  dispatch.reset_windows = true;
  expect_round_trip(dispatch, {std::string(16, 'x'), std::string(8, 'z')}, kCoordinatorRank);

  DispatchDone done;
  done.index = 5;
  done.ok = true;
  done.timings = {{"run", 123456}, {"collect", 789}};
  done.start_unix_ns = 1700000000000000000;
  done.end_unix_ns = 1700000000000123456;
  done.outputs = {tensor("y", "Out", 16)};
  done.dfx_files = {"chip_swimlane_records.json", "args_dump/args.bin"};
  expect_round_trip(done, {std::string(16, '\0'), "{}", std::string("\x00\x01", 2)});

  expect_round_trip(Resident{Resident::kAlloc, 7, "f32", {2, 1024}, 0}, {}, kCoordinatorRank);
  expect_round_trip(Resident{Resident::kWrite, 7, "", {}, 4}, {"abcd"}, kCoordinatorRank);
  expect_round_trip(ResidentDone{7, true, {}, true, 3}, {"xyz"}, 2);
  expect_round_trip(ResidentDone{7, false, {"rank 2: no resident tensor 7", 3}, false, 0}, {}, 2);
  expect_round_trip(StateQuery{}, {}, -1);
  RankState state;
  state.now_ns = 99;
  state.dispatch = 0;
  state.program = "chip_orch";
  state.running = true;
  state.tasks = {{1, "aiv", 12, 0, "reduce_step", 50}};
  state.comm_ops = {{"wait", "signal", -1, 5, 1, "ge", 0, 12, 1, 60, 0, true}};
  state.comm_ops_recorded = 8;
  expect_round_trip(state, {}, 3);

  expect_round_trip(Attach{3, 0x0123456789abcdefULL}, {}, 3);
  expect_round_trip(Abort{"rank 5 failed: kernel error"}, {}, kCoordinatorRank);
  expect_round_trip(Shutdown{}, {}, kCoordinatorRank);
  expect_round_trip(AgentError{3, "MPI_Win_allocate_shared failed", 3});
}

TEST(ProtocolTest, RouterFramesCarryTheIdentityFirst) {
  std::vector<zmq::message_t> frames = encode_routed("\x00\x6b\x8b\x45\x67", Welcome{}, {}, 9);
  ASSERT_EQ(frames.size(), 2u);
  // A DEALER receiving it sees no identity frame.
  std::vector<zmq::message_t> at_dealer;
  at_dealer.push_back(std::move(frames[1]));
  Decoded decoded = decode(at_dealer, {Role::kAgent, 2});
  EXPECT_EQ(decoded.type(), MessageType::kWelcome);
  EXPECT_EQ(decoded.envelope.request_id, 9u);
  EXPECT_EQ(decoded.envelope.sender_rank, kCoordinatorRank);

  std::vector<zmq::message_t> at_router = encode(Need{}, {}, 4);
  at_router.insert(at_router.begin(), frame_of("peer-4"));
  Decoded routed = decode_routed(at_router);
  EXPECT_EQ(routed.identity, "peer-4");
  EXPECT_EQ(routed.envelope.sender_rank, 4);
  EXPECT_TRUE(routed.is<Need>());
}

TEST(ProtocolTest, AsNamesTheUnexpectedMessage) {
  std::vector<zmq::message_t> frames = encode(Refuse{"world mismatch", 1, 1});
  Decoded decoded = decode(frames, {Role::kAgent, 2});
  try {
    decoded.as<Welcome>();
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unexpected REFUSE from the coordinator (expected WELCOME): world mismatch");
  }
}

TEST(ProtocolTest, EncodeRefusesAWrongPayloadCount) {
  EXPECT_THROW(encode(Blobs{{hash_of("a")}}), ProtocolError);
  EXPECT_THROW(encode(Hello{}, frames_of({"x"})), ProtocolError);
}

// The frame of a peer of a later protocol: same prefix, a body this version cannot read.
std::string future_frame(uint32_t version, int32_t rank) {
  std::string frame = "PPTO";
  for (uint32_t v : {version, static_cast<uint32_t>(rank)}) {
    for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  return frame + "\xff\xfe a layout from the future";
}

TEST(ProtocolTest, CoordinatorDetectsAnAgentOfAnotherVersion) {
  const uint32_t later = kProtocolVersion + 1;
  const std::string ours = std::to_string(kProtocolVersion), theirs = std::to_string(later);
  std::vector<zmq::message_t> frames = frames_of({"id-2", future_frame(later, 2)});
  try {
    decode_routed(frames);
    FAIL() << "expected ProtocolVersionError";
  } catch (const ProtocolVersionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "agent rank 2 speaks control protocol " + theirs + ", this coordinator speaks " +
                  ours + "; use pypto-rank and pypto-coord from the same installation");
    EXPECT_EQ(e.peer_version(), later);
    EXPECT_EQ(e.peer_rank(), 2);
    EXPECT_EQ(e.peer_identity(), "id-2");
    EXPECT_EQ(e.exit_code(), ExitCode::kInfra);
  }
  const Refuse refuse = make_version_refusal(2, later);
  EXPECT_EQ(refuse.coordinator_version, kProtocolVersion);
  EXPECT_EQ(refuse.agent_version, later);
  EXPECT_NE(refuse.reason.find("speaks control protocol " + theirs), std::string::npos);
  EXPECT_NE(refuse.reason.find("this coordinator speaks " + ours), std::string::npos);
}

TEST(ProtocolTest, AgentDetectsACoordinatorOfAnotherVersion) {
  std::vector<zmq::message_t> frames = frames_of({future_frame(7, kCoordinatorRank)});
  try {
    decode(frames, {Role::kAgent, 5});
    FAIL() << "expected ProtocolVersionError";
  } catch (const ProtocolVersionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the coordinator speaks control protocol 7, this agent (rank 5) speaks " +
                  std::to_string(kProtocolVersion) +
                  "; use pypto-rank and pypto-coord from the same installation");
  }
}

void expect_malformed(std::vector<zmq::message_t> frames, const std::string& fragment,
                      bool routed = false) {
  try {
    if (routed) {
      decode_routed(frames);
    } else {
      decode(frames);
    }
    FAIL() << "expected ProtocolError containing: " << fragment;
  } catch (const ProtocolVersionError& e) {
    FAIL() << "unexpected version error: " << e.what();
  } catch (const ProtocolError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("malformed control message from ", 0), 0u) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_EQ(e.exit_code(), ExitCode::kInfra);
  }
}

std::string valid_frame(const Message& message, int32_t sender = 3,
                        std::vector<std::string> payloads = {}) {
  return as_string(encode(message, frames_of(std::move(payloads)), sender)[0]);
}

TEST(ProtocolTest, BadMagicNamesTheStartOfTheFrame) {
  expect_malformed(frames_of({"GET / HTTP/1.1\r\n"}),
                   "does not start with the magic 'PPTO' "
                   "(it starts with 'GET / HT')");
  expect_malformed(frames_of({std::string("\x01\x02", 2)}), "'\\x01\\x02'");
  expect_malformed(frames_of({}), "no envelope frame");
  expect_malformed(frames_of({}), "no routing identity frame", /*routed=*/true);
}

TEST(ProtocolTest, TruncatedBodiesAreMalformedNamingTheSender) {
  Manifest manifest;
  manifest.rank = 3;
  manifest.files = {{"a.cpp", 1, hash_of("a"), 0644}};
  const std::string full = valid_frame(manifest);
  expect_malformed(frames_of({full.substr(0, 10)}), "shorter than its fixed 12-byte prefix");
  for (size_t cut = kPrefixSize; cut < full.size(); ++cut) {
    expect_malformed(frames_of({full.substr(0, cut)}), "from rank 3: ");
  }
  expect_malformed(frames_of({full.substr(0, full.size() - 3)}),
                   "cannot read the MANIFEST body: the body ends early");
  expect_malformed(frames_of({full + "xyz"}), "3 stray bytes after the MANIFEST body");
}

TEST(ProtocolTest, BuildIdsAndWindowsAreChecked) {
  EXPECT_FALSE(build_id_problem("main"));
  EXPECT_FALSE(build_id_problem("prog-2_v.1"));
  EXPECT_EQ(*build_id_problem(""), "it is empty");
  EXPECT_EQ(*build_id_problem(".."), "'..' is not a name");
  EXPECT_EQ(*build_id_problem("a/b"), "'a/b' has a character outside [A-Za-z0-9_.-]");
  EXPECT_TRUE(build_id_problem(std::string(65, 'a')));

  Manifest manifest;
  manifest.build = "../escape";
  expect_malformed(frames_of({valid_frame(manifest)}),
                   "MANIFEST build: '../escape' has a character outside [A-Za-z0-9_.-]");
  manifest.build = "main";
  manifest.windows = {{"data", "f33", 8, {0}}};
  expect_malformed(frames_of({valid_frame(manifest)}),
                   "MANIFEST windows[0] ('data') has unknown dtype 'f33'");
  manifest.windows = {{"data", "f32", 0, {0}}};
  expect_malformed(frames_of({valid_frame(manifest)}), "has no bytes or no member ranks");
  Dispatch dispatch;
  dispatch.build = "";
  expect_malformed(frames_of({valid_frame(dispatch)}), "DISPATCH build: it is empty");
  expect_malformed(frames_of({valid_frame(Reset{"a b"})}), "RESET build: 'a b' has a character");
}

TEST(ProtocolTest, GarbageBodiesNeverCrash) {
  std::mt19937 random(1234);
  for (int round = 0; round < 2000; ++round) {
    std::string frame = valid_frame(Heartbeat{}).substr(0, kPrefixSize);
    const size_t size = random() % 200;
    for (size_t i = 0; i < size; ++i) frame.push_back(static_cast<char>(random()));
    // Aim some rounds at real types so the body decoders see garbage too.
    if (frame.size() > kPrefixSize + 1) {
      frame[kPrefixSize] = 1;
      if (round % 2 == 0) frame[kPrefixSize + 1] = static_cast<char>(1 + round % 14);
    }
    std::vector<zmq::message_t> frames = frames_of({frame});
    try {
      decode(frames);
    } catch (const ProtocolError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("malformed control message from rank 3", 0), 0u);
    }
  }
  // Fully random frames, and valid frames with random bytes flipped after the prefix.
  Manifest manifest;
  manifest.rank = 3;
  manifest.files = {{"a/b.cpp", 5, hash_of("b"), 0644}, {"c", 1, hash_of("c"), 0755}};
  Dispatch dispatch;
  dispatch.program = "p";
  dispatch.args = {{DispatchArg::kTensor, tensor("x", "Out", 0), "", -1, 0},
                   {DispatchArg::kWindow, {}, "w", 1, 0}};
  DispatchDone done;
  done.timings = {{"run", 5}};
  Hello hello;
  hello.rank = 3;
  hello.world = 4;
  hello.held_hashes = {hash_of("h")};
  const std::vector<std::string> seeds = {valid_frame(manifest), valid_frame(dispatch),
                                          valid_frame(done), valid_frame(hello)};
  for (int round = 0; round < 4000; ++round) {
    std::string frame;
    if (round % 8 == 0) {
      frame.resize(random() % 64);
      for (char& c : frame) c = static_cast<char>(random());
    } else {
      frame = seeds[round % seeds.size()];
      for (int flips = 1 + random() % 4; flips > 0; --flips) {
        frame[kPrefixSize + random() % (frame.size() - kPrefixSize)] ^=
            static_cast<char>(1 + random() % 255);
      }
    }
    std::vector<zmq::message_t> frames = frames_of({frame});
    try {
      decode(frames);
    } catch (const ProtocolError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("malformed control message from ", 0), 0u);
    }
  }
  // A huge length prefix is refused before anything is allocated.
  std::string frame = valid_frame(Need{});
  frame.resize(frame.size() - 8);
  frame += std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  expect_malformed(frames_of({frame}), "a length prefix says 9223372036854775807 elements");
}

TEST(ProtocolTest, UnknownTypeAndBadBooleanAreMalformed) {
  std::string frame = valid_frame(Heartbeat{});
  frame[kPrefixSize + 1] = static_cast<char>(99);
  expect_malformed(frames_of({frame}), "unknown message type 99");

  std::string ready = valid_frame(Ready{3, true, {}, 0, 0});
  // Layout after the prefix: flag, type, request id (8), rank (4), ok.
  ready[kPrefixSize + 1 + 1 + 8 + 4] = 7;
  expect_malformed(frames_of({ready}), "a boolean field holds 7");
}

TEST(ProtocolTest, PayloadFrameCountAndSizesAreChecked) {
  const std::string blobs = valid_frame(Blobs{{hash_of("a"), hash_of("b")}}, 3, {"a", "b"});
  expect_malformed(frames_of({blobs, "a"}), "BLOBS must carry 2 payload frame(s), it carries 1");
  expect_malformed(frames_of({blobs, "a", "b", "c"}), "it carries 3");
  expect_malformed(frames_of({valid_frame(Heartbeat{}), "extra"}),
                   "HEARTBEAT must carry 0 payload frame(s)");

  Dispatch dispatch;
  dispatch.args = {{DispatchArg::kTensor, tensor("x", "In", 16), "", -1, 0}};
  const std::string head = valid_frame(dispatch, kCoordinatorRank, {std::string(16, 'x')});
  std::vector<zmq::message_t> frames = frames_of({head, std::string(15, 'x')});
  try {
    decode(frames, {Role::kAgent, 0});
    FAIL();
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed control message from the coordinator: "
                                         "DISPATCH args[0] ('x') declares 16 bytes, its frame "
                                         "holds 15"),
              std::string::npos)
        << e.what();
  }
}

TEST(ProtocolTest, PathsAndHashesInBodiesAreValidated) {
  Manifest manifest;
  manifest.rank = 3;
  manifest.files = {{"../../etc/passwd", 1, hash_of("a"), 0644}};
  expect_malformed(frames_of({valid_frame(manifest)}), "it has a '..' component");
  manifest.files = {{"/etc/passwd", 1, hash_of("a"), 0644}};
  expect_malformed(frames_of({valid_frame(manifest)}), "it is absolute");
  expect_malformed(frames_of({valid_frame(Need{{"not-a-hash"}})}),
                   "NEED hashes[0] is not a SHA-256");

  DispatchDone done;
  done.dfx_files = {"../../../.bashrc"};
  expect_malformed(frames_of({valid_frame(done, 3, {"x"}), "x"}),
                   "DISPATCH_DONE dfx_files[0] '../../../.bashrc': it has a '..' component");

  Hello hello;
  hello.rank = 9;
  hello.world = 4;
  expect_malformed(frames_of({valid_frame(hello, 9)}), "HELLO has rank 9 of world 4");
  hello.rank = 1;
  expect_malformed(frames_of({valid_frame(hello, 2)}),
                   "HELLO body says rank 1 but its envelope says rank 2");
}

TEST(ProtocolTest, DfxAndRunOptionsConvert) {
  EXPECT_EQ(DfxOptions::fields().size(), 5u) << "WireDfxOptions must carry every DFX switch";
  DfxOptions dfx;
  dfx.enable_chip_swimlane = 4;
  dfx.enable_dump_args = 2;
  dfx.enable_pmu = 1;
  dfx.enable_dep_gen = true;
  dfx.enable_scope_stats = true;
  EXPECT_EQ(from_wire(to_wire(dfx)), dfx);

  RunOptions run;
  run.platform = "a5sim";
  run.device_id = 3;
  run.aicpu_thread_num = 4;
  run.ring_task_window = RingOverride::scalar(4096);
  run.ring_heap = RingOverride::per_level({1 << 20, 0, 1 << 21, 0});
  run.dfx = dfx;
  EXPECT_EQ(from_wire(to_wire(run), to_wire(run.dfx)), run);
}

}  // namespace
}  // namespace pypto::wire
