#include "config/nesting.hpp"

#include "memsweep/config.hpp"

#include <fmt/format.h>

#include <climits>
#include <vector>

namespace memsweep::config::detail {
namespace {

// An array or inline table not yet closed.
struct Open {
  char bracket;     // '[' or '{'
  int depth_out{};  // the depth just outside it
};

// One pass over the text. Outside strings and comments, every `[` and `{`
// in valid TOML opens an array or an inline table, except the `[` or `[[`
// that begins a top-level line (a table header); dots count only in keys.
class NestingScanner {
 public:
  NestingScanner(std::string_view text, int limit) : text_(text), limit_(limit) {}

  std::optional<NestingTooDeep> scan() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        end_line();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
        continue;
      }
      if (c == '#') {
        skip_comment();
        continue;
      }
      const bool first_on_line = line_start_;
      line_start_ = false;
      if (c == '"' || c == '\'') {
        skip_string();
        continue;
      }
      if (c == '[' && first_on_line && open_.empty()) {
        read_header();
        if (depth_ > limit_) return NestingTooDeep{line_, depth_};
        continue;
      }
      if (c == '0' && !in_key_ && starts_binary_integer()) {
        read_binary_integer();
        continue;
      }
      ++pos_;
      switch (c) {
        case '[':
        case '{':
          open_.push_back({c, depth_});
          if (++depth_ > limit_) return NestingTooDeep{line_, depth_};
          in_key_ = c == '{';
          break;
        case ']':
        case '}':
          // More closing than opening is toml11's error to report.
          if (!open_.empty()) {
            depth_ = open_.back().depth_out;
            open_.pop_back();
          }
          in_key_ = false;
          break;
        case ',':
          if (!open_.empty()) {
            depth_ = open_.back().depth_out + 1;
            in_key_ = open_.back().bracket == '{';
          }
          break;
        case '.':
          // `a.b.c = 1` makes tables a and b; in a value, a dot is a
          // number's (1.5, a time's fraction).
          if (in_key_ && ++depth_ > limit_) return NestingTooDeep{line_, depth_};
          break;
        case '=': in_key_ = false; break;
        default: break;
      }
    }
    return std::nullopt;
  }

  const std::optional<LongBinaryInteger>& long_binary() const { return long_binary_; }

 private:
  // `0b` at the start of a value's token (not inside another word).
  bool starts_binary_integer() const {
    if (pos_ + 1 >= text_.size() || text_[pos_ + 1] != 'b') return false;
    if (pos_ == 0) return true;
    const char before = text_[pos_ - 1];
    const bool in_word = (before >= '0' && before <= '9') || (before >= 'a' && before <= 'z') ||
                         (before >= 'A' && before <= 'Z') || before == '_' || before == '.';
    return !in_word;
  }

  void read_binary_integer() {
    const std::size_t start = pos_;
    pos_ += 2;
    std::size_t digits = 0;
    while (pos_ < text_.size() && (text_[pos_] == '0' || text_[pos_] == '1' || text_[pos_] == '_')) {
      if (text_[pos_] != '_') ++digits;
      ++pos_;
    }
    if (digits > kMaxBinaryDigits && !long_binary_)
      long_binary_ = LongBinaryInteger{line_, std::string(text_.substr(start, pos_ - start))};
  }

  // A new line: at the top level it starts a key (or a header) in the
  // table of the last header. Inside an array it is only whitespace.
  void end_line() {
    ++pos_;
    ++line_;
    if (open_.empty()) {
      depth_ = table_depth_;
      in_key_ = true;
      line_start_ = true;
    }
  }

  void skip_comment() {
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
  }

  // From an opening quote to just past the closing one. A single-line
  // string left open ends at the line's end (toml11 stops there with an
  // error); a multi-line one left open runs to the end of the text.
  void skip_string() {
    const char quote = text_[pos_];
    const bool escapes = quote == '"';
    if (text_.substr(pos_, 3) == std::string_view(quote == '"' ? "\"\"\"" : "'''")) {
      pos_ += 3;
      while (pos_ < text_.size()) {
        const char c = text_[pos_];
        if (c == '\n') {
          ++line_;
          ++pos_;
        } else if (escapes && c == '\\') {
          ++pos_;  // the escaped character is skipped below, unless a line ends
          if (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        } else if (c == quote) {
          // Three closes; up to two more before them are the string's own
          // (`"""a""""` is `a"`).
          std::size_t run = 0;
          while (pos_ < text_.size() && text_[pos_] == quote) {
            ++pos_;
            ++run;
          }
          if (run >= 3) return;
        } else {
          ++pos_;
        }
      }
      return;
    }
    ++pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') return;
      ++pos_;
      if (c == quote) return;
      if (escapes && c == '\\' && pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    }
  }

  // `[a.b]` is 2 deep, `[[a.b]]` 3 (the array of tables, then its table).
  // Reads up to the closing bracket and leaves it to the caller.
  void read_header() {
    ++pos_;
    int depth = 1;
    if (pos_ < text_.size() && text_[pos_] == '[') {
      ++pos_;
      ++depth;
    }
    while (pos_ < text_.size() && text_[pos_] != ']' && text_[pos_] != '\n') {
      const char c = text_[pos_];
      if (c == '"' || c == '\'') {
        skip_string();
        continue;
      }
      if (c == '.') ++depth;
      ++pos_;
    }
    table_depth_ = depth;
    depth_ = depth;
    in_key_ = false;
  }

  std::string_view text_;
  int limit_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<Open> open_;                        // never more than limit_ + 1: the scan stops there
  int table_depth_ = 0;                           // the last header's depth
  int depth_ = 0;                                 // tables and arrays around the current position
  bool in_key_ = true;                            // before a key's `=`, where dots nest tables
  bool line_start_ = true;                        // only whitespace so far on this top-level line
  std::optional<LongBinaryInteger> long_binary_;  // the first, if any
};

}  // namespace

std::optional<NestingTooDeep> find_nesting_deeper_than(std::string_view text, int limit) {
  return NestingScanner(text, limit).scan();
}

std::optional<LongBinaryInteger> find_long_binary_integer(std::string_view text) {
  NestingScanner scanner(text, INT_MAX);
  scanner.scan();
  return scanner.long_binary();
}

void reject_long_binary_integers(std::string_view text, const std::string& source_name) {
  if (const auto binary = find_long_binary_integer(text))
    throw ConfigError(source_name, binary->line, "",
                      fmt::format("{} has more than {} binary digits, which the TOML reader (toml11 3.7) cannot read "
                                  "without overflowing, whatever the value; write it in decimal or hexadecimal",
                                  binary->written, kMaxBinaryDigits));
}

void reject_deep_nesting(std::string_view text, const std::string& source_name) {
  if (const auto deep = find_nesting_deeper_than(text))
    throw ConfigError(source_name, deep->line, "",
                      fmt::format("nested deeper than {} (tables, arrays and inline tables inside one another; "
                                  "a sweep file needs about 4)",
                                  kMaxTomlNesting));
}

}  // namespace memsweep::config::detail
