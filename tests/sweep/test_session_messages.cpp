// The session's messages (sweep/protocol.hpp): what rank 0 broadcasts is
// what every rank decodes, and a message that does not fit is a protocol
// error naming the message and the field.

#include "sweep/protocol.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

namespace memsweep::testing {
namespace {

using sweep::detail::Assignment;
using sweep::detail::decode_assignment;
using sweep::detail::decode_run_row_message;
using sweep::detail::decode_setup_message;
using sweep::detail::decode_step_outcome;
using sweep::detail::encode;
using sweep::detail::RunRowMessage;
using sweep::detail::SetupMessage;
using sweep::detail::StepOutcome;

const std::string kSameBuild = " (are all ranks running the same memsweep build?)";

std::string message_of_decoding(const std::function<void()>& decode) {
  try {
    decode();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "no error";
}

TEST(SessionMessages, AnOutcomeKeepsItsStatusAndItsWholeMessage) {
  const StepOutcome outcome{exit_status::kBadInput, "sweep.toml:3: bad\nsecond line, kept: not cut at newlines"};
  EXPECT_EQ(decode_step_outcome(encode(outcome)), outcome);
  EXPECT_TRUE(decode_step_outcome(encode(StepOutcome{})).ok());
}

TEST(SessionMessages, TheRunRowArrivesByteForByte) {
  RunRowMessage sent;
  sent.run.run = 4;
  sent.run.flush_interval = 0.25;
  sent.run.mem_budget = 1 << 30;
  set_fixed(sent.run.data_dirs, "/data/a:/data/b");
  const RunRowMessage got = decode_run_row_message(encode(sent));
  EXPECT_TRUE(got.outcome.ok());
  EXPECT_EQ(std::memcmp(&got.run, &sent.run, sizeof(RunRow)), 0);
}

TEST(SessionMessages, SetupKeepsTheCounterColumnsInOrderWithTheirSources) {
  SetupMessage sent;
  sent.run_index = 2;
  sent.counter_columns = {{"PAPI_L1_DCM", CounterSourceChoice::papi},
                          {"page-faults", CounterSourceChoice::kernel},
                          {"PAPI_TOT_INS", CounterSourceChoice::automatic}};
  const SetupMessage got = decode_setup_message(encode(sent));
  EXPECT_TRUE(got.outcome.ok());
  EXPECT_EQ(got.run_index, 2);
  ASSERT_EQ(got.counter_columns.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got.counter_columns[i].name, sent.counter_columns[i].name);
    EXPECT_EQ(got.counter_columns[i].source, sent.counter_columns[i].source);
  }
}

TEST(SessionMessages, AFailedSetupCarriesNoColumns) {
  SetupMessage sent;
  sent.outcome = {exit_status::kFailure, "results.h5: locked by another writer"};
  const SetupMessage got = decode_setup_message(encode(sent));
  EXPECT_EQ(got.outcome, sent.outcome);
  EXPECT_TRUE(got.counter_columns.empty());
}

// A search's probe crosses as the SearchPoint it is (issue 44: it was five
// integers of a raw struct, rebuilt on the worker).
TEST(SessionMessages, AnAssignmentCarriesItsProbeWhole) {
  const Assignment plain = decode_assignment(encode(Assignment{.index = 7, .attempt = 2}));
  EXPECT_EQ(plain.index, 7u);
  EXPECT_EQ(plain.attempt, 2);
  EXPECT_FALSE(plain.probe.has_value());
  const SearchPoint point{.search = 3, .probe = 4, .value = 96, .limit_bytes = 5'000'000'001, .full = false};
  const Assignment probe = decode_assignment(encode(Assignment{.index = 1, .attempt = 0, .probe = point}));
  ASSERT_TRUE(probe.probe.has_value());
  EXPECT_EQ(probe.probe->search, 3);
  EXPECT_EQ(probe.probe->probe, 4);
  EXPECT_EQ(probe.probe->value, 96);
  EXPECT_EQ(probe.probe->limit_bytes, 5'000'000'001u);
  EXPECT_FALSE(probe.probe->full);
}

TEST(SessionMessages, AnEmptyMessageEndsInsideItsFirstField) {
  EXPECT_EQ(message_of_decoding([] { decode_step_outcome(""); }),
            "sweep protocol: the final status message (0 bytes): ends inside its field status" + kSameBuild);
}

TEST(SessionMessages, ATruncatedSetupNamesTheFieldItEndsIn) {
  SetupMessage sent;
  sent.counter_columns = {{"PAPI_L1_DCM", CounterSourceChoice::papi}};
  std::string bytes = encode(sent);
  bytes.resize(bytes.size() - 2);
  EXPECT_EQ(message_of_decoding([&] { decode_setup_message(bytes); }),
            "sweep protocol: the setup message (" + std::to_string(bytes.size()) +
                " bytes): ends inside its field counter_columns.source" + kSameBuild);
}

TEST(SessionMessages, BytesAfterTheLastFieldAreAnError) {
  const std::string bytes = encode(StepOutcome{}) + "xyz";
  EXPECT_EQ(message_of_decoding([&] { decode_step_outcome(bytes); }),
            "sweep protocol: the final status message (" + std::to_string(bytes.size()) +
                " bytes): 3 bytes left over after its last field message" + kSameBuild);
}

TEST(SessionMessages, ARunRowOfAnotherSizeIsAnError) {
  std::string bytes = encode(RunRowMessage{});
  bytes.pop_back();
  EXPECT_EQ(message_of_decoding([&] { decode_run_row_message(bytes); }),
            "sweep protocol: the run row message (" + std::to_string(bytes.size()) +
                " bytes): ends inside its field run" + kSameBuild);
}

TEST(SessionMessages, AnUnknownCounterSourceIsAnError) {
  SetupMessage sent;
  sent.counter_columns = {{"PAPI_L1_DCM", CounterSourceChoice::papi}};
  std::string bytes = encode(sent);
  const std::int32_t unknown = 9;  // the source is the message's last field, as its enum's value
  std::memcpy(bytes.data() + bytes.size() - sizeof(unknown), &unknown, sizeof(unknown));
  EXPECT_EQ(message_of_decoding([&] { decode_setup_message(bytes); }),
            "sweep protocol: the setup message (" + std::to_string(bytes.size()) +
                " bytes): unknown value 9 in its field counter_columns.source" + kSameBuild);
}

TEST(SessionMessages, ACountOfColumnsPastTheMessageIsAnErrorNotAnAllocation) {
  SetupMessage sent;
  std::string bytes = encode(sent);
  const std::uint64_t huge = std::uint64_t{1} << 60;
  std::memcpy(bytes.data() + bytes.size() - sizeof(huge), &huge, sizeof(huge));
  EXPECT_EQ(message_of_decoding([&] { decode_setup_message(bytes); }),
            "sweep protocol: the setup message (" + std::to_string(bytes.size()) +
                " bytes): its field counter_columns counts " + std::to_string(huge) +
                " items, more than the 0 bytes left hold" + kSameBuild);
}

}  // namespace
}  // namespace memsweep::testing
