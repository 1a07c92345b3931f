#include "common/json_reader.h"

#include "common/fs_util.h"
#include "pypto/error.h"

namespace pypto {

namespace {
const char* type_name_of(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "a list";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}
}  // namespace

JsonObject::JsonObject(const Json& value, std::shared_ptr<const JsonSource> source,
                       std::string path)
    : value_(&value), source_(std::move(source)), path_(std::move(path)) {
  if (!value_->is_object()) fail("", std::string("must be an object, found ") + type_name_of(value));
}

std::string JsonObject::field_path(const std::string& key) const {
  if (key.empty()) return path_;
  return path_.empty() ? key : path_ + "." + key;
}

void JsonObject::fail(const std::string& key, const std::string& problem) const {
  throw ArtifactError(source_->file, field_path(key), problem, source_->remedy);
}

bool JsonObject::has(const std::string& key) const { return value_->contains(key); }

const Json& JsonObject::require(const std::string& key, Json::value_t type, const char* type_name) {
  auto it = value_->find(key);
  if (it == value_->end()) fail(key, "is missing");
  read_.insert(key);
  bool ok = it->type() == type;
  if (type == Json::value_t::number_integer) ok = it->is_number_integer();
  if (type == Json::value_t::number_float) ok = it->is_number();
  if (!ok) fail(key, std::string("must be ") + type_name + ", found " + type_name_of(*it));
  return *it;
}

std::string JsonObject::string(const std::string& key) {
  return require(key, Json::value_t::string, "a string").get<std::string>();
}

int64_t JsonObject::integer(const std::string& key) {
  const Json& v = require(key, Json::value_t::number_integer, "an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(key, "is too large");
  return v.get<int64_t>();
}

double JsonObject::number(const std::string& key) {
  return require(key, Json::value_t::number_float, "a number").get<double>();
}

bool JsonObject::boolean(const std::string& key) {
  return require(key, Json::value_t::boolean, "a boolean").get<bool>();
}

JsonObject JsonObject::object(const std::string& key) {
  return JsonObject(require(key, Json::value_t::object, "an object"), source_, field_path(key));
}

std::vector<JsonObject> JsonObject::objects(const std::string& key) {
  const Json& list = require(key, Json::value_t::array, "a list");
  std::vector<JsonObject> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.emplace_back(list[i], source_, field_path(key) + "[" + std::to_string(i) + "]");
  return out;
}

std::vector<int64_t> JsonObject::integers(const std::string& key) {
  const Json& list = require(key, Json::value_t::array, "a list");
  std::vector<int64_t> out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_number_integer())
      fail(key, "element " + std::to_string(i) + " must be an integer, found " +
                    type_name_of(list[i]));
    // Beyond int64 it would wrap (2^64-1 to -1, the dynamic extent).
    if (list[i].is_number_unsigned() && list[i].get<uint64_t>() > uint64_t(INT64_MAX))
      fail(key, "element " + std::to_string(i) + " (" + std::to_string(list[i].get<uint64_t>()) +
                    ") is too large; at most " + std::to_string(INT64_MAX));
    out.push_back(list[i].get<int64_t>());
  }
  return out;
}

std::vector<std::string> JsonObject::strings(const std::string& key) {
  const Json& list = require(key, Json::value_t::array, "a list");
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string())
      fail(key, "element " + std::to_string(i) + " must be a string, found " +
                    type_name_of(list[i]));
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

const Json& JsonObject::raw(const std::string& key) {
  auto it = value_->find(key);
  if (it == value_->end()) fail(key, "is missing");
  read_.insert(key);
  return *it;
}

std::optional<std::string> JsonObject::optional_string(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return string(key);
}

std::optional<int64_t> JsonObject::optional_integer(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

void JsonObject::expect_schema(int64_t supported) {
  int64_t schema = integer("schema");
  if (schema != supported)
    fail("schema", "is " + std::to_string(schema) + " but this runtime reads schema " +
                       std::to_string(supported));
}

void JsonObject::reject_unknown_keys() {
  for (const auto& [key, _] : value_->items())
    if (!read_.count(key)) fail(key, "is not a known field (misspelt, or written by another version)");
}

JsonObject load_json_object(const std::filesystem::path& path, const std::string& display,
                            const std::string& remedy, Json& storage) {
  auto source = std::make_shared<JsonSource>(JsonSource{display, remedy});
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw ArtifactError(display, "", "is missing", remedy);
  if (!std::filesystem::is_regular_file(status)) {
    // Reading a FIFO would block; a directory cannot be read.
    const char* kind = std::filesystem::is_directory(status) ? "a directory"
                       : std::filesystem::is_fifo(status)    ? "a FIFO"
                                                             : "not a regular file";
    throw ArtifactError(display, "", std::string("is ") + kind + ", not a JSON file", remedy);
  }
  std::string text;
  try {
    text = read_file(path);
  } catch (const InfraError& e) {
    throw ArtifactError(display, "", std::string("cannot be read (") + e.what() + ")", remedy);
  }
  // The last key the parser read: a number too large for a double (1e400) fails inside
  // the parser, and the key is the only hint of where.
  std::string last_key;
  const Json::parser_callback_t note_key = [&last_key](int, Json::parse_event_t event,
                                                       Json& parsed) {
    if (event == Json::parse_event_t::key) last_key = parsed.get<std::string>();
    return true;
  };
  try {
    storage = Json::parse(text, note_key);
  } catch (const Json::parse_error& e) {
    std::string why = text.empty() ? "is empty" : "is not valid JSON (truncated or hand-broken?)";
    throw ArtifactError(display, "", why + ": parse error at byte " + std::to_string(e.byte),
                        remedy);
  } catch (const Json::out_of_range&) {
    throw ArtifactError(display, last_key,
                        "holds a number out of range (beyond a double, such as 1e400)", remedy);
  }
  return JsonObject(storage, source, "");
}

void write_json_atomic(const std::filesystem::path& path, const Json& value) {
  write_file_atomic(path, value.dump(2) + "\n");
}

}  // namespace pypto
