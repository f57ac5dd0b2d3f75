#include "attn/io.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attn/error.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

using attn::Matrix;

constexpr float kMax = std::numeric_limits<float>::max();
constexpr float kTrueMin = std::numeric_limits<float>::denorm_min();

// A fixture that NumPy wrote (tests/reference/make_npy_fixtures.py).
std::string fixture(const std::string& name) {
  return attn::read_file(fs::path(ATTN_NPY_FIXTURES) / name);
}

Matrix matrix(Eigen::Index rows, Eigen::Index cols, std::initializer_list<float> values) {
  REQUIRE(static_cast<Eigen::Index>(values.size()) == rows * cols);
  Matrix m(rows, cols);
  std::copy(values.begin(), values.end(), m.data());
  return m;
}

// Bit patterns, so that -0.0 differs from 0.0 and every rounding shows.
std::vector<std::uint32_t> bits(const Matrix& m) {
  std::vector<std::uint32_t> out;
  for (Eigen::Index i = 0; i < m.size(); ++i)
    out.push_back(std::bit_cast<std::uint32_t>(m.data()[i]));
  return out;
}

void check_same(const Matrix& actual, const Matrix& expected) {
  REQUIRE(actual.rows() == expected.rows());
  REQUIRE(actual.cols() == expected.cols());
  CHECK(bits(actual) == bits(expected));
}

// The 2 x 3 float32 matrix of the fixtures: each value needs all 9 significant digits.
Matrix nine_digits() {
  return matrix(
      2, 3,
      {0.114053644f, -13.4585905f, 116.683624f, 10740.1045f, -0.0120586455f, 1.40892835e-05f});
}

// A .npy file with the given header dict and data, its header padded like numpy's.
std::string npy_with_header(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t length_size = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + length_size + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < length_size; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string f4_bytes(std::initializer_list<float> values) {
  std::string out;
  for (const float v : values) {
    const auto b = std::bit_cast<std::uint32_t>(v);
    for (int i = 0; i < 4; ++i) out += static_cast<char>((b >> (8 * i)) & 0xFF);
  }
  return out;
}

std::string f8_bytes(std::initializer_list<double> values) {
  std::string out;
  for (const double v : values) {
    const auto b = std::bit_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) out += static_cast<char>((b >> (8 * i)) & 0xFF);
  }
  return out;
}

using attn::test::TempDir;

// The names in a folder, hidden ones included, sorted.
std::vector<std::string> list(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

void write_plain(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out.good());
}

using Names = std::vector<std::string>;

}  // namespace

// CHECK_THROWS_WITH_AS for a message built at run time: doctest 2.4.9 takes a const char*.
#define CHECK_ERROR(expr, message)                                     \
  do {                                                                 \
    const std::string expected_message = (message);                    \
    CHECK_THROWS_WITH_AS(expr, expected_message.c_str(), attn::Error); \
  } while (false)

// ---- .npy: writing ---------------------------------------------------------------------------

TEST_CASE("npy_bytes is byte for byte what numpy.save writes") {
  CHECK(attn::npy_bytes(nine_digits()) == fixture("f4_2x3.npy"));
  CHECK(attn::npy_bytes(matrix(1, 1, {42.5f})) == fixture("f4_1x1.npy"));
  const Matrix v = matrix(1, 5, {-0.0f, 1.5f, kTrueMin, -kMax, 0.2f});
  CHECK(attn::npy_bytes(v, true) == fixture("f4_vector5.npy"));
  // The same row as a matrix is shape (1, 5), not (5,).
  CHECK(attn::npy_bytes(v).find("'shape': (1, 5), }") != std::string::npos);
}

TEST_CASE("npy_bytes aligns the data to 64 bytes for any shape, as numpy >= 1.23 does") {
  for (const Eigen::Index rows : {1, 9, 10, 99, 100, 12345}) {
    for (const Eigen::Index cols : {1, 7, 1000}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const std::string bytes = attn::npy_bytes(Matrix::Zero(rows, cols));
      const std::size_t data = bytes.size() - 4 * static_cast<std::size_t>(rows * cols);
      CHECK(data % 64 == 0);
      CHECK(bytes[data - 1] == '\n');
      // The header length field counts everything after itself up to the data.
      CHECK(static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]) ==
            data - 10);
      CHECK(attn::parse_npy(bytes, "x.npy").values.rows() == rows);
    }
  }
}

TEST_CASE("npy_bytes writes a vector only from one row") {
  CHECK_THROWS_WITH_AS(attn::npy_bytes(Matrix::Zero(2, 3), true),
                       "npy_bytes: a vector is one row; the matrix has 2 rows", attn::Error);
}

TEST_CASE("npy_bytes -> parse_npy keeps every float32 bit") {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               kTrueMin,
                               -kTrueMin,
                               1e-40f,
                               std::numeric_limits<float>::min(),
                               kMax,
                               -kMax,
                               1.0f,
                               0.1f,
                               std::nextafter(1.0f, 2.0f),
                               16777216.0f};
  std::mt19937 gen(42);
  while (values.size() < 4 * 64) {
    const float v = std::bit_cast<float>(static_cast<std::uint32_t>(gen()));
    if (std::isfinite(v)) values.push_back(v);
  }
  Matrix m(4, 64);
  std::copy(values.begin(), values.end(), m.data());
  const attn::LoadedMatrix back = attn::parse_npy(attn::npy_bytes(m), "x.npy");
  check_same(back.values, m);
  CHECK(back.row_labels.empty());
  const Matrix row = m.topRows(1);
  check_same(attn::parse_npy(attn::npy_bytes(row, true), "x.npy").values, row);
}

// ---- .npy: reading ---------------------------------------------------------------------------

TEST_CASE("parse_npy reads numpy's files: float32, float64, versions 1.0, 2.0 and 3.0") {
  check_same(attn::parse_npy(fixture("f4_2x3.npy"), "f4_2x3.npy").values, nine_digits());
  check_same(attn::parse_npy(fixture("f4_2x3_v2.npy"), "f4_2x3_v2.npy").values, nine_digits());
  check_same(attn::parse_npy(fixture("f4_2x3_v3.npy"), "f4_2x3_v3.npy").values, nine_digits());
  check_same(attn::parse_npy(fixture("f4_1x1.npy"), "f4_1x1.npy").values, matrix(1, 1, {42.5f}));
  // A 1-D array is one row, and known as a vector.
  const attn::LoadedMatrix v = attn::parse_npy(fixture("f4_vector5.npy"), "f4_vector5.npy");
  check_same(v.values, matrix(1, 5, {-0.0f, 1.5f, kTrueMin, -kMax, 0.2f}));
  CHECK(v.vector);
  CHECK_FALSE(attn::parse_npy(fixture("f4_1x1.npy"), "f4_1x1.npy").vector);
  // float64 is rounded to the nearest float32, as numpy's astype(np.float32) does.
  check_same(attn::parse_npy(fixture("f8_3x2.npy"), "f8_3x2.npy").values,
             matrix(3, 2,
                    {static_cast<float>(0.1), -2.5f, static_cast<float>(1.0 / 3.0), 65504.0f,
                     static_cast<float>(1e-3), static_cast<float>(3.0000000000000004)}));
}

TEST_CASE("parse_npy refuses what is not a finite float matrix in C order, naming the file") {
  auto parse = [](const std::string& name) { return attn::parse_npy(fixture(name), name); };
  CHECK_THROWS_WITH_AS(parse("f4_nan.npy"),
                       "f4_nan.npy: row 2, column 3 is nan: values must be finite", attn::Error);
  CHECK_THROWS_WITH_AS(parse("i4_2x2.npy"),
                       "i4_2x2.npy: dtype '<i4' is not supported: allowed are '<f4' (float32) and "
                       "'<f8' (float64)",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("f4_big_endian.npy"),
                       "f4_big_endian.npy: dtype '>f4' is not supported: allowed are '<f4' "
                       "(float32) and '<f8' (float64)",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("f4_fortran.npy"),
                       "f4_fortran.npy is in Fortran order: only C order is supported "
                       "(np.ascontiguousarray)",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("f4_3d.npy"),
                       "f4_3d.npy: shape (2, 2, 2) has 3 dimensions: allowed are 1 or 2",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("f4_scalar.npy"),
                       "f4_scalar.npy: shape () has 0 dimensions: allowed are 1 or 2", attn::Error);
  CHECK_THROWS_WITH_AS(parse("f4_empty.npy"),
                       "f4_empty.npy: shape (0, 3) is empty: a matrix needs at least one value",
                       attn::Error);
}

TEST_CASE("parse_npy refuses infinities, and float64 values beyond float32's range") {
  Matrix m = nine_digits();
  m(1, 0) = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(attn::parse_npy(attn::npy_bytes(m), "x.npy"),
                       "x.npy: row 2, column 1 is inf: values must be finite", attn::Error);
  m(1, 0) = 0.0f;
  m(0, 2) = -std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(attn::parse_npy(attn::npy_bytes(m), "x.npy"),
                       "x.npy: row 1, column 3 is -inf: values must be finite", attn::Error);
  const std::string f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  CHECK_THROWS_WITH_AS(attn::parse_npy(npy_with_header(f8, f8_bytes({1.0, -1e39})), "x.npy"),
                       "x.npy: row 1, column 2 (-1e+39) is too large for float32: values must be "
                       "finite",
                       attn::Error);
  // 3.4028235677973366e38 is halfway between FLT_MAX and 2^128: it rounds to even, to infinity.
  CHECK_THROWS_AS(
      attn::parse_npy(npy_with_header(f8, f8_bytes({1.0, 3.4028235677973366e38})), "x.npy"),
      attn::Error);
  check_same(
      attn::parse_npy(npy_with_header(f8, f8_bytes({1.0, 3.4028235677973362e38})), "x.npy").values,
      matrix(1, 2, {1.0f, kMax}));
}

TEST_CASE("parse_npy: data that ends early or has bytes left over") {
  const std::string bytes = fixture("f4_2x3.npy");
  CHECK_THROWS_WITH_AS(attn::parse_npy(bytes.substr(0, bytes.size() - 1), "x.npy"),
                       "x.npy is truncated: shape (2, 3) of '<f4' needs 24 bytes of data, there "
                       "are 23",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_npy(bytes + '\0', "x.npy"),
                       "x.npy has 1 byte left over: shape (2, 3) of '<f4' needs 24 bytes of data, "
                       "there are 25",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_npy(bytes + "abc", "x.npy"),
                       "x.npy has 3 bytes left over: shape (2, 3) of '<f4' needs 24 bytes of data, "
                       "there are 27",
                       attn::Error);
  const std::string f8 = fixture("f8_3x2.npy");
  CHECK_THROWS_WITH_AS(attn::parse_npy(f8.substr(0, f8.size() - 8), "x.npy"),
                       "x.npy is truncated: shape (3, 2) of '<f8' needs 48 bytes of data, there "
                       "are 40",
                       attn::Error);
  for (const std::size_t cut : std::initializer_list<std::size_t>{7, 8, 9, 10, 50, 127}) {
    CAPTURE(cut);
    CHECK_THROWS_WITH_AS(attn::parse_npy(bytes.substr(0, cut), "x.npy"),
                         "x.npy is truncated: it ends in the header", attn::Error);
  }
  // A shape whose size overflows 64 bits is more than any file holds.
  CHECK_THROWS_WITH_AS(
      attn::parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                      "(4294967296, 4294967296), }",
                                      ""),
                      "x.npy"),
      "x.npy is truncated: shape (4294967296, 4294967296) of '<f4' needs more bytes of data, "
      "there are 0",
      attn::Error);
}

TEST_CASE("parse_npy: not a .npy file, or a version it does not know") {
  CHECK_THROWS_WITH_AS(attn::parse_npy("", "x.npy"),
                       "x.npy is not a .npy file: it does not start with \\x93NUMPY", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_npy("PK\x03\x04 a zip", "x.npz"),
                       "x.npz is not a .npy file: it does not start with \\x93NUMPY", attn::Error);
  std::string v4 = fixture("f4_1x1.npy");
  v4[6] = '\x04';
  CHECK_THROWS_WITH_AS(attn::parse_npy(v4, "x.npy"),
                       "x.npy has .npy version 4.0: allowed are 1.0, 2.0 and 3.0", attn::Error);
  v4[6] = '\x01';
  v4[7] = '\x01';
  CHECK_THROWS_WITH_AS(attn::parse_npy(v4, "x.npy"),
                       "x.npy has .npy version 1.1: allowed are 1.0, 2.0 and 3.0", attn::Error);
}

TEST_CASE("parse_npy reads the header dict as Python would: any order, spacing and quotes") {
  const std::string data = f4_bytes({1.5f, -2.0f});
  for (const std::string dict : {
           "{'shape': (2, 1), 'fortran_order': False, 'descr': '<f4'}",
           "{ \"descr\" : \"<f4\" , \"fortran_order\":False,\"shape\":(2,1,) }",
           "{'descr':'<f4','fortran_order':False,'shape':(2L, 1L)}",
           "{\n'descr': '<f4',\n'fortran_order': False,\n'shape': ((2), 1),\n}",
       }) {
    CAPTURE(dict);
    check_same(attn::parse_npy(npy_with_header(dict, data), "x.npy").values,
               matrix(2, 1, {1.5f, -2.0f}));
  }
  check_same(attn::parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                             "(2,)}",
                                             data),
                             "x.npy")
                 .values,
             matrix(1, 2, {1.5f, -2.0f}));
  // Versions 2.0 and 3.0 have a 4-byte header length.
  for (const int major : {2, 3}) {
    check_same(attn::parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                               "(1, 2)}",
                                               data, major),
                               "x.npy")
                   .values,
               matrix(1, 2, {1.5f, -2.0f}));
  }
}

TEST_CASE("parse_npy refuses a header that is not numpy's dict, naming the byte") {
  auto parse = [](const std::string& dict) {
    return attn::parse_npy(npy_with_header(dict, f4_bytes({1.0f})), "x.npy");
  };
  // The dict starts at byte 10 of a version 1.0 file.
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (1,) 'x': 1}"),
                       "x.npy has an invalid .npy header (byte 65): expected ','", attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}"),
                       "x.npy has an invalid .npy header (byte 66): the key 'extra' is not known",
                       attn::Error);
  CHECK_THROWS_WITH_AS(
      parse("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}"),
      "x.npy has an invalid .npy header (byte 66): the key 'shape' appears twice", attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4', 'shape': (1,)}"),
                       "x.npy has an invalid .npy header: it has no 'fortran_order'", attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}"),
                       "x.npy has an invalid .npy header (byte 44): 'fortran_order' is not True or "
                       "False",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': [1]}"),
                       "x.npy has an invalid .npy header (byte 60): 'shape' is not a tuple of "
                       "integers",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}"),
                       "x.npy has an invalid .npy header (byte 61): expected a string, a number, "
                       "True, False or a tuple",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x"),
                       "x.npy has an invalid .npy header (byte 66): text after the dictionary",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("['descr', '<f4']"),
                       "x.npy has an invalid .npy header (byte 10): expected '{'", attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '<f4"),
                       "x.npy has an invalid .npy header (byte 20): a string has no closing quote",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}"),
                       "x.npy: dtype '|f4' is not supported: allowed are '<f4' (float32) and "
                       "'<f8' (float64)",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}"),
                       "x.npy: dtype [('a', '<f4')] is not supported: allowed are '<f4' (float32) "
                       "and '<f8' (float64)",
                       attn::Error);
}

// ---- CSV -------------------------------------------------------------------------------------

TEST_CASE("parse_csv: a plain matrix, with or without a final newline, LF or CRLF") {
  const Matrix expected = matrix(2, 3, {1, 2, 3, 4, 5, 6});
  for (const std::string text :
       {"1,2,3\n4,5,6\n", "1,2,3\n4,5,6", "1,2,3\r\n4,5,6\r\n", " 1 , 2,\t3\n4,5 ,6   \n"}) {
    CAPTURE(text);
    const attn::LoadedMatrix m = attn::parse_csv(text, "m.csv");
    check_same(m.values, expected);
    CHECK(m.row_labels.empty());
  }
  check_same(attn::parse_csv("7\n", "m.csv").values, matrix(1, 1, {7}));
}

TEST_CASE("parse_csv: a first column of text holds the row labels") {
  const attn::LoadedMatrix m = attn::parse_csv("Life,1,2\nis, 3,4\n", "m.csv");
  check_same(m.values, matrix(2, 2, {1, 2, 3, 4}));
  CHECK(m.row_labels == Names{"Life", "is"});
  // Quotes group a label with commas; "" is a quote inside.
  const attn::LoadedMatrix q =
      attn::parse_csv("\"short, sweet\",1\n \"say \"\"hi\"\"\" ,2\n\"\",3\n", "m.csv");
  check_same(q.values, matrix(3, 1, {1, 2, 3}));
  CHECK(q.row_labels == Names{"short, sweet", "say \"hi\"", ""});
  // A quoted number is a number.
  check_same(attn::parse_csv("\"1.5\",\"2\"\n", "m.csv").values, matrix(1, 2, {1.5f, 2}));
}

TEST_CASE("parse_csv skips blank lines and comments, and counts lines as the file does") {
  const std::string text = "# embeddings\n\n  # indented\n1, 2\n   \n3,4\r\n\n";
  check_same(attn::parse_csv(text, "m.csv").values, matrix(2, 2, {1, 2, 3, 4}));
  CHECK_THROWS_WITH_AS(attn::parse_csv("# header\n1,2\n\n3\n", "m.csv"),
                       "m.csv: line 4 has 1 field, line 2 has 2: all rows must have the same "
                       "length",
                       attn::Error);
  // A UTF-8 byte order mark, as spreadsheets write, is not part of the first field.
  check_same(attn::parse_csv("\xEF\xBB\xBF"
                             "1,2\n",
                             "m.csv")
                 .values,
             matrix(1, 2, {1, 2}));
}

TEST_CASE("parse_csv rounds each number from its text straight to float32") {
  const attn::LoadedMatrix m =
      attn::parse_csv("0.1,1e-45,3.4028235e38,-0,+2.5,1E3,1e-50,-1e-50\n", "m.csv");
  check_same(m.values, matrix(1, 8, {0.1f, kTrueMin, kMax, -0.0f, 2.5f, 1000.0f, 0.0f, -0.0f}));
  // Just above the midpoint between 1 and the next float: through a double it would be rounded
  // twice, down to 1.
  check_same(attn::parse_csv("1.00000005960464477550\n", "m.csv").values,
             matrix(1, 1, {std::nextafter(1.0f, 2.0f)}));
  check_same(attn::parse_csv(" 0.114053644,-13.4585905 \n", "m.csv").values,
             matrix(1, 2, {0.114053644f, -13.4585905f}));
}

TEST_CASE("parse_csv refuses rows of different lengths, text, nan and infinities") {
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,2,3\n4,5\n", "m.csv"),
                       "m.csv: line 2 has 2 fields, line 1 has 3: all rows must have the same "
                       "length",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,2\n3,abc\n", "m.csv"),
                       "m.csv: line 2, column 2: 'abc' is not a number", attn::Error);
  // Text in the first column of only some rows is not a label column.
  CHECK_THROWS_WITH_AS(attn::parse_csv("a,1\n2,3\n", "m.csv"),
                       "m.csv: line 1, column 1: 'a' is not a number", attn::Error);
  // Nor is a single column of text.
  CHECK_THROWS_WITH_AS(attn::parse_csv("a\nb\n", "m.csv"),
                       "m.csv: line 1, column 1: 'a' is not a number", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,2\n3,nan\n", "m.csv"),
                       "m.csv: line 2, column 2 is nan: values must be finite", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("a,1,2\n\nb,3,inf\n", "m.csv"),
                       "m.csv: line 3, column 3 is inf: values must be finite", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("-Infinity\n", "m.csv"),
                       "m.csv: line 1, column 1 is -inf: values must be finite", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,2\n3,1e39\n", "m.csv"),
                       "m.csv: line 2, column 2 (1e39) is too large for float32: values must be "
                       "finite",
                       attn::Error);
  // A field quoted in a message: at most 40 bytes, and what does not show escaped.
  const std::string long_message = "m.csv: line 1, column 3 (" + std::string(40, '9') +
                                   "...) is too large for float32: values must be finite";
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,2," + std::string(1000, '9') + "\n", "m.csv"),
                       long_message.c_str(), attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,2,3\n\xef\xbb\xbf"
                                       "4,5,6\n",
                                       "m.csv"),
                       "m.csv: line 2, column 1: '\\ufeff4' is not a number", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,\xc2\xa0"
                                       "2,3\n",
                                       "m.csv"),
                       "m.csv: line 1, column 2: '\\xa02' is not a number", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,,3\n", "m.csv"),
                       "m.csv: line 1, column 2 is empty: expected a number", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,2,\n", "m.csv"),
                       "m.csv: line 1, column 3 is empty: expected a number", attn::Error);
  for (const std::string text : {"1,0x10", "1,1e", "1,1.5.2", "1,1 2", "1,++1", "1,1,5"}) {
    CAPTURE(text);
    CHECK_THROWS_AS(attn::parse_csv(text + "\n2,3\n", "m.csv"), attn::Error);
  }
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,1,5\n2,3\n", "m.csv"),
                       "m.csv: line 2 has 2 fields, line 1 has 3: all rows must have the same "
                       "length",
                       attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,a very long field that goes on and on and on\n", "m.csv"),
                       "m.csv: line 1, column 2: 'a very long field that goes on and on an...' is "
                       "not a number",
                       attn::Error);
}

TEST_CASE("parse_csv: an empty file, and quotes that do not close") {
  for (const std::string text : {"", "\n\n", "# nothing\n", "  \r\n"}) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(attn::parse_csv(text, "m.csv"),
                         "m.csv has no values: a matrix needs at least one value", attn::Error);
  }
  CHECK_THROWS_WITH_AS(attn::parse_csv("\"abc,1\n", "m.csv"),
                       "m.csv: line 1 has a quoted field without its closing quote", attn::Error);
  CHECK_THROWS_WITH_AS(attn::parse_csv("\"a\"b,1\n", "m.csv"),
                       "m.csv: line 1, column 1 has text after its closing quote", attn::Error);
}

TEST_CASE("parse_csv refuses UTF-16, naming the line: it would be read as one field of bytes") {
  // "1,2\n" as UTF-16 with its byte order mark, little- and big-endian, and without one.
  CHECK_THROWS_WITH_AS(
      attn::parse_csv(std::string("\xFF\xFE"
                                  "1\0,\0"
                                  "2\0\n\0",
                                  10),
                      "m.csv"),
      "m.csv: line 1: the file starts with a UTF-16 byte order mark (FF FE): CSV files must be "
      "UTF-8 text",
      attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_csv(std::string("\xFE\xFF\0"
                                  "1\0,\0"
                                  "2\0\n",
                                  10),
                      "m.csv"),
      "m.csv: line 1: the file starts with a UTF-16 byte order mark (FE FF): CSV files must be "
      "UTF-8 text",
      attn::Error);
  CHECK_THROWS_WITH_AS(
      attn::parse_csv(std::string("1,2\n3,4\0\n", 9), "m.csv"),
      "m.csv: line 2 has a NUL byte (is the file UTF-16?): CSV files must be UTF-8 text",
      attn::Error);
  CHECK_THROWS_AS(attn::parse_csv(std::string("1\0,\0"
                                              "2\0",
                                              6),
                                  "m.csv"),
                  attn::Error);
}

TEST_CASE("parse_csv refuses a number beside a character that does not show as a row label") {
  // U+00A0, U+200B, a second byte order mark (the file's first is dropped), U+3000 and U+2060,
  // before or after the number.
  const std::pair<std::string, std::string> cases[] = {{"\u00a01", "00A0"},
                                                       {"\u200b-2.5", "200B"},
                                                       {"\ufeff\ufeff1e3", "FEFF"},
                                                       {"1\u3000", "3000"},
                                                       {"\u2060\u00a00x10", "2060"}};
  for (const auto& c : cases) {
    // Named copies, not structured bindings: clang 14 refuses a lambda (CAPTURE's) that captures
    // a binding.
    const std::string& field = c.first;
    const std::string& code = c.second;
    CAPTURE(code);
    try {
      (void)attn::parse_csv(field + ",2,3\n", "m.csv");
      FAIL("not refused");
    } catch (const attn::Error& e) {
      const std::string what = e.what();
      CHECK(what.starts_with("m.csv: line 1, column 1: '"));
      CHECK(what.ends_with("' is a number beside a character that does not show (U+" + code +
                           "), and would be taken for a row label: remove that character"));
    }
  }
  // A label beside such a character is a label.
  CHECK(attn::parse_csv("\u00a0x,2\n", "m.csv").row_labels == Names{"\u00a0x"});
}

TEST_CASE("parse_csv refuses a first column that only looks like labels: numbers in other syntax") {
  // Typeset text's minus sign (U+2212) and an input method's fullwidth digits, signs and point.
  for (const std::string label :
       {"0x1p3", "0x10", "-0X1.8P1", "1_000", "1 2", "1 000.5", "1'000", "\"1,5\"", "+1_0e3",
        "\"1,000,000\"", "0x_1", "\u22121.5", "\uff11\uff12", "\uff0d\uff11\uff0e\uff15", "\uff0b2",
        "\uff11\uff45\uff13", "\u22121_000"}) {
    CAPTURE(label);
    const std::string shown = label.front() == '"' ? label.substr(1, label.size() - 2) : label;
    CHECK_ERROR(attn::parse_csv("a,1\n" + label + ",2\n", "m.csv"),
                "m.csv: line 2, column 1: '" + shown +
                    "' looks like a number, but not one this reader knows, and would be taken "
                    "for a row label: write numbers like 8, -1.5 or 1e3 (ASCII digits and '-'; no "
                    "hex; no '_', spaces or commas between digits)");
  }
  // Labels that hold digits but are not numbers.
  for (const std::string label :
       {"2nd", "1.2.3", "x1", "1 apple", "0x", "0xg", "1_", "_1", "1e3 m", "1, 2 3", "1 e3", "A4",
        "\u2212", "a\u22121", "\uff11st", "\u2212x"}) {
    CAPTURE(label);
    CHECK(attn::parse_csv("a,1\n\"" + label + "\",2\n", "m.csv").row_labels == Names{"a", label});
  }
}

TEST_CASE("parse_csv names the ASCII number of a value in typeset or fullwidth digits") {
  CHECK_ERROR(attn::parse_csv("a,0.25\nb,\u22122\n", "m.csv"),
              "m.csv: line 2, column 2: '\u22122' is not a number as written: write it with ASCII "
              "digits and '-' (-2)");
  CHECK_ERROR(attn::parse_csv("1,\uff11\uff0e\uff15\n", "m.csv"),
              "m.csv: line 1, column 2: '\uff11\uff0e\uff15' is not a number as written: write it "
              "with ASCII digits and '-' (1.5)");
  CHECK_ERROR(attn::parse_csv("1,\u2212x\n", "m.csv"),
              "m.csv: line 1, column 2: '\u2212x' is not a number");
}

TEST_CASE("parse_csv refuses a row label that is not UTF-8, with its byte, and keeps controls") {
  CHECK_THROWS_WITH_AS(attn::parse_csv("Life,1\ncaf\xe9,2\n", "m.csv"),
                       "m.csv: line 2, column 1: the row label is not valid UTF-8 (byte 3): labels "
                       "must be UTF-8 text",
                       attn::Error);
  // Control characters are text: the renderers show them escaped.
  CHECK(attn::parse_csv("\x1b[2J,1\n\"a\rb\",2\n", "m.csv").row_labels == Names{"\x1b[2J", "a\rb"});
  // A field that is not a number is shown escaped in the message.
  CHECK_THROWS_WITH_AS(attn::parse_csv("1,\x1b]0;x\x07\n", "m.csv"),
                       "m.csv: line 1, column 2: '\\x1b]0;x\\x07' is not a number", attn::Error);
}

// ---- JSON ------------------------------------------------------------------------------------

TEST_CASE("parse_json_matrix: a matrix, one row, or values with labels") {
  const attn::LoadedMatrix m = attn::parse_json_matrix("[[1, 2.5], [3, -4e-1]]", "m.json");
  check_same(m.values, matrix(2, 2, {1, 2.5f, 3, -0.4f}));
  CHECK(m.row_labels.empty());
  check_same(attn::parse_json_matrix(" [1, 2, 3]\n", "m.json").values, matrix(1, 3, {1, 2, 3}));
  const attn::LoadedMatrix l = attn::parse_json_matrix(
      R"({"labels": ["Life", "is"], "values": [[1, 2], [3, 4]]})", "m.json");
  check_same(l.values, matrix(2, 2, {1, 2, 3, 4}));
  CHECK(l.row_labels == Names{"Life", "is"});
  const attn::LoadedMatrix v = attn::parse_json_matrix(R"({"values": [5, 6]})", "m.json");
  check_same(v.values, matrix(1, 2, {5, 6}));
  CHECK(v.row_labels.empty());
  // A flat array is one row, and known as a vector for messages ("[n]").
  CHECK(v.vector);
  CHECK(attn::parse_json_matrix("[1, 2, 3]", "m.json").vector);
  CHECK_FALSE(m.vector);
  CHECK_FALSE(attn::parse_json_matrix("[[1, 2, 3]]", "m.json").vector);
}

TEST_CASE("parse_json_matrix rounds each number from its text straight to float32") {
  check_same(
      attn::parse_json_matrix(
          "[0.1, 16777217, 3.4028235e38, 1e-45, -0.0, -5, 18446744073709551615, 1e-50]", "m.json")
          .values,
      matrix(1, 8,
             {0.1f, 16777216.0f, kMax, kTrueMin, -0.0f, -5.0f, 18446744073709551616.0f, 0.0f}));
  // Through a double this would be rounded twice, down to 1.
  check_same(attn::parse_json_matrix("[1.00000005960464477550]", "m.json").values,
             matrix(1, 1, {std::nextafter(1.0f, 2.0f)}));
}

TEST_CASE("parse_json_matrix refuses what is not a matrix of finite numbers, naming where") {
  auto parse = [](const std::string& text) { return attn::parse_json_matrix(text, "m.json"); };
  CHECK_THROWS_WITH_AS(parse("[[1, 2], [3]"),
                       "m.json is not valid JSON (byte 13): syntax error while parsing array - "
                       "unexpected end of input; expected ']'",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("[1, abc]"),
                       "m.json is not valid JSON (byte 5): syntax error while parsing value - "
                       "invalid literal; last read: '1, a'",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse(""),
                       "m.json is not valid JSON (byte 1): syntax error while parsing value - "
                       "unexpected end of input; expected '[', '{', or a literal",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("[1e400]"),
                       "m.json is not valid JSON (byte 6): number overflow parsing '1e400'",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("[[1, 2], [3]]"),
                       "m.json: row 2 has 1 value, row 1 has 2: all rows must have the same length",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse(R"([[1, "2"]])"),
                       "m.json: row 1, column 2 is a string: values must be numbers", attn::Error);
  CHECK_THROWS_WITH_AS(parse("[1, null]"),
                       "m.json: row 1, column 2 is null: values must be numbers", attn::Error);
  CHECK_THROWS_WITH_AS(parse("[[1], [true]]"),
                       "m.json: row 2, column 1 is a boolean: values must be numbers", attn::Error);
  CHECK_THROWS_WITH_AS(parse("[[[1, 2]], [[3, 4]]]"),
                       "m.json: row 1, column 1 is an array: values must be numbers", attn::Error);
  CHECK_THROWS_WITH_AS(parse("[1, [2]]"),
                       "m.json: row 1, column 2 is an array: values must be numbers", attn::Error);
  CHECK_THROWS_WITH_AS(parse("[[1], 2]"),
                       "m.json: row 2 is a number: rows must be arrays of numbers", attn::Error);
  for (const std::string empty : {"[]", "[[]]", "[[], []]", R"({"values": []})"}) {
    CAPTURE(empty);
    CHECK_THROWS_WITH_AS(parse(empty), "m.json has no values: a matrix needs at least one value",
                         attn::Error);
  }
  CHECK_THROWS_WITH_AS(parse("[[1, 1e39]]"),
                       "m.json: row 1, column 2 (1e+39) is too large for float32: values must be "
                       "finite",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("[-3.4028236e38]"),
                       "m.json: row 1, column 1 (-3.4028236e+38) is too large for float32: values "
                       "must be finite",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse("3"),
                       "m.json: the document is a number: allowed are [[...], ...], [...] and "
                       "{\"values\": [[...], ...], \"labels\": [...]}",
                       attn::Error);
}

TEST_CASE("parse_json_matrix: the object form's keys and labels") {
  auto parse = [](const std::string& text) { return attn::parse_json_matrix(text, "m.json"); };
  CHECK_THROWS_WITH_AS(parse(R"({"labels": ["a"]})"),
                       "m.json has no \"values\": give the matrix there", attn::Error);
  CHECK_THROWS_WITH_AS(parse(R"({"values": [[1]], "label": ["a"]})"),
                       "m.json: key \"label\" is not known: allowed are \"values\" and \"labels\"",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse(R"({"values": 1})"),
                       "m.json: \"values\" is a number: it must be an array of rows", attn::Error);
  CHECK_THROWS_WITH_AS(parse(R"({"values": [[1], [2]], "labels": "ab"})"),
                       "m.json: \"labels\" is a string: it must be an array of strings",
                       attn::Error);
  CHECK_THROWS_WITH_AS(parse(R"({"values": [[1], [2]], "labels": ["a"]})"),
                       "m.json has 1 labels for 2 rows: give one label per row", attn::Error);
  CHECK_THROWS_WITH_AS(parse(R"({"values": [[1], [2]], "labels": ["a", 2]})"),
                       "m.json: label 2 is a number: labels must be strings", attn::Error);
}

TEST_CASE("parse_json_matrix refuses a label that is not UTF-8, showing the byte escaped") {
  CHECK_THROWS_WITH_AS(
      attn::parse_json_matrix("{\"values\": [[1]], \"labels\": [\"caf\xe9\"]}", "m.json"),
      "m.json is not valid JSON (byte 35): syntax error while parsing value - "
      "invalid string: ill-formed UTF-8 byte; last read: '\"caf\\xe9\"'",
      attn::Error);
}

TEST_CASE("parse_json_matrix refuses a key given twice, naming its line") {
  auto parse = [](const std::string& text) { return attn::parse_json_matrix(text, "m.json"); };
  CHECK_THROWS_WITH_AS(
      parse("{\"values\": [[1, 2]],\n \"labels\": [\"a\"],\n \"values\": [[3, 4]]}"),
      "m.json: line 3: the key \"values\" appears twice in one object: each key "
      "may be given once",
      attn::Error);
  CHECK_THROWS_WITH_AS(parse(R"({"labels": ["a"], "values": [[1]], "labels": ["b"]})"),
                       "m.json: line 1: the key \"labels\" appears twice in one object: each key "
                       "may be given once",
                       attn::Error);
  // In any object, at any depth, even one that would be refused later.
  CHECK_THROWS_WITH_AS(parse("[{\"a\": 1,\n\n \"a\": 2}]"),
                       "m.json: line 3: the key \"a\" appears twice in one object: each key may be "
                       "given once",
                       attn::Error);
  // The same key in two objects is no duplicate.
  CHECK_THROWS_WITH_AS(parse(R"({"values": [[{"a": 1}, {"a": 2}]]})"),
                       "m.json: row 1, column 1 is an object: values must be numbers", attn::Error);
  // A key with a control character is shown escaped.
  CHECK_THROWS_WITH_AS(parse(R"({"\u001b[2J": 1, "\u001b[2J": 2})"),
                       "m.json: line 1: the key \"\\x1b[2J\" appears twice in one object: each key "
                       "may be given once",
                       attn::Error);
}

// ---- files -----------------------------------------------------------------------------------

TEST_CASE("load_matrix reads by the extension, in any case") {
  const TempDir dir;
  write_plain(dir / "m.NPY", attn::npy_bytes(nine_digits()));
  write_plain(dir / "m.csv", "a,1,2\nb,3,4\n");
  write_plain(dir / "m.Json", "[[1, 2]]");
  write_plain(dir / "m.txt", "1,2\n");
  write_plain(dir / "m", "1,2\n");
  check_same(attn::load_matrix(dir / "m.NPY").values, nine_digits());
  const attn::LoadedMatrix csv = attn::load_matrix(dir / "m.csv");
  check_same(csv.values, matrix(2, 2, {1, 2, 3, 4}));
  CHECK(csv.row_labels == Names{"a", "b"});
  check_same(attn::load_matrix(dir / "m.Json").values, matrix(1, 2, {1, 2}));
  CHECK_ERROR(attn::load_matrix(dir / "m.txt"),
              (dir / "m.txt").string() +
                  ": the extension '.txt' is not known: allowed are .npy, .csv and .json");
  CHECK_ERROR(attn::load_matrix(dir / "m"),
              (dir / "m").string() +
                  ": the extension (none) is not known: allowed are .npy, .csv and .json");
  // Messages name the path as given.
  write_plain(dir / "bad.csv", "1,x\n");
  CHECK_ERROR(attn::load_matrix(dir / "bad.csv"),
              (dir / "bad.csv").string() + ": line 1, column 2: 'x' is not a number");
  CHECK_ERROR(attn::load_matrix(dir / "missing.npy"),
              (dir / "missing.npy").string() + ": cannot read: No such file or directory");
}

TEST_CASE("read_file reads bytes as they are, and names the path and the reason it cannot") {
  const TempDir dir;
  const std::string bytes("a\0b\r\n\xff", 6);
  write_plain(dir / "f.bin", bytes);
  CHECK(attn::read_file(dir / "f.bin") == bytes);
  write_plain(dir / "empty", "");
  CHECK(attn::read_file(dir / "empty").empty());
  const std::string big(200000, 'x');
  write_plain(dir / "big", big);
  CHECK(attn::read_file(dir / "big") == big);

  CHECK_ERROR(attn::read_file(dir / "missing"),
              (dir / "missing").string() + ": cannot read: No such file or directory");
  CHECK_ERROR(attn::read_file(dir.path()), dir.path().string() + ": cannot read: Is a directory");
  CHECK_ERROR(attn::read_file(dir / "f.bin" / "x"),
              (dir / "f.bin" / "x").string() + ": cannot read: Not a directory");
  if (::geteuid() != 0) {  // root reads anything
    fs::permissions(dir / "f.bin", fs::perms::none);
    CHECK_ERROR(attn::read_file(dir / "f.bin"),
                (dir / "f.bin").string() + ": cannot read: Permission denied");
  }
}

TEST_CASE("write_file_atomic writes a new file, and leaves no temporary file") {
  const TempDir dir;
  const fs::path out = dir / "out.npy";
  const std::string bytes = attn::npy_bytes(nine_digits());
  attn::write_file_atomic(out, bytes, false);
  CHECK(attn::read_file(out) == bytes);
  CHECK(list(dir.path()) == Names{"out.npy"});
  // The mode is what any new file gets (0666 less the umask), not mkstemp's 0600.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
  // Empty content is content too.
  attn::write_file_atomic(dir / "empty", "", false);
  CHECK(attn::read_file(dir / "empty").empty());
}

TEST_CASE("write_file_atomic replaces a file only when told to") {
  const TempDir dir;
  const fs::path out = dir / "out.csv";
  write_plain(out, "old");
  CHECK_ERROR(attn::write_file_atomic(out, "new", false), out.string() + " exists: replace it");
  CHECK(attn::read_file(out) == "old");
  CHECK(list(dir.path()) == Names{"out.csv"});

  attn::write_file_atomic(out, "new", true);
  CHECK(attn::read_file(out) == "new");
  CHECK(list(dir.path()) == Names{"out.csv"});

  // A link to nowhere is a name in use too: it is not replaced.
  fs::create_symlink(dir / "nowhere", dir / "link");
  CHECK_ERROR(attn::write_file_atomic(dir / "link", "x", false),
              (dir / "link").string() + " exists: replace it");
  CHECK(fs::is_symlink(dir / "link"));
  CHECK(list(dir.path()) == Names{"link", "out.csv"});
}

TEST_CASE("write_file_atomic: a folder it cannot write to, and nothing left behind") {
  const TempDir dir;
  const fs::path missing = dir / "missing" / "out.npy";
  CHECK_ERROR(
      attn::write_file_atomic(missing, "x", false),
      missing.string() + ": cannot write: creating a temporary file: No such file or directory");
  write_plain(dir / "file", "");
  CHECK_ERROR(attn::write_file_atomic(dir / "file" / "out.npy", "x", true),
              (dir / "file" / "out.npy").string() +
                  ": cannot write: creating a temporary file: Not a directory");
  // A folder in the way of the target: the temporary file is written, then removed.
  fs::create_directory(dir / "sub");
  CHECK_ERROR(attn::write_file_atomic(dir / "sub", "x", true),
              (dir / "sub").string() + ": cannot write: renaming: Is a directory");
  CHECK_ERROR(attn::write_file_atomic(dir.path() / "", "x", true),
              (dir.path() / "").string() + ": cannot write: the path names a folder, not a file");
  CHECK(list(dir.path()) == Names{"file", "sub"});
  CHECK(list(dir / "sub").empty());

  if (::geteuid() != 0) {  // root writes anywhere
    const fs::path locked = dir / "locked";
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_ERROR(attn::write_file_atomic(locked / "out.npy", "x", false),
                (locked / "out.npy").string() +
                    ": cannot write: creating a temporary file: Permission denied");
    fs::permissions(locked, fs::perms::owner_all);
    CHECK(list(locked).empty());
  } else {
    MESSAGE("running as root: the read-only folder case is skipped");
  }
}

// ---- sentences -------------------------------------------------------------------------------

namespace {

// The read end of a pipe that holds `bytes` (less than a pipe's buffer) and is closed after them.
int pipe_holding(const std::string& bytes) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fds[1]);
  return fds[0];
}

std::string sentence_from_pipe(const std::string& bytes, std::uint64_t max_memory = 1 << 20) {
  const int fd = pipe_holding(bytes);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  return attn::read_sentence(fd, "standard input", max_memory);
}

}  // namespace

TEST_CASE("read_sentence drops a byte order mark and the final newlines, and keeps the rest") {
  CHECK(sentence_from_pipe("Life is short, eat dessert first\n") ==
        "Life is short, eat dessert first");
  CHECK(sentence_from_pipe("\xEF\xBB\xBFLife is short\r\n") == "Life is short");
  CHECK(sentence_from_pipe("a b\n\n\r\n") == "a b");
  CHECK(sentence_from_pipe("a\nb \t\n") == "a\nb \t");
  CHECK(sentence_from_pipe("a\xEF\xBB\xBF") == "a\xEF\xBB\xBF");              // only at the start
  CHECK(sentence_from_pipe("\xEF\xBB\xBF\xEF\xBB\xBFx") == "\xEF\xBB\xBFx");  // only one
  CHECK(sentence_from_pipe("") == "");
  CHECK(sentence_from_pipe("\xEF\xBB\xBF\n") == "");
  CHECK(sentence_from_pipe(std::string("a\0b\xff", 4)) == std::string("a\0b\xff", 4));
}

TEST_CASE("read_sentence refuses more bytes than the limit, while it reads") {
  CHECK(attn::sentence_byte_limit(1 << 20) == 1 << 20);
  CHECK(attn::sentence_byte_limit(std::uint64_t{4} << 30) == std::uint64_t{1} << 30);
  CHECK(attn::sentence_byte_limit(std::uint64_t{1} << 40) == attn::kMaxSentenceBytes);
  // The limit counts the bytes read, byte order mark and newlines included.
  CHECK(sentence_from_pipe("0123456789", 10) == "0123456789");
  CHECK(sentence_from_pipe("012345678\n", 10) == "012345678");
  CHECK_THROWS_WITH_AS(sentence_from_pipe("0123456789\n", 10),
                       "standard input: the sentence is longer than 10 bytes, the memory limit: "
                       "give a shorter sentence, or raise the limit",
                       attn::Error);

  // A stream that never ends is refused as soon as it passes the limit.
  const int zero = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  REQUIRE(zero >= 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(attn::read_sentence(zero, "/dev/zero", 1 << 20),
                       "/dev/zero: the sentence is longer than 1.0 MiB, the memory limit: give a "
                       "shorter sentence, or raise the limit",
                       attn::Error);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  ::close(zero);

  // A socket that a writer keeps filling: the reader stops, and the writer sees it gone.
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  std::thread writer([fd = fds[1]] {
    const std::string block(4096, 'a');
    while (::send(fd, block.data(), block.size(), MSG_NOSIGNAL) > 0) {
    }
    ::close(fd);
  });
  CHECK_THROWS_WITH_AS(attn::read_sentence(fds[0], "standard input", 100000),
                       "standard input: the sentence is longer than 97.7 KiB, the memory limit: "
                       "give a shorter sentence, or raise the limit",
                       attn::Error);
  ::close(fds[0]);
  writer.join();
}

TEST_CASE("read_sentence_file: a file, one larger than 1 GiB, and files it cannot read") {
  const TempDir dir;
  write_plain(dir / "s.txt", "\xEF\xBB\xBFLife is short\r\n");
  CHECK(attn::read_sentence_file(dir / "s.txt", 1 << 20) == "Life is short");
  CHECK_ERROR(attn::read_sentence_file(dir / "s.txt", 10),
              (dir / "s.txt").string() +
                  ": the sentence is longer than 10 bytes, the memory limit: give a shorter "
                  "sentence, or raise the limit");
  // Past 1 GiB, whatever the memory limit: a sparse file, refused by its size before it is read.
  const fs::path big = dir / "big.txt";
  write_plain(big, "");
  fs::resize_file(big, (std::uint64_t{1} << 30) + 1);
  CHECK_ERROR(attn::read_sentence_file(big, std::uint64_t{1} << 40),
              big.string() +
                  ": the sentence is longer than 1.0 GiB: a sentence may have at most 1.0 GiB, "
                  "whatever the memory limit");
  CHECK_ERROR(attn::read_sentence_file(dir / "missing.txt", 1 << 20),
              (dir / "missing.txt").string() + ": cannot read: No such file or directory");
  CHECK_ERROR(attn::read_sentence_file(dir.path(), 1 << 20),
              dir.path().string() + ": cannot read: Is a directory");
}

TEST_CASE("read_file refuses a file larger than 1 GiB before reading it") {
  const TempDir dir;
  const fs::path big = dir / "big.csv";
  write_plain(big, "");
  fs::resize_file(big, (std::uint64_t{1} << 30) + 1);
  CHECK_ERROR(attn::read_file(big),
              big.string() + " is larger than 1024 MiB: that is not an input of this tool");
}
