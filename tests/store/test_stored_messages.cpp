// Trial messages whole (schema 5) in a results file: written by the store
// in /messages, any length, as valid UTF-8, and read back whole; the
// /trials column keeps a message's first bytes. The messages themselves
// (valid_utf8, the pieces) are tests/results/test_messages.cpp.

#include "memsweep/store.hpp"
#include "store/store_fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>

namespace memsweep {
namespace {

using testing::example_header;
using testing::example_trial;

const std::string R("\xEF\xBF\xBD");  // U+FFFD

// Whether `text` decodes as UTF-8: what valid_utf8 leaves unchanged.
bool is_valid_utf8(std::string_view text) { return valid_utf8(text) == text && text.find('\0') == text.npos; }

// 255 ASCII bytes, then "é" across byte 256, 254 more, then a 4-byte
// character across byte 512, then an invalid byte and a truncated sequence
// (as tests/results/test_messages.cpp's).
std::string long_message() { return std::string(255, 'a') + "é" + std::string(254, 'b') + "😀 tail \xFF and \xC3( end"; }
std::string long_message_stored() {
  return std::string(255, 'a') + "é" + std::string(254, 'b') + "😀 tail " + R + " and " + R + "( end";
}

class StoredMessages : public ::testing::TestWithParam<bool> {
 protected:
  StoreOptions options() const { return StoreOptions{GetParam()}; }
  testing::TempDir dir_;
};

TEST_P(StoredMessages, ALongMessageRoundTripsWholeAsValidUtf8) {
  const auto path = dir_.path() / "results.h5";
  TrialRow failed = example_trial(0, "failed");
  TrialRow quiet = example_trial(1);
  TrialRow short_one = example_trial(2, "diverged");
  {
    ResultStore store = ResultStore::create(path, example_header(), false, options());
    store.append_trial(failed, long_message());
    store.append_trial(quiet, "");
    store.append_trial(short_one, "loss is nan");
    store.close();
  }
  const ResultReader reader(path);
  const std::vector<TrialRow> trials = reader.trials();
  ASSERT_EQ(trials.size(), 3u);
  const TrialMessages messages = reader.messages();
  EXPECT_EQ(messages.size(), 2u) << "no /messages rows for an empty message";
  EXPECT_EQ(whole_message(trials[0], messages), long_message_stored());
  EXPECT_TRUE(is_valid_utf8(whole_message(trials[0], messages)));
  // The row's column: the first bytes, on a character boundary.
  EXPECT_EQ(get_fixed(trials[0].message), std::string(255, 'a'));
  EXPECT_EQ(whole_message(trials[1], messages), "");
  EXPECT_EQ(get_fixed(trials[1].message), "") << "the column follows the message given, not the row's old one";
  EXPECT_EQ(whole_message(trials[2], messages), "loss is nan");
  EXPECT_EQ(get_fixed(trials[2].message), "loss is nan");
}

TEST_P(StoredMessages, AResumedFileAddsItsMessages) {
  const auto path = dir_.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, options());
    store.append_trial(example_trial(0, "failed"), "first run: " + long_message());
    store.close();
  }
  EXPECT_EQ(ResultReader(path).messages().size(), 1u);
  {
    ResultStore store = ResultStore::open_for_resume(path, testing::example_run("memsweep run --resume"), options());
    TrialRow again = example_trial(0, "failed");
    again.attempt = 1;
    again.run = store.run_index();
    store.append_trial(again, "second run: " + long_message());
    store.close();
  }
  const ResultReader reader(path);
  const std::vector<TrialRow> trials = reader.trials();
  ASSERT_EQ(trials.size(), 2u);
  const TrialMessages messages = reader.messages();
  EXPECT_EQ(whole_message(trials[0], messages), "first run: " + long_message_stored());
  EXPECT_EQ(whole_message(trials[1], messages), "second run: " + long_message_stored());
}

INSTANTIATE_TEST_SUITE_P(Swmr, StoredMessages, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& case_info) {
  return case_info.param ? "Swmr" : "NoSwmr";
});

}  // namespace
}  // namespace memsweep
