#pragma once
// JSON text for the few values config writes as JSON (a trial's [params], a
// program's command in the canonical text). By hand rather than with
// nlohmann/json: the sweep-file parser is also built alone for fuzzing
// (tests/fuzz), with only toml11 and fmt.

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace memsweep::config::detail {

// `text` as a JSON string, quoted. TOML text is valid UTF-8, so only the
// quote, the backslash and control characters need escaping.
inline std::string json_quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

}  // namespace memsweep::config::detail
