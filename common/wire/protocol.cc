#include "common/wire/protocol.h"

#include <algorithm>
#include <bit>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/cereal.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "common/wire/manifest.h"
#include "pypto/dtype.h"

namespace pypto::wire {

namespace detail {

// Reads the format cereal::PortableBinaryOutputArchive writes, straight from a frame in
// memory. cereal's own input archives trust every length prefix: a garbage length makes
// them allocate (and zero) gigabytes before noticing the body is short. This one refuses a
// length larger than the bytes left in the frame (every wire element takes >= 1 byte), so a
// malformed frame costs at most a small multiple of its own size.
class WireInputArchive
    : public cereal::InputArchive<WireInputArchive, cereal::AllowEmptyClassElision> {
 public:
  WireInputArchive(const uint8_t* data, size_t size)
      : InputArchive(this), cursor_(data), end_(data + size) {
    uint8_t little = 0;
    load_bytes<1>(&little, 1);
    if (little > 1) {
      throw cereal::Exception("bad endianness flag " + std::to_string(little));
    }
    swap_ = (little == 1) != (std::endian::native == std::endian::little);
  }

  template <size_t ElementSize>
  void load_bytes(void* out, size_t size) {
    if (size > remaining()) {
      throw cereal::Exception("the body ends early: " + std::to_string(size) +
                              " more bytes needed, " + std::to_string(remaining()) + " left");
    }
    if (size == 0) return;  // `out` may be the null data() of an empty vector
    std::memcpy(out, cursor_, size);
    cursor_ += size;
    if constexpr (ElementSize > 1) {
      if (swap_) {
        auto* bytes = static_cast<uint8_t*>(out);
        for (size_t i = 0; i + ElementSize <= size; i += ElementSize) {
          std::reverse(bytes + i, bytes + i + ElementSize);
        }
      }
    }
  }

  size_t remaining() const { return static_cast<size_t>(end_ - cursor_); }

 private:
  const uint8_t* cursor_;
  const uint8_t* end_;
  bool swap_ = false;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(WireInputArchive& ar, T& t) {
  if constexpr (std::is_same_v<T, bool>) {
    // Loading any byte but 0/1 into a bool is undefined behavior; refuse it.
    uint8_t byte = 0;
    ar.template load_bytes<1>(&byte, 1);
    if (byte > 1) throw cereal::Exception("a boolean field holds " + std::to_string(byte));
    t = byte == 1;
  } else {
    static_assert(!std::is_floating_point_v<T> || std::numeric_limits<T>::is_iec559);
    ar.template load_bytes<sizeof(T)>(std::addressof(t), sizeof(T));
  }
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(WireInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(WireInputArchive& ar, cereal::SizeTag<T>& t) {
  uint64_t size = 0;
  ar(size);
  if (size > ar.remaining()) {
    throw cereal::Exception("a length prefix says " + std::to_string(size) + " elements but only " +
                            std::to_string(ar.remaining()) + " bytes are left");
  }
  t.size = static_cast<std::remove_reference_t<decltype(t.size)>>(size);
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(WireInputArchive& ar, cereal::BinaryData<T>& data) {
  using Element = std::remove_pointer_t<T>;
  ar.template load_bytes<sizeof(Element)>(data.data, static_cast<size_t>(data.size));
}

}  // namespace detail
}  // namespace pypto::wire

// Only consulted for load_minimal functions (none on the wire), but cereal wants it named.
namespace cereal::traits::detail {
template <>
struct get_output_from_input<pypto::wire::detail::WireInputArchive> {
  using type = cereal::PortableBinaryOutputArchive;
};
}  // namespace cereal::traits::detail

namespace pypto::wire {
namespace {

using detail::WireInputArchive;

// The variant's alternatives are in MessageType order: alternative i has code i + 1.
template <size_t I = 0>
constexpr bool alternatives_in_code_order() {
  if constexpr (I == std::variant_size_v<Message>) {
    return true;
  } else {
    return static_cast<size_t>(std::variant_alternative_t<I, Message>::kType) == I + 1 &&
           alternatives_in_code_order<I + 1>();
  }
}
static_assert(alternatives_in_code_order(), "Message alternatives must follow MessageType codes");

constexpr const char* kTypeNames[] = {
    "HELLO", "WELCOME",  "REFUSE",        "HEARTBEAT", "MANIFEST", "NEED",       "BLOBS",
    "READY", "DISPATCH", "DISPATCH_DONE", "ABORT",     "SHUTDOWN", "AGENT_ERROR",
    "RESET", "CLOCK_PROBE", "CLOCK_REPLY", "RESIDENT", "RESIDENT_DONE", "STATE_QUERY",
    "RANK_STATE", "ATTACH"};
static_assert(std::size(kTypeNames) == std::variant_size_v<Message>);

template <size_t I = 0>
std::optional<Message> empty_message(size_t code) {
  if constexpr (I == std::variant_size_v<Message>) {
    return std::nullopt;
  } else {
    if (code == I + 1) return Message(std::in_place_index<I>);
    return empty_message<I + 1>(code);
  }
}

void put_u32_le(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint32_t get_u32_le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// The first bytes of a frame, printable, for "does not start with PPTO (starts with ...)".
std::string describe_start(const zmq::message_t& frame) {
  const auto* bytes = static_cast<const uint8_t*>(frame.data());
  const size_t n = std::min<size_t>(frame.size(), 8);
  std::string text = "'";
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] >= 0x20 && bytes[i] < 0x7f) {
      text.push_back(static_cast<char>(bytes[i]));
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      text += "\\x";
      text.push_back(kHex[bytes[i] >> 4]);
      text.push_back(kHex[bytes[i] & 0xf]);
    }
  }
  return text + "'";
}

std::string peer_name(const DecodeContext& context, std::optional<int32_t> sender_rank) {
  if (context.role == Role::kAgent) return "the coordinator";
  if (sender_rank && *sender_rank >= 0) return "rank " + std::to_string(*sender_rank);
  if (sender_rank) return "a peer claiming rank " + std::to_string(*sender_rank);
  return "an unidentified peer";
}

[[noreturn]] void throw_malformed(const std::string& peer, const std::string& problem) {
  throw ProtocolError("malformed control message from " + peer + ": " + problem);
}

bool is_direction(std::string_view direction) {
  return direction == "In" || direction == "Out" || direction == "InOut";
}

// Checks of a decoded body that the archive cannot make: payload frames, paths, hashes,
// enumerations. Returns the problem or an empty string.
std::string body_problem(const Envelope& envelope, const Message& message,
                         const std::vector<zmq::message_t>& payloads) {
  const std::string type = message_type_name(envelope.type);
  const size_t expected = expected_payload_count(message);
  if (payloads.size() != expected) {
    return type + " must carry " + std::to_string(expected) + " payload frame(s), it carries " +
           std::to_string(payloads.size());
  }
  auto bad_hash = [](const std::vector<std::string>& hashes) -> std::string {
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (!is_sha256_hex(hashes[i])) {
        return "hashes[" + std::to_string(i) + "] is not a SHA-256 in lowercase hex";
      }
    }
    return "";
  };
  return std::visit(
      [&](const auto& body) -> std::string {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, Hello>) {
          if (body.protocol_version != envelope.protocol_version) {
            return "HELLO says protocol " + std::to_string(body.protocol_version) +
                   " but its envelope says " + std::to_string(envelope.protocol_version);
          }
          if (body.world <= 0 || body.rank < 0 || body.rank >= body.world) {
            return "HELLO has rank " + std::to_string(body.rank) + " of world " +
                   std::to_string(body.world);
          }
          if (body.rank != envelope.sender_rank) {
            return "HELLO body says rank " + std::to_string(body.rank) +
                   " but its envelope says rank " + std::to_string(envelope.sender_rank);
          }
          if (auto problem = bad_hash(body.held_hashes); !problem.empty())
            return "HELLO " + problem;
        } else if constexpr (std::is_same_v<T, Manifest>) {
          if (auto problem = build_id_problem(body.build)) return "MANIFEST build: " + *problem;
          try {
            validate_manifest(body);
          } catch (const InfraError& e) {
            return e.what();
          }
          for (size_t i = 0; i < body.windows.size(); ++i) {
            const WireWindow& window = body.windows[i];
            const std::string where = "MANIFEST windows[" + std::to_string(i) + "]";
            if (window.name.empty()) return where + " has no name";
            if (!parse_dtype(window.dtype)) {
              return where + " ('" + window.name + "') has unknown dtype '" + window.dtype + "'";
            }
            if (window.bytes == 0 || window.ranks.empty()) {
              return where + " ('" + window.name + "') has no bytes or no member ranks";
            }
          }
        } else if constexpr (std::is_same_v<T, Reset>) {
          if (auto problem = build_id_problem(body.build)) return "RESET build: " + *problem;
        } else if constexpr (std::is_same_v<T, Need> || std::is_same_v<T, Blobs>) {
          if (auto problem = bad_hash(body.hashes); !problem.empty()) return type + " " + problem;
        } else if constexpr (std::is_same_v<T, Dispatch>) {
          if (auto problem = build_id_problem(body.build)) return "DISPATCH build: " + *problem;
          size_t frame = 0;
          for (size_t i = 0; i < body.args.size(); ++i) {
            const DispatchArg& arg = body.args[i];
            const std::string where = "DISPATCH args[" + std::to_string(i) + "]";
            if (arg.kind > DispatchArg::kResident) {
              return where + " has unknown kind " + std::to_string(arg.kind);
            }
            if (arg.kind == DispatchArg::kResident) {
              if (!is_direction(arg.tensor.direction) || !parse_dtype(arg.tensor.dtype) ||
                  arg.offsets.size() != arg.tensor.shape.size())
                return where + " ('" + arg.tensor.name +
                       "') is a resident box without a valid direction, dtype or offsets";
              continue;
            }
            if (arg.kind != DispatchArg::kTensor) continue;
            if (!is_direction(arg.tensor.direction)) {
              return where + " has direction '" + arg.tensor.direction + "'";
            }
            if (arg.tensor.direction == "Out") continue;
            if (payloads[frame].size() != arg.tensor.nbytes) {
              return where + " ('" + arg.tensor.name + "') declares " +
                     std::to_string(arg.tensor.nbytes) + " bytes, its frame holds " +
                     std::to_string(payloads[frame].size());
            }
            ++frame;
          }
        } else if constexpr (std::is_same_v<T, Resident>) {
          if (body.op > Resident::kFree) return "RESIDENT has unknown op " + std::to_string(body.op);
          if (body.op == Resident::kAlloc) {
            if (!parse_dtype(body.dtype))
              return "RESIDENT alloc has unknown dtype '" + body.dtype + "'";
            for (int64_t extent : body.shape)
              if (extent < 0) return "RESIDENT alloc has a negative extent";
          }
          if (body.op == Resident::kWrite && payloads[0].size() != body.nbytes)
            return "RESIDENT write declares " + std::to_string(body.nbytes) +
                   " bytes, its frame holds " + std::to_string(payloads[0].size());
        } else if constexpr (std::is_same_v<T, ResidentDone>) {
          if (body.has_data && payloads[0].size() != body.nbytes)
            return "RESIDENT_DONE declares " + std::to_string(body.nbytes) +
                   " bytes, its frame holds " + std::to_string(payloads[0].size());
        } else if constexpr (std::is_same_v<T, DispatchDone>) {
          for (size_t i = 0; i < body.outputs.size(); ++i) {
            if (payloads[i].size() != body.outputs[i].nbytes) {
              return "DISPATCH_DONE outputs[" + std::to_string(i) + "] ('" + body.outputs[i].name +
                     "') declares " + std::to_string(body.outputs[i].nbytes) +
                     " bytes, its frame holds " + std::to_string(payloads[i].size());
            }
          }
          for (size_t i = 0; i < body.dfx_files.size(); ++i) {
            if (auto problem = relative_path_problem(body.dfx_files[i])) {
              return "DISPATCH_DONE dfx_files[" + std::to_string(i) + "] '" + body.dfx_files[i] +
                     "': " + *problem;
            }
          }
        }
        return "";
      },
      message);
}

Decoded decode_from(std::vector<zmq::message_t>& frames, size_t first, std::string identity,
                    const DecodeContext& context) {
  if (frames.size() <= first) {
    throw_malformed(peer_name(context, std::nullopt), "it has no envelope frame");
  }
  const zmq::message_t& head = frames[first];
  const auto* bytes = static_cast<const uint8_t*>(head.data());
  if (head.size() < sizeof(kMagic) || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    throw_malformed(peer_name(context, std::nullopt),
                    "the envelope does not start with the magic 'PPTO' (it starts with " +
                        describe_start(head) +
                        "); is something other than pypto-rank/pypto-coord on this endpoint?");
  }
  if (head.size() < kPrefixSize) {
    throw_malformed(peer_name(context, std::nullopt),
                    "the envelope is " + std::to_string(head.size()) +
                        " bytes, shorter than its fixed " + std::to_string(kPrefixSize) +
                        "-byte prefix");
  }
  Decoded decoded;
  decoded.identity = std::move(identity);
  Envelope& envelope = decoded.envelope;
  envelope.protocol_version = get_u32_le(bytes + 4);
  envelope.sender_rank = static_cast<int32_t>(get_u32_le(bytes + 8));
  const std::string peer = peer_name(context, envelope.sender_rank);

  // The version check comes before anything else of the layout is trusted.
  if (envelope.protocol_version != kProtocolVersion) {
    const bool we_are_coordinator = context.role == Role::kCoordinator;
    const int32_t agent_rank = we_are_coordinator ? envelope.sender_rank : context.local_rank;
    const uint32_t agent_version =
        we_are_coordinator ? envelope.protocol_version : kProtocolVersion;
    const uint32_t coordinator_version =
        we_are_coordinator ? kProtocolVersion : envelope.protocol_version;
    throw ProtocolVersionError(
        version_mismatch_text(context.role, agent_rank, agent_version, coordinator_version),
        envelope.protocol_version, envelope.sender_rank);
  }

  std::string what = "the body";
  try {
    WireInputArchive archive(bytes + kPrefixSize, head.size() - kPrefixSize);
    uint8_t code = 0;
    archive(code, envelope.request_id);
    std::optional<Message> message = empty_message(code);
    if (!message) throw_malformed(peer, "unknown message type " + std::to_string(code));
    envelope.type = static_cast<MessageType>(code);
    what = "the " + message_type_name(envelope.type) + " body";
    std::visit([&](auto& body) { archive(body); }, *message);
    if (archive.remaining() != 0) {
      throw_malformed(peer, std::to_string(archive.remaining()) + " stray bytes after " + what);
    }
    decoded.message = std::move(*message);
  } catch (const cereal::Exception& e) {
    throw_malformed(peer, "cannot read " + what + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw_malformed(peer, "cannot read " + what + ": it asks for more memory than there is");
  } catch (const std::length_error& e) {
    throw_malformed(peer, "cannot read " + what + ": " + e.what());
  }

  for (size_t i = first + 1; i < frames.size(); ++i)
    decoded.payloads.push_back(std::move(frames[i]));
  frames.clear();
  if (std::string problem = body_problem(envelope, decoded.message, decoded.payloads);
      !problem.empty()) {
    throw_malformed(peer, problem);
  }
  return decoded;
}

}  // namespace

std::string message_type_name(MessageType type) {
  const auto code = static_cast<size_t>(type);
  if (code >= 1 && code <= std::size(kTypeNames)) return kTypeNames[code - 1];
  return "type " + std::to_string(code);
}

std::optional<std::string> build_id_problem(std::string_view build) {
  if (build.empty()) return "it is empty";
  if (build.size() > 64) return "it is longer than 64 characters";
  if (build == "." || build == "..") return "'" + std::string(build) + "' is not a name";
  for (char c : build) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return "'" + std::string(build) + "' has a character outside [A-Za-z0-9_.-]";
  }
  return std::nullopt;
}

MessageType type_of(const Message& message) {
  return std::visit([](const auto& body) { return std::decay_t<decltype(body)>::kType; }, message);
}

size_t expected_payload_count(const Message& message) {
  if (const auto* blobs = std::get_if<Blobs>(&message)) return blobs->hashes.size();
  if (const auto* dispatch = std::get_if<Dispatch>(&message)) {
    size_t count = 0;
    for (const DispatchArg& arg : dispatch->args) {
      if (arg.kind == DispatchArg::kTensor && arg.tensor.direction != "Out") ++count;
    }
    return count;
  }
  if (const auto* done = std::get_if<DispatchDone>(&message)) {
    return done->outputs.size() + done->dfx_files.size();
  }
  if (const auto* resident = std::get_if<Resident>(&message))
    return resident->op == Resident::kWrite ? 1 : 0;
  if (const auto* done = std::get_if<ResidentDone>(&message)) return done->has_data ? 1 : 0;
  return 0;
}

WireDfxOptions to_wire(const DfxOptions& options) {
  return {options.enable_chip_swimlane, options.enable_dump_args, options.enable_pmu,
          options.enable_dep_gen, options.enable_scope_stats};
}

DfxOptions from_wire(const WireDfxOptions& options) {
  DfxOptions result;
  result.enable_chip_swimlane = options.enable_chip_swimlane;
  result.enable_dump_args = options.enable_dump_args;
  result.enable_pmu = options.enable_pmu;
  result.enable_dep_gen = options.enable_dep_gen;
  result.enable_scope_stats = options.enable_scope_stats;
  return result;
}

WireRunOptions to_wire(const RunOptions& options) {
  WireRunOptions result;
  result.platform = options.platform;
  result.device_id = options.device_id;
  result.aicpu_thread_num = options.aicpu_thread_num;
  result.ring_task_window = options.ring_task_window.values;
  result.ring_heap = options.ring_heap.values;
  result.ring_dep_pool = options.ring_dep_pool.values;
  return result;
}

RunOptions from_wire(const WireRunOptions& options, const WireDfxOptions& dfx) {
  RunOptions result;
  result.platform = options.platform;
  result.device_id = options.device_id;
  result.aicpu_thread_num = options.aicpu_thread_num;
  result.ring_task_window.values = options.ring_task_window;
  result.ring_heap.values = options.ring_heap;
  result.ring_dep_pool.values = options.ring_dep_pool;
  result.dfx = from_wire(dfx);
  return result;
}

std::string version_mismatch_text(Role observer, int32_t agent_rank, uint32_t agent_version,
                                  uint32_t coordinator_version) {
  const std::string remedy = "; use pypto-rank and pypto-coord from the same installation";
  const std::string rank = agent_rank >= 0 ? std::to_string(agent_rank) : "?";
  if (observer == Role::kCoordinator) {
    return "agent rank " + rank + " speaks control protocol " + std::to_string(agent_version) +
           ", this coordinator speaks " + std::to_string(coordinator_version) + remedy;
  }
  return "the coordinator speaks control protocol " + std::to_string(coordinator_version) +
         ", this agent (rank " + rank + ") speaks " + std::to_string(agent_version) + remedy;
}

Refuse make_version_refusal(int32_t agent_rank, uint32_t agent_version) {
  Refuse refuse;
  refuse.reason =
      version_mismatch_text(Role::kCoordinator, agent_rank, agent_version, kProtocolVersion);
  refuse.coordinator_version = kProtocolVersion;
  refuse.agent_version = agent_version;
  return refuse;
}

void Decoded::throw_unexpected(MessageType expected) const {
  const std::string from = envelope.sender_rank == kCoordinatorRank
                               ? std::string("the coordinator")
                               : "rank " + std::to_string(envelope.sender_rank);
  std::string text = "unexpected " + message_type_name(envelope.type) + " from " + from +
                     " (expected " + message_type_name(expected) + ")";
  if (const auto* refuse = std::get_if<Refuse>(&message)) text += ": " + refuse->reason;
  if (const auto* abort = std::get_if<Abort>(&message)) text += ": " + abort->reason;
  if (const auto* error = std::get_if<AgentError>(&message)) text += ": " + error->message;
  throw ProtocolError(text);
}

zmq::message_t frame_of(std::string_view bytes) {
  return zmq::message_t(bytes.data(), bytes.size());
}

std::vector<zmq::message_t> encode(const Message& message, std::vector<zmq::message_t> payloads,
                                   int32_t sender_rank, uint64_t request_id) {
  const MessageType type = type_of(message);
  const size_t expected = expected_payload_count(message);
  if (payloads.size() != expected) {
    throw ProtocolError("cannot encode " + message_type_name(type) + ": it needs " +
                        std::to_string(expected) + " payload frame(s), " +
                        std::to_string(payloads.size()) + " given (a bug in the sender)");
  }
  std::string head(kMagic, sizeof(kMagic));
  put_u32_le(head, kProtocolVersion);
  put_u32_le(head, static_cast<uint32_t>(sender_rank));
  std::ostringstream body(std::ios::binary);
  {
    // Little-endian always, so the common case never swaps and the bytes are the same on
    // every host; the archive's flag byte still lets a big-endian reader convert.
    cereal::PortableBinaryOutputArchive archive(
        body, cereal::PortableBinaryOutputArchive::Options::LittleEndian());
    archive(static_cast<uint8_t>(type), request_id);
    std::visit([&](const auto& value) { archive(value); }, message);
  }
  head += std::move(body).str();

  std::vector<zmq::message_t> frames;
  frames.reserve(1 + payloads.size());
  frames.emplace_back(head.data(), head.size());
  for (auto& payload : payloads) frames.push_back(std::move(payload));
  return frames;
}

std::vector<zmq::message_t> encode_routed(std::string_view identity, const Message& message,
                                          std::vector<zmq::message_t> payloads,
                                          uint64_t request_id) {
  std::vector<zmq::message_t> body =
      encode(message, std::move(payloads), kCoordinatorRank, request_id);
  std::vector<zmq::message_t> frames;
  frames.reserve(1 + body.size());
  frames.emplace_back(identity.data(), identity.size());
  for (auto& frame : body) frames.push_back(std::move(frame));
  return frames;
}

Decoded decode(std::vector<zmq::message_t>& frames, const DecodeContext& context) {
  return decode_from(frames, 0, "", context);
}

Decoded decode_routed(std::vector<zmq::message_t>& frames, const DecodeContext& context) {
  if (frames.empty() || frames[0].size() == 0) {
    throw_malformed(peer_name(context, std::nullopt), "it has no routing identity frame");
  }
  std::string identity(static_cast<const char*>(frames[0].data()), frames[0].size());
  try {
    return decode_from(frames, 1, identity, context);
  } catch (ProtocolError& e) {
    e.set_peer_identity(identity);
    throw;
  }
}

}  // namespace pypto::wire
