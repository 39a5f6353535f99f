#include "runner/trial_messages.hpp"

#include <fmt/format.h>

namespace memsweep::runner::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string one_line(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  bool pending_space = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      pending_space = true;
      while (i + 1 < text.size() && is_space(text[i + 1])) ++i;  // the next line's indentation
      continue;
    }
    if (pending_space && !line.empty() && !is_space(line.back())) line += ' ';
    pending_space = false;
    line += c;
  }
  while (!line.empty() && is_space(line.back())) line.pop_back();
  const std::size_t first = line.find_first_not_of(" \t");
  return first == std::string::npos ? std::string() : line.substr(first);
}

std::string when_text(double seconds, int epoch, bool evaluating, bool program) {
  if (epoch <= 0 && program) return fmt::format("at {:.2f} s{}", seconds, evaluating ? " (evaluating)" : "");
  if (epoch <= 0) return fmt::format("at {:.2f} s, before the first epoch", seconds);
  return fmt::format("at {:.2f} s in epoch {}{}", seconds, epoch, evaluating ? " (evaluating)" : "");
}

std::string out_of_memory_message(std::string_view what) {
  return "out of memory (std::bad_alloc) while " + std::string(what);
}

}  // namespace memsweep::runner::detail
