// Trial messages whole (schema 5): any length, valid UTF-8, cut only on
// character boundaries; the /trials column keeps a message's first bytes.
// The messages in a results file, written and read back by the store, are
// tests/store/test_stored_messages.cpp.

#include "memsweep/results.hpp"
#include "store/store_fixtures.hpp"

#include <gtest/gtest.h>

#include <string>

namespace memsweep {
namespace {

using testing::example_trial;

constexpr std::string_view kFffd = "\xEF\xBF\xBD";  // U+FFFD

// Whether `text` decodes as UTF-8: what valid_utf8 leaves unchanged.
bool is_valid_utf8(std::string_view text) { return valid_utf8(text) == text && text.find('\0') == text.npos; }

// ---- valid_utf8: a table of byte sequences and what they become ---------------

struct Utf8Case {
  const char* name;
  std::string in;
  std::string out;
};

class ValidUtf8 : public ::testing::TestWithParam<Utf8Case> {};

TEST_P(ValidUtf8, ReplacesEachMaximalInvalidSubpartByOneReplacementCharacter) {
  EXPECT_EQ(valid_utf8(GetParam().in), GetParam().out);
}

const std::string R(kFffd);
INSTANTIATE_TEST_SUITE_P(
    Sequences, ValidUtf8,
    ::testing::Values(Utf8Case{"Ascii", "plain text", "plain text"},
                      Utf8Case{"TwoThreeFourBytes", "é € 😀 \xF4\x8F\xBF\xBF", "é € 😀 \xF4\x8F\xBF\xBF"},
                      Utf8Case{"StrayContinuation", "a\x80z", "a" + R + "z"},
                      Utf8Case{"InvalidLeadBytes", "\xC0\xC1\xF5\xFF", R + R + R + R},
                      Utf8Case{"TruncatedThenAscii", "\xE2\x82(", R + "("},
                      Utf8Case{"TruncatedAtTheEnd", "ok\xF0\x9F\x98", "ok" + R},
                      Utf8Case{"Overlong", "\xE0\x80\xAF", R + R + R}, Utf8Case{"Surrogate", "\xED\xA0\x80", R + R + R},
                      Utf8Case{"PastU10FFFF", "\xF4\x90\x80\x80", R + R + R + R},
                      Utf8Case{"Nul", std::string("a\0b", 3), "a" + R + "b"}),
    [](const ::testing::TestParamInfo<Utf8Case>& case_info) { return std::string(case_info.param.name); });

// ---- pieces and the console form ------------------------------------------------

// 255 ASCII bytes, then "é" across byte 256, 254 more, then a 4-byte
// character across byte 512, then an invalid byte and a truncated sequence.
std::string long_message() { return std::string(255, 'a') + "é" + std::string(254, 'b') + "😀 tail \xFF and \xC3( end"; }
std::string long_message_stored() {
  return std::string(255, 'a') + "é" + std::string(254, 'b') + "😀 tail " + R + " and " + R + "( end";
}

TEST(MessageRows, PiecesAreCutOnCharactersAndJoinToTheWholeMessage) {
  const std::string message = long_message_stored();
  ASSERT_GT(message.size(), 2 * kMessagePieceChars);
  TrialRow row = example_trial(0);
  row.attempt = 2;
  row.run = 1;
  const std::vector<MessageRow> rows = message_rows(row, message);
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].piece, static_cast<std::int32_t>(i));
    EXPECT_EQ(get_fixed(rows[i].trial_id), testing::example_id(0));
    EXPECT_EQ(rows[i].attempt, 2);
    EXPECT_EQ(rows[i].run, 1);
    EXPECT_TRUE(is_valid_utf8(get_fixed(rows[i].text))) << "piece " << i;
  }
  EXPECT_EQ(get_fixed(rows[0].text), std::string(255, 'a')) << "é does not fit: the piece ends before it";
  EXPECT_EQ(get_fixed(rows[1].text), "é" + std::string(254, 'b'));
  // Stored in any order, joined in piece order.
  const std::vector<MessageRow> shuffled{rows[2], rows[0], rows[1]};
  const TrialMessages joined = join_message_rows(shuffled);
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined.begin()->second, message);
  EXPECT_EQ(whole_message(row, joined), message);
  EXPECT_TRUE(message_rows(row, "").empty());
}

TEST(MessageRows, ARowWithoutAStoredMessageFallsBackToItsColumn) {
  TrialRow row = example_trial(1);
  set_fixed(row.message, "short");
  EXPECT_EQ(whole_message(row, TrialMessages{}), "short");
  TrialRow other = row;
  other.attempt = row.attempt + 1;  // another attempt's message is not this one's
  const std::vector<MessageRow> others = message_rows(other, "other");
  EXPECT_EQ(whole_message(row, join_message_rows(others)), "short");
}

TEST(OneLineMessage, IsOneValidLineShortenedOnACharacter) {
  EXPECT_EQ(one_line_message("line one\nline two\r\n\tend", 100), "line one line two   end");
  EXPECT_EQ(one_line_message("bad \xFF", 100), "bad " + R);
  const std::string cut = one_line_message(long_message(), 258);
  EXPECT_LE(cut.size(), 258u);
  EXPECT_EQ(cut, std::string(255, 'a') + "…") << "é would not fit before the ellipsis";
  EXPECT_EQ(one_line_message("short", 5), "short");
}

TEST(TrialRecord, SetMessageKeepsItWholeAndTheRowsColumnCut) {
  TrialRecord record{example_trial(0), {}};
  set_message(record, long_message_stored());
  EXPECT_EQ(record.message, long_message_stored());
  EXPECT_EQ(get_fixed(record.row.message), std::string(255, 'a'));
}

}  // namespace
}  // namespace memsweep
