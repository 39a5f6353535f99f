// Trial messages: kept whole, as valid UTF-8, in pieces for the results
// file's /messages table, and shortened only for a console line.

#include "memsweep/results.hpp"

#include <algorithm>
#include <utility>

namespace memsweep {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";     // U+2026

// The length of the valid UTF-8 sequence at the start of `text`, or 0 when
// it starts with an invalid one; `invalid_length` then gets the length of
// its maximal invalid subpart (at least 1), which one U+FFFD replaces.
std::size_t valid_sequence(std::string_view text, std::size_t& invalid_length) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  // The second byte's range depends on the lead byte: it excludes overlong
  // forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4).
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    invalid_length = 1;  // a continuation byte alone, C0, C1, F5..FF
    return 0;
  }
  for (std::size_t i = 1; i < length; ++i) {
    const bool fits = i < text.size() && byte(i) >= (i == 1 ? low : 0x80) && byte(i) <= (i == 1 ? high : 0xBF);
    if (!fits) {
      invalid_length = i;
      return 0;
    }
  }
  return length;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    std::size_t invalid_length = 0;
    const std::size_t length = valid_sequence(text, invalid_length);
    if (text.front() == '\0') {
      out.append(kReplacement);
      text.remove_prefix(1);
    } else if (length > 0) {
      out.append(text.substr(0, length));
      text.remove_prefix(length);
    } else {
      out.append(kReplacement);
      text.remove_prefix(invalid_length);
    }
  }
  return out;
}

std::string one_line_message(std::string_view message, std::size_t max_bytes) {
  std::string line = valid_utf8(message);
  // UTF-8 never uses bytes below 0x20 inside a multi-byte character.
  std::replace_if(
      line.begin(), line.end(), [](char c) { return c >= 0 && c < 0x20; }, ' ');
  if (line.size() <= max_bytes) return line;
  const std::size_t room = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  line.resize(results::detail::utf8_cut(line, room));
  return line + std::string(kEllipsis);
}

void set_message(TrialRecord& record, std::string_view message) {
  record.message = std::string(message);
  set_fixed(record.row.message, message);
}

std::vector<MessageRow> message_rows(const TrialRow& row, std::string_view message) {
  std::vector<MessageRow> rows;
  std::int32_t piece = 0;
  while (!message.empty()) {
    // A valid message's characters are at most 4 bytes, so a cut always
    // keeps some; the fallback only guards against an endless loop.
    std::size_t length = results::detail::utf8_cut(message, kMessagePieceChars);
    if (length == 0) length = std::min(message.size(), kMessagePieceChars);
    MessageRow& out = rows.emplace_back();
    out.trial_id = row.trial_id;
    out.attempt = row.attempt;
    out.run = row.run;
    out.piece = piece++;
    set_fixed(out.text, message.substr(0, length));
    message.remove_prefix(length);
  }
  return rows;
}

TrialMessages join_message_rows(std::span<const MessageRow> rows) {
  // Pieces are written in order, one message after another; sorted anyway,
  // so that the join does not depend on it.
  std::map<MessageKey, std::vector<std::pair<std::int32_t, std::string>>> pieces;
  for (const MessageRow& row : rows)
    pieces[MessageKey{get_fixed(row.trial_id), row.attempt, row.run}].emplace_back(row.piece, get_fixed(row.text));
  TrialMessages messages;
  for (auto& [key, parts] : pieces) {
    std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string& whole = messages[key];
    for (const auto& part : parts) whole += part.second;
  }
  return messages;
}

std::string whole_message(const TrialRow& row, const TrialMessages& messages) {
  const auto found = messages.find(MessageKey{get_fixed(row.trial_id), row.attempt, row.run});
  return found != messages.end() ? found->second : get_fixed(row.message);
}

}  // namespace memsweep
