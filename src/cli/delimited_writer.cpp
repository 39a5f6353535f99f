#include "cli/delimited_writer.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace memsweep::cli {
namespace {

// Buffered text goes out once it passes this: large enough that writes are
// few, small enough not to matter beside the rows read from the file.
constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

bool needs_csv_quotes(std::string_view value) { return value.find_first_of(",\"\r\n") != std::string_view::npos; }

void append(fmt::memory_buffer& buffer, std::string_view text) {
  buffer.append(text.data(), text.data() + text.size());
}

void append_field(fmt::memory_buffer& buffer, std::string_view value, TextFormat format) {
  if (format == TextFormat::tsv) {
    for (const char c : value) buffer.push_back(c == '\t' || c == '\r' || c == '\n' ? ' ' : c);
    return;
  }
  if (!needs_csv_quotes(value)) {
    append(buffer, value);
    return;
  }
  buffer.push_back('"');
  for (const char c : value) {
    if (c == '"') buffer.push_back('"');
    buffer.push_back(c);
  }
  buffer.push_back('"');
}

}  // namespace

std::optional<TextFormat> parse_text_format(std::string_view name) {
  if (name == "csv") return TextFormat::csv;
  if (name == "tsv") return TextFormat::tsv;
  return std::nullopt;
}

std::string delimited_field(std::string_view value, TextFormat format) {
  fmt::memory_buffer buffer;
  append_field(buffer, value, format);
  return fmt::to_string(buffer);
}

DelimitedWriter::DelimitedWriter(std::FILE* out, std::string name, TextFormat format)
    : out_(out), name_(std::move(name)), format_(format), separator_(format == TextFormat::csv ? ',' : '\t') {}

void DelimitedWriter::start_cell() {
  if (row_started_) buffer_.push_back(separator_);
  row_started_ = true;
}

void DelimitedWriter::text(std::string_view value) {
  start_cell();
  append_field(buffer_, value, format_);
}

void DelimitedWriter::integer(std::int64_t value) {
  start_cell();
  fmt::format_to(std::back_inserter(buffer_), "{}", value);
}

void DelimitedWriter::unsigned_integer(std::uint64_t value) {
  start_cell();
  fmt::format_to(std::back_inserter(buffer_), "{}", value);
}

void DelimitedWriter::real(double value) {
  start_cell();
  // fmt's "nan" and "inf" are not numbers to R's read.csv (the column would
  // turn into text); "NaN", "Inf" and "-Inf" are, and pandas reads them too.
  if (std::isnan(value))
    append(buffer_, "NaN");
  else if (std::isinf(value))
    append(buffer_, value > 0 ? "Inf" : "-Inf");
  else
    fmt::format_to(std::back_inserter(buffer_), "{}", value);  // shortest round-trip
}

void DelimitedWriter::empty() { start_cell(); }

void DelimitedWriter::end_row() {
  // LF only: RFC 4180 says CRLF, but every reader takes LF, and LF is what
  // R, pandas and Unix tools write themselves.
  buffer_.push_back('\n');
  row_started_ = false;
  if (buffer_.size() >= kFlushBytes) flush();
}

void DelimitedWriter::flush() {
  if (buffer_.size() > 0 && std::fwrite(buffer_.data(), 1, buffer_.size(), out_) != buffer_.size())
    throw std::runtime_error(fmt::format("cannot write {}: {}", name_, std::strerror(errno)));
  buffer_.clear();
  if (std::fflush(out_) != 0) throw std::runtime_error(fmt::format("cannot write {}: {}", name_, std::strerror(errno)));
}

}  // namespace memsweep::cli
