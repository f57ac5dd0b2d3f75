#pragma once

// Matrices in files: NumPy's .npy, CSV and JSON, read with checks that name what is wrong and
// where; files written atomically.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "attn/matrix.hpp"

namespace attn {

// A matrix read from a file, with the row labels the file gave, if any.
struct LoadedMatrix {
  Matrix values;                        // float32, row-major; a 1-D array is one row
  std::vector<std::string> row_labels;  // empty when the file has none
  bool vector = false;                  // the file held a 1-D array (shown as [n] in messages)
};

// NumPy's .npy format (version 1.0): dtype '<f4', C order, shape (rows, cols), or (cols,) when
// `vector` is set (requires m.rows() == 1). Byte for byte what numpy.save writes for the same
// array.
std::string npy_bytes(const Matrix& m, bool vector = false);
// The header numpy.save writes (format 1.0) for a C-order float32 array of this shape, of any
// number of dimensions: the magic, the version, the length and the padded dict.
std::string npy_header(const std::vector<std::int64_t>& shape);

// The parsers. `source` names the file in every message. Each throws Error, naming the file,
// what is wrong and where, for: data that ends early (truncated) or has bytes left over; a
// dtype other than '<f4' or '<f8' (float64 is rounded to float32); Fortran order; more than 2
// dimensions; an empty array; rows of different lengths; text that is not a number; and a value
// that is nan, infinite, or too large for float32 ("m.npy: row 2, column 3 is nan: values must
// be finite"; rows and columns 1-based). Every number is rounded once, from its text or its
// float64 value, to the nearest float32.
//
// .npy: numpy.save's format, versions 1.0, 2.0 and 3.0.
LoadedMatrix parse_npy(std::string_view bytes, const std::string& source);
// CSV: one row per line, values separated by commas, numbers as C/Python write them (no locale).
// Blank lines and lines starting with '#' are skipped; spaces around a field are dropped; a field
// in double quotes may hold commas ("" is a quote). When the first field of every row is not a
// number, that column holds the row labels; a label must be valid UTF-8 and must not look like a
// number in another syntax (0x1p3, 1_000, 1 000, "1,5"), which is refused rather than taken for a
// label. The text is UTF-8, with or without a byte order mark: a UTF-16 byte order mark or a NUL
// byte is refused. Messages name the line and column of the file.
LoadedMatrix parse_csv(std::string_view text, const std::string& source);
// JSON: [[...], ...] (a matrix), [...] (one row), or {"values": [[...], ...], "labels": [...]}
// ("labels" optional; one string per row). A key given twice in one object is refused with its
// line ("m.json: line 3: the key \"values\" appears twice in one object: ...").
// The text and the document it is parsed into are kept within `memory_limit` bytes (Error,
// Setting::kMaxMemory, beyond).
LoadedMatrix parse_json_matrix(std::string_view text, const std::string& source,
                               std::uint64_t memory_limit = ~std::uint64_t{0});

// Reads a matrix file by its extension: .npy, .csv or .json, within `memory_limit` bytes (the
// file, and a JSON file's document as it is parsed). Throws Error naming the path when the file
// cannot be read, its extension is none of these, or it needs more memory than that.
LoadedMatrix load_matrix(const std::filesystem::path& path,
                         std::uint64_t memory_limit = ~std::uint64_t{0});

// The whole content of a file. Throws Error naming the path if it cannot be read, or if it is
// larger than 1 GiB (a device such as /dev/zero never ends) or than `memory_limit` (Error,
// Setting::kMaxMemory); it stops reading at the smaller limit and one byte, and never holds more.
std::string read_file(const std::filesystem::path& path,
                      std::uint64_t memory_limit = ~std::uint64_t{0});

// read_file of standard input, named "standard input" in messages.
std::string read_standard_input(std::uint64_t memory_limit = ~std::uint64_t{0});

// ---- Sentences from a file or standard input ----

// The most bytes a sentence read from a file or standard input may have, whatever the memory
// limit: 1 GiB.
inline constexpr std::uint64_t kMaxSentenceBytes = std::uint64_t{1} << 30;

// The most bytes of a sentence under the memory limit `max_memory` (TraceConfig::max_memory):
// min(max_memory, kMaxSentenceBytes). The sentence alone may not take more than the whole run.
std::uint64_t sentence_byte_limit(std::uint64_t max_memory);

// Reads a sentence from the open file descriptor `fd` (0 for standard input) to its end, and
// returns it without a UTF-8 byte order mark at its start and without the newlines ('\n' and
// '\r') at its end (a file's last line ends in one, and an editor may add empty lines). The limit
// applies while reading: the text never takes more than sentence_byte_limit(max_memory) + 1
// bytes, so a device that never ends (/dev/zero) is refused at once. `source` names the input
// in messages ("standard input", the path). Does not close `fd`.
// Throws Error naming `source`: when the read fails ("standard input: cannot read: Is a
// directory"), and when there are more bytes than the limit: "standard input: the sentence is
// longer than 1.0 MiB, the memory limit: give a shorter sentence, or raise the limit with
// --max-memory"; above 1 GiB: "/dev/zero: the sentence is longer than 1.0 GiB: a sentence may
// have at most 1.0 GiB, whatever --max-memory says". The text is not checked otherwise: tokenize
// refuses invalid UTF-8 and control characters. The final newlines (\n, \r) and a leading UTF-8
// byte-order mark are dropped; with `exact`, only one final \n is, and every other byte is kept.
std::string read_sentence(int fd, const std::string& source, std::uint64_t max_memory,
                          bool exact = false);

// read_sentence of the file at `path`, named by its path. Throws Error as read_file does when it
// cannot be opened or is a folder ("data/none.txt: cannot read: No such file or directory").
std::string read_sentence_file(const std::filesystem::path& path, std::uint64_t max_memory,
                               bool exact = false);

// Writes `bytes` to `path` atomically: into a temporary file in the same folder, flushed, then
// renamed over `path`. Throws Error naming the path if it exists and `overwrite` is false, or if
// any step fails; on failure nothing is left behind and an existing file is unchanged.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, bool overwrite);

}  // namespace attn
