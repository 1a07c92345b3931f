#include "pypto/npy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/fs_util.h"
#include "pypto/error.h"

namespace pypto {

// The in-memory tensor layout is the file layout; a big-endian host would need byte swaps.
static_assert(std::endian::native == std::endian::little, ".npy I/O assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kArrayAlign = 64;           // numpy's ARRAY_ALIGN
constexpr size_t kGrowthAxisMaxDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS
constexpr size_t kMaxDims = 64;              // numpy 2's NPY_MAXDIMS

constexpr const char* kResave = "Re-save the array with numpy.save";
constexpr const char* kSupported =
    "supported descrs: '<f4' (f32), '<f2' (f16), '<V2' or 'bfloat16' (bf16), '|i1' (i8), "
    "'<i2' (i16), '<i4' (i32), '<i8' (i64), '|u1' (u8), '|b1' (bool)";

struct DescrInfo {
  std::string_view code;  // descr without its byte-order character
  DType dtype;
};
constexpr std::array<DescrInfo, 10> kDescrs{{
    {"f4", DType::kF32},
    {"f2", DType::kF16},
    {"V2", DType::kBF16},
    {"i1", DType::kI8},
    {"i2", DType::kI16},
    {"i4", DType::kI32},
    {"i8", DType::kI64},
    {"u1", DType::kU8},
    {"b1", DType::kBool},
    {"?", DType::kBool},
}};

[[noreturn]] void fail(const std::string& name, const std::string& field,
                       const std::string& problem, const std::string& remedy = kResave) {
  throw ArtifactError(name, field, problem, remedy);
}

// Python's repr of a shape tuple: "()", "(5,)", "(2, 3)".
std::string py_shape(std::span<const int64_t> shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

// A printable excerpt of untrusted header text for messages.
std::string quote_excerpt(std::string_view text) {
  constexpr size_t kMax = 120;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "\"";
  if (text.size() > kMax) out += "...";
  return out;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

struct HeaderDict {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Parses the header: a Python dict literal with exactly the keys 'descr'
// (a string), 'fortran_order' (True/False) and 'shape' (a tuple of ints), as
// numpy writes it, tolerating other whitespace, either quote and key order.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  HeaderDict parse() {
    HeaderDict dict;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_space();
    if (!consume('{')) syntax("the header does not start with '{'");
    skip_space();
    while (!consume('}')) {
      if (peek() != '\'' && peek() != '"') syntax("expected a quoted key or '}'");
      const std::string key = parse_string();
      skip_space();
      if (!consume(':')) syntax("expected ':' after key '" + key + "'");
      skip_space();
      bool* seen = nullptr;
      if (key == "descr") {
        seen = &seen_descr;
        dict.descr = parse_descr();
      } else if (key == "fortran_order") {
        seen = &seen_fortran;
        dict.fortran_order = parse_bool();
      } else if (key == "shape") {
        seen = &seen_shape;
        dict.shape = parse_shape();
      } else {
        fail(name_, "header",
             "unknown key '" + key + "' in header " + quote_excerpt(text_) +
                 "; a .npy header has exactly 'descr', 'fortran_order' and 'shape'");
      }
      if (*seen) fail(name_, "header", "key '" + key + "' appears twice in the header");
      *seen = true;
      skip_space();
      if (consume(',')) {
        skip_space();
      } else if (peek() != '}') {
        syntax("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    if (pos_ != text_.size()) syntax("unexpected text after the closing '}'");
    if (!seen_descr) fail(name_, "header", "the header dict has no 'descr' key");
    if (!seen_fortran) fail(name_, "header", "the header dict has no 'fortran_order' key");
    if (!seen_shape) fail(name_, "header", "the header dict has no 'shape' key");
    return dict;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  [[noreturn]] void syntax(const std::string& what) const {
    fail(name_, "header",
         "the header is not a Python dict literal: " + what + " at offset " + std::to_string(pos_) +
             " of " + quote_excerpt(text_));
  }

  std::string parse_string() {
    const char quote = text_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) syntax("unterminated string");
      char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\\') {
        if (pos_ >= text_.size()) syntax("unterminated string");
        c = text_[pos_++];
      }
      out += c;
    }
  }

  std::string parse_descr() {
    if (peek() == '[') {
      fail(name_, "descr", "structured (record) dtypes are not supported", kSupported);
    }
    if (peek() != '\'' && peek() != '"') {
      fail(name_, "descr", "the value is not a string in header " + quote_excerpt(text_));
    }
    return parse_string();
  }

  std::string_view parse_word() {
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  bool parse_bool() {
    const std::string_view word = parse_word();
    if (word == "True") return true;
    if (word == "False") return false;
    fail(name_, "fortran_order",
         "the value must be True or False in header " + quote_excerpt(text_));
  }

  Shape parse_shape() {
    if (!consume('(')) {
      fail(name_, "shape", "the value is not a tuple in header " + quote_excerpt(text_));
    }
    Shape shape;
    bool trailing_comma = false;
    skip_space();
    while (!consume(')')) {
      if (shape.size() == kMaxDims) {
        fail(name_, "shape", "more than " + std::to_string(kMaxDims) + " dimensions");
      }
      shape.push_back(parse_extent());
      skip_space();
      trailing_comma = consume(',');
      if (!trailing_comma && peek() != ')') syntax("expected ',' or ')' in the shape tuple");
      skip_space();
    }
    // "(3)" is the int 3 in Python, not a tuple; numpy refuses it too.
    if (shape.size() == 1 && !trailing_comma) {
      fail(name_, "shape",
           "(" + std::to_string(shape[0]) + ") is not a tuple; a 1-d shape is (" +
               std::to_string(shape[0]) + ",)");
    }
    return shape;
  }

  int64_t parse_extent() {
    if (peek() == '-') {
      fail(name_, "shape", "negative extent in shape of header " + quote_excerpt(text_));
    }
    const std::string_view digits = parse_word();
    if (digits.empty()) syntax("expected an integer in the shape tuple");
    std::string_view number = digits;
    // Python 2 wrote longs as "3L".
    if (number.size() > 1 && (number.back() == 'L' || number.back() == 'l')) {
      number.remove_suffix(1);
    }
    int64_t value = 0;
    for (char c : number) {
      if (c < '0' || c > '9') {
        fail(name_, "shape",
             "extent '" + std::string(digits) + "' is not a decimal integer in header " +
                 quote_excerpt(text_));
      }
      if (__builtin_mul_overflow(value, int64_t{10}, &value) ||
          __builtin_add_overflow(value, int64_t{c - '0'}, &value)) {
        fail(name_, "shape", "extent " + std::string(digits) + " is too large");
      }
    }
    return value;
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

uint32_t read_le(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return value;
}

void append_le(std::string& out, uint32_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

}  // namespace

const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "<f4";
    case DType::kF16:
      return "<f2";
    case DType::kBF16:
      return "<V2";
    case DType::kI8:
      return "|i1";
    case DType::kI16:
      return "<i2";
    case DType::kI32:
      return "<i4";
    case DType::kI64:
      return "<i8";
    case DType::kU8:
      return "|u1";
    case DType::kBool:
      return "|b1";
  }
  return "?";
}

std::optional<DType> parse_npy_descr(std::string_view descr) {
  if (descr == "bfloat16") return DType::kBF16;
  char order = '=';
  if (!descr.empty() && std::strchr("<>=|", descr.front()) != nullptr) {
    order = descr.front();
    descr.remove_prefix(1);
  }
  for (const auto& info : kDescrs) {
    if (descr != info.code) continue;
    // Byte order is meaningless for one-byte types, so numpy accepts '>i1' too.
    if (order == '>' && dtype_size(info.dtype) > 1) return std::nullopt;
    return info.dtype;
  }
  return std::nullopt;
}

NpyHeader parse_npy_header(std::string_view bytes, const std::string& name) {
  if (bytes.empty()) fail(name, "magic", "the file is empty, not a .npy file");
  const size_t magic_len = std::min(bytes.size(), kMagic.size());
  if (bytes.substr(0, magic_len) != kMagic.substr(0, magic_len)) {
    fail(name, "magic",
         "not a .npy file: it does not start with \"\\x93NUMPY\" (it starts with " +
             quote_excerpt(bytes.substr(0, 8)) + ")");
  }
  if (bytes.size() < kMagic.size() + 2) {
    fail(name, "version",
         "truncated: the file is " + std::to_string(bytes.size()) +
             " bytes, too short for the .npy magic and version");
  }
  NpyHeader h;
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(name, "version",
         "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
             " (supported: 1.0, 2.0, 3.0)");
  }
  h.major_version = major;
  const size_t len_width = major == 1 ? 2 : 4;
  const size_t header_start = 8 + len_width;
  if (bytes.size() < header_start) {
    fail(name, "header", "truncated: the file ends inside the header length field");
  }
  const size_t header_len = read_le(bytes, 8, len_width);
  if (header_len > bytes.size() - header_start) {
    fail(name, "header",
         "truncated: the header length field says " + std::to_string(header_len) +
             " bytes but only " + std::to_string(bytes.size() - header_start) + " follow");
  }
  const std::string_view text = bytes.substr(header_start, header_len);
  HeaderDict dict = HeaderParser(text, name).parse();

  const std::optional<DType> dtype = parse_npy_descr(dict.descr);
  if (!dtype) {
    if (!dict.descr.empty() && dict.descr.front() == '>' &&
        parse_npy_descr("<" + dict.descr.substr(1))) {
      fail(name, "descr", "big-endian data ('" + dict.descr + "') is not supported",
           "Convert it with arr.astype(arr.dtype.newbyteorder('<')) and save it again");
    }
    fail(name, "descr", "unsupported dtype descr '" + dict.descr + "'",
         std::string(kSupported) + "; convert the array with .astype() and save it again");
  }
  h.dtype = *dtype;
  h.fortran_order = dict.fortran_order;
  h.shape = std::move(dict.shape);

  // Same bound as Tensor: every byte offset, counting extent 0 as 1, fits in int64.
  int64_t span = static_cast<int64_t>(dtype_size(h.dtype));
  int64_t numel = 1;
  for (int64_t extent : h.shape) {
    if (__builtin_mul_overflow(span, std::max<int64_t>(extent, 1), &span)) {
      fail(name, "shape",
           "shape " + py_shape(h.shape) + " of " + dtype_name(h.dtype) +
               " is too large: its size in bytes does not fit in 64 bits");
    }
    numel *= extent;
  }
  h.data_offset = header_start + header_len;
  h.data_bytes = static_cast<size_t>(numel) * dtype_size(h.dtype);
  return h;
}

Tensor parse_npy(std::string_view bytes, const std::string& name) {
  const NpyHeader h = parse_npy_header(bytes, name);
  const size_t available = bytes.size() - h.data_offset;
  const std::string what = "shape " + py_shape(h.shape) + " of " + dtype_name(h.dtype) + " needs " +
                           std::to_string(h.data_bytes) + " data bytes";
  if (available < h.data_bytes) {
    fail(name, "data",
         "truncated data: " + what + " but the file has " + std::to_string(available) +
             " after the header");
  }
  if (available > h.data_bytes) {
    fail(name, "data",
         std::to_string(available - h.data_bytes) + " bytes of trailing data: " + what +
             " but the file has " + std::to_string(available) + " after the header");
  }
  Shape strides;  // row-major
  if (h.fortran_order) {
    strides.resize(h.shape.size());
    int64_t stride = 1;
    for (size_t d = 0; d < h.shape.size(); ++d) {
      strides[d] = stride;
      stride *= std::max<int64_t>(h.shape[d], 1);
    }
  }
  // contiguous() only reads through the view; the const_cast never writes.
  void* data = const_cast<char*>(bytes.data() + h.data_offset);
  return Tensor::borrow(data, h.dtype, h.shape, strides).contiguous();
}

std::string serialize_npy(const Tensor& tensor) {
  const Tensor packed = tensor.is_contiguous() ? tensor : tensor.contiguous();
  const Shape& shape = packed.shape();
  std::string dict = std::string("{'descr': '") + npy_descr(packed.dtype()) +
                     "', 'fortran_order': False, 'shape': " + py_shape(shape) + ", }";
  // numpy leaves room to grow the first axis in place.
  if (!shape.empty()) {
    const size_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // Version 1.0 unless the header outgrows its 16-bit length, as numpy.save chooses.
  int major = 1;
  size_t len_width = 2;
  size_t header_len = 0;
  size_t pad = 0;
  for (;;) {
    const size_t used = kMagic.size() + 2 + len_width + dict.size() + 1;
    pad = kArrayAlign - used % kArrayAlign;
    header_len = dict.size() + pad + 1;
    if (major > 1 || header_len <= 0xffff) break;
    major = 2;
    len_width = 4;
  }
  const std::span<const std::byte> data = packed.bytes();
  std::string out;
  out.reserve(kMagic.size() + 2 + len_width + header_len + data.size());
  out += kMagic;
  out += static_cast<char>(major);
  out += '\0';
  append_le(out, static_cast<uint32_t>(header_len), len_width);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  if (!data.empty()) out.append(reinterpret_cast<const char*>(data.data()), data.size());
  return out;
}

Tensor read_npy(const std::filesystem::path& path) {
  return parse_npy(read_file(path), path.string());
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  write_file_atomic(path, serialize_npy(tensor));
}

}  // namespace pypto
