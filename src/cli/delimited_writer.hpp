#pragma once
// Rows of delimited text for spreadsheets, R and pandas (`memsweep export`):
// CSV as RFC 4180 says, or TSV without quoting. Buffered, so that a table of
// millions of sample rows costs one write per megabyte, not one per cell.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace memsweep::cli {

enum class TextFormat { csv, tsv };
std::optional<TextFormat> parse_text_format(std::string_view name);

// A field as it is written:
// - csv: quoted when it holds a comma, a double quote, CR or LF, with its
//   double quotes doubled (RFC 4180); as it is otherwise.
// - tsv: never quoted (TSV has no quoting: readers are told quote = ""); a
//   tab, CR or LF becomes a space, so every row stays one line of its cells.
std::string delimited_field(std::string_view value, TextFormat format);

class DelimitedWriter {
 public:
  // `out` stays the caller's; `name` names it in an error ("stdout", a path).
  DelimitedWriter(std::FILE* out, std::string name, TextFormat format);

  void text(std::string_view value);
  void integer(std::int64_t value);
  void unsigned_integer(std::uint64_t value);
  // The shortest text that reads back as the same double; NaN, Inf and
  // -Inf as R and pandas both read them.
  void real(double value);
  void empty();  // an empty cell: NA in R and pandas
  void end_row();
  // Writes what is buffered; throws std::runtime_error naming the output
  // when the write fails (a full disk).
  void flush();

 private:
  void start_cell();

  std::FILE* out_;
  std::string name_;
  TextFormat format_;
  char separator_;
  bool row_started_ = false;
  fmt::memory_buffer buffer_;
};

}  // namespace memsweep::cli
