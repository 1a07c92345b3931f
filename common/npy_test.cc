#include "pypto/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "common/fs_util.h"

namespace pypto {
namespace {

constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8,  DType::kI16,
                                DType::kI32, DType::kI64, DType::kU8,   DType::kBool};

// A .npy file with the given header text, padded as numpy pads it.
std::string make_npy(const std::string& dict, std::string_view data, int major = 1) {
  const size_t len_width = major == 1 ? 2 : 4;
  std::string header = dict;
  const size_t used = 8 + len_width + header.size() + 1;
  header.append(64 - used % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_width; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(data);
}

std::string f32_bytes(std::vector<float> values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)};
}

// Fills a tensor's bytes with a pattern that differs per byte (bool: 0/1).
Tensor patterned(DType dtype, const Shape& shape) {
  Tensor t = Tensor::empty(dtype, shape);
  auto* p = static_cast<unsigned char*>(t.data());
  for (size_t i = 0; i < t.nbytes(); ++i) {
    p[i] = dtype == DType::kBool ? (i % 3 == 0) : static_cast<unsigned char>(i * 37 + 11);
  }
  return t;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == cb.nbytes() &&
         (ca.nbytes() == 0 || std::memcmp(ca.data(), cb.data(), ca.nbytes()) == 0);
}

// The ArtifactError message parse_npy throws for `bytes` ("" when it does not throw).
std::string npy_error(const std::string& bytes) {
  try {
    parse_npy(bytes, "inputs/x.npy");
  } catch (const ArtifactError& e) {
    EXPECT_EQ(e.file(), "inputs/x.npy");
    return e.what();
  }
  return "";
}

class NpyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("pypto_npy_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST(NpyTest, GoldenHeaderMatchesNumpySave) {
  // np.save("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3)): the dict,
  // 20 spaces of room to grow axis 0 (21 digits minus one), padding spaces and
  // '\n' so that magic + version + length + header is 128 bytes; length 118 = 'v'.
  Tensor t = Tensor::empty(DType::kF32, {2, 3});
  std::iota(t.data_as<float>(), t.data_as<float>() + 6, 0.0f);
  const std::string bytes = serialize_npy(t);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const std::string expected_header =
      std::string("\x93NUMPY\x01\x00v\x00", 10) + dict + std::string(128 - 10 - 59 - 1, ' ') + "\n";
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 128), expected_header);
  EXPECT_EQ(bytes.substr(128), f32_bytes({0, 1, 2, 3, 4, 5}));
}

TEST(NpyTest, GoldenHeadersOfScalarsVectorsAndEveryDescr) {
  EXPECT_EQ(serialize_npy(Tensor::empty(DType::kI64, {})).substr(0, 128),
            std::string("\x93NUMPY\x01\x00v\x00", 10) +
                "{'descr': '<i8', 'fortran_order': False, 'shape': (), }" +
                std::string(128 - 10 - 55 - 1, ' ') + "\n");
  const std::string vec = serialize_npy(Tensor::empty(DType::kU8, {5}));
  EXPECT_EQ(vec.substr(10, 57), "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }");

  const std::pair<DType, const char*> descrs[] = {
      {DType::kF32, "'<f4'"}, {DType::kF16, "'<f2'"}, {DType::kBF16, "'<V2'"},
      {DType::kI8, "'|i1'"},  {DType::kI16, "'<i2'"}, {DType::kI32, "'<i4'"},
      {DType::kI64, "'<i8'"}, {DType::kU8, "'|u1'"},  {DType::kBool, "'|b1'"}};
  for (const auto& [dtype, descr] : descrs) {
    SCOPED_TRACE(dtype_name(dtype));
    EXPECT_EQ("'" + std::string(npy_descr(dtype)) + "'", descr);
    const std::string bytes = serialize_npy(Tensor::empty(dtype, {3, 1}));
    const size_t header_len = static_cast<unsigned char>(bytes[8]) |
                              static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u);
    EXPECT_EQ(bytes[10 + header_len - 1], '\n');
    EXPECT_NE(bytes.find(std::string("{'descr': ") + descr), std::string::npos);
    EXPECT_EQ(bytes.size(), 10 + header_len + 3 * dtype_size(dtype));
  }
}

TEST(NpyTest, RoundTripsEveryDtypeAndShapeInMemory) {
  const Shape shapes[] = {{}, {1}, {0}, {7}, {2, 3, 4}, {0, 3}, {3, 0, 2}, {1, 1, 1, 1}};
  for (DType dtype : kAllDTypes) {
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + shape_string(shape));
      const Tensor t = patterned(dtype, shape);
      const Tensor back = parse_npy(serialize_npy(t), "mem.npy");
      EXPECT_TRUE(back.is_owned());
      EXPECT_TRUE(back.is_contiguous());
      EXPECT_TRUE(same_tensor(t, back));
      const NpyHeader h = parse_npy_header(serialize_npy(t), "mem.npy");
      EXPECT_EQ(h.major_version, 1);
      EXPECT_EQ(h.data_offset % 64, 0u);
      EXPECT_EQ(h.data_bytes, t.nbytes());
    }
  }
}

TEST_F(NpyFileTest, RoundTripsEveryDtypeThroughFiles) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor t = patterned(dtype, {4, 3});
    const auto path = dir_ / "sub" / (std::string(dtype_name(dtype)) + ".npy");
    write_npy(path, t);
    EXPECT_TRUE(same_tensor(read_npy(path), t));
  }
}

TEST_F(NpyFileTest, NonContiguousTensorsAreWrittenAsTheirCopy) {
  Tensor t = patterned(DType::kI16, {4, 6});
  Tensor view = t.slice({1, 2}, {3, 3});
  ASSERT_FALSE(view.is_contiguous());
  write_npy(dir_ / "view.npy", view);
  const Tensor back = read_npy(dir_ / "view.npy");
  EXPECT_EQ(back.shape(), (Shape{3, 3}));
  EXPECT_TRUE(same_tensor(back, view));
  EXPECT_EQ(read_file(dir_ / "view.npy"), serialize_npy(view.contiguous()));
}

TEST_F(NpyFileTest, ReadErrorsNameThePath) {
  try {
    read_npy(dir_ / "missing.npy");
    FAIL() << "no error";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.npy"), std::string::npos) << e.what();
  }
  write_file_atomic(dir_ / "bad.npy", "PK\x03\x04 not numpy");
  try {
    read_npy(dir_ / "bad.npy");
    FAIL() << "no error";
  } catch (const ArtifactError& e) {
    EXPECT_EQ(e.file(), (dir_ / "bad.npy").string());
    EXPECT_NE(std::string(e.what()).find("not a .npy file"), std::string::npos) << e.what();
  }
}

TEST(NpyTest, ReadsVersions2And3) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  for (int major : {2, 3}) {
    const std::string bytes = make_npy(dict, f32_bytes({1.5f, -2}), major);
    const Tensor t = parse_npy(bytes, "v.npy");
    EXPECT_EQ(t.shape(), Shape{2});
    EXPECT_EQ(t.data_as<float>()[1], -2.0f);
    EXPECT_EQ(parse_npy_header(bytes, "v.npy").major_version, major);
  }
}

TEST(NpyTest, AcceptsOtherSpellingsOfTheHeader) {
  const std::string data = f32_bytes({1, 2, 3, 4, 5, 6});
  const char* dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",  // any key order
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
      "  {  'descr' : '=f4' ,\n'fortran_order':False,'shape':( 2 , 3 , ) }  ",
      "{'descr': 'f4', 'fortran_order': False, 'shape': (2L, 3L), }",  // Python 2 longs
      "{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3), }",
  };
  for (const char* dict : dicts) {
    SCOPED_TRACE(dict);
    const Tensor t = parse_npy(make_npy(dict, data), "s.npy");
    EXPECT_EQ(t.dtype(), DType::kF32);
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.data_as<float>()[5], 6.0f);
  }
}

TEST(NpyTest, DescrSpellings) {
  EXPECT_EQ(parse_npy_descr("<V2"), DType::kBF16);
  EXPECT_EQ(parse_npy_descr("|V2"), DType::kBF16);
  EXPECT_EQ(parse_npy_descr("bfloat16"), DType::kBF16);
  EXPECT_EQ(parse_npy_descr("|b1"), DType::kBool);
  EXPECT_EQ(parse_npy_descr("?"), DType::kBool);
  EXPECT_EQ(parse_npy_descr(">i1"), DType::kI8);  // byte order is moot for one byte
  EXPECT_EQ(parse_npy_descr(">u1"), DType::kU8);
  EXPECT_EQ(parse_npy_descr("=i8"), DType::kI64);
  EXPECT_EQ(parse_npy_descr(">f4"), std::nullopt);
  EXPECT_EQ(parse_npy_descr("<f8"), std::nullopt);
  EXPECT_EQ(parse_npy_descr("<V4"), std::nullopt);
  EXPECT_EQ(parse_npy_descr(""), std::nullopt);
  for (DType dtype : kAllDTypes) EXPECT_EQ(parse_npy_descr(npy_descr(dtype)), dtype);
}

TEST(NpyTest, Bf16InTheMlDtypesSpellings) {
  const std::string data("\x80\x3f\x00\x40", 4);  // bf16 1.0, 2.0
  for (const char* descr : {"<V2", "|V2", "bfloat16"}) {
    SCOPED_TRACE(descr);
    const Tensor t = parse_npy(
        make_npy(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }",
                 data),
        "b.npy");
    EXPECT_EQ(t.dtype(), DType::kBF16);
    EXPECT_EQ(t.data_as<uint16_t>()[0], 0x3f80);
    EXPECT_EQ(t.data_as<uint16_t>()[1], 0x4000);
  }
}

TEST(NpyTest, FortranOrderIsTransposedIntoCOrder) {
  // The 2x3 matrix [[0, 1, 2], [3, 4, 5]] stored column by column.
  const std::string bytes = make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                     f32_bytes({0, 3, 1, 4, 2, 5}));
  const Tensor t = parse_npy(bytes, "f.npy");
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  const float* p = t.data_as<float>();
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(parse_npy_header(bytes, "f.npy").fortran_order);
}

struct Malformed {
  const char* what;
  std::string bytes;
  std::vector<std::string> expected;  // substrings of the message
};

std::string with_dict(const std::string& dict, std::string_view data = std::string(24, '\0')) {
  return make_npy(dict, data);
}

TEST(NpyTest, MalformedFilesAreArtifactErrorsNamingFileAndProblem) {
  const std::string good =
      serialize_npy(Tensor::empty(DType::kF32, {2, 3}));  // 128-byte header + 24 bytes
  const std::string f32_23 = "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)";
  const std::vector<Malformed> cases = {
      {"empty file", "", {"field 'magic'", "empty"}},
      {"bad magic", "PK\x03\x04zipzipzip", {"field 'magic'", "not a .npy file", "PK"}},
      {"magic only", "\x93NUM", {"field 'version'", "truncated"}},
      {"version 4.0",
       std::string("\x93NUMPY\x04\x00", 8) + good.substr(8),
       {"field 'version'", "unsupported .npy format version 4.0"}},
      {"version 1.1", std::string("\x93NUMPY\x01\x01", 8) + good.substr(8), {"version 1.1"}},
      {"no header length",
       std::string("\x93NUMPY\x02\x00\x10", 9),
       {"field 'header'", "header length field"}},
      {"truncated header",
       good.substr(0, 100),
       {"field 'header'", "truncated", "says 118 bytes but only 90 follow"}},
      {"header not a dict",
       with_dict("['descr', '<f4']"),
       {"field 'header'", "not a Python dict literal", "does not start with '{'"}},
      {"unclosed dict",
       with_dict("{" + f32_23),
       {"not a Python dict literal", "expected ',' or '}'"}},
      {"text after dict",
       with_dict("{" + f32_23 + "} x"),
       {"unexpected text after the closing '}'"}},
      {"unterminated string", with_dict("{'descr': '<f4, }"), {"unterminated string"}},
      {"unquoted key", with_dict("{descr: '<f4'}"), {"expected a quoted key"}},
      {"missing shape", with_dict("{'descr': '<f4', 'fortran_order': False}"), {"no 'shape' key"}},
      {"missing descr", with_dict("{'fortran_order': False, 'shape': (2, 3)}"), {"no 'descr' key"}},
      {"unknown key", with_dict("{" + f32_23 + ", 'align': 8}"), {"unknown key 'align'"}},
      {"duplicate key",
       with_dict("{" + f32_23 + ", 'descr': '<f4'}"),
       {"key 'descr' appears twice"}},
      {"float64",
       with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (3,)}"),
       {"field 'descr'", "unsupported dtype descr '<f8'", "'<f4' (f32)"}},
      {"object",
       with_dict("{'descr': '|O', 'fortran_order': False, 'shape': (3,)}"),
       {"unsupported dtype descr '|O'"}},
      {"big-endian",
       with_dict("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3)}"),
       {"field 'descr'", "big-endian", "newbyteorder('<')"}},
      {"structured",
       with_dict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}"),
       {"field 'descr'", "structured"}},
      {"descr not a string",
       with_dict("{'descr': 4, 'fortran_order': False, 'shape': (2, 3)}"),
       {"field 'descr'", "not a string"}},
      {"fortran_order not a bool",
       with_dict("{'descr': '<f4', 'fortran_order': 'no', 'shape': (2, 3)}"),
       {"field 'fortran_order'", "True or False"}},
      {"shape not a tuple",
       with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}"),
       {"field 'shape'", "not a tuple"}},
      {"shape (6) is an int",
       with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}"),
       {"field 'shape'", "(6) is not a tuple"}},
      {"negative extent",
       with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}"),
       {"field 'shape'", "negative extent"}},
      {"hex extent",
       with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (0x6,)}"),
       {"field 'shape'", "'0x6' is not a decimal integer"}},
      {"extent overflows int64",
       with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
       {"field 'shape'", "99999999999999999999 is too large"}},
      {"size overflows int64",
       with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
       {"field 'shape'", "too large"}},
      {"zero extent hides an overflow",
       with_dict("{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296)}",
                 ""),
       {"field 'shape'", "too large"}},
      {"huge shape, little data",
       with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,)}"),
       {"field 'data'", "truncated data", "needs 4000000000000 data bytes", "has 24"}},
      {"truncated data",
       good.substr(0, good.size() - 1),
       {"field 'data'", "truncated data", "needs 24 data bytes but the file has 23"}},
      {"trailing data", good + "xy", {"field 'data'", "2 bytes of trailing data"}},
  };
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = npy_error(c.bytes);
    ASSERT_FALSE(msg.empty()) << "no ArtifactError";
    EXPECT_EQ(msg.rfind("inputs/x.npy: ", 0), 0u) << msg;
    for (const std::string& part : c.expected) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

TEST(NpyTest, TooManyDimensionsAreRefused) {
  std::string shape = "(";
  for (int i = 0; i < 65; ++i) shape += "1, ";
  const std::string msg =
      npy_error(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ")}"));
  EXPECT_NE(msg.find("more than 64 dimensions"), std::string::npos) << msg;
}

// Every prefix and every single-byte corruption of a valid file either parses
// or throws a pypto Error; nothing else escapes.
TEST(NpyTest, CorruptedFilesNeverEscapeAsOtherExceptions) {
  Tensor t = patterned(DType::kI32, {3, 2});
  const std::string good = serialize_npy(t);
  auto check = [](const std::string& bytes) {
    try {
      parse_npy(bytes, "c.npy");
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(npy_error(good.substr(0, n)).empty()) << "prefix of " << n << " bytes parsed";
  }
  for (size_t i = 0; i < 128; ++i) {
    for (unsigned char v : {0x00, 0x20, 0x27, 0x28, 0x29, 0x2c, 0x30, 0x39, 0x7b, 0x7d, 0xff}) {
      std::string bytes = good;
      bytes[i] = static_cast<char>(v);
      check(bytes);
    }
  }
}

}  // namespace
}  // namespace pypto
