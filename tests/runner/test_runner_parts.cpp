// The runner's pure parts: which budget applies, when a trial may start,
// and how a failure becomes a one-line message.

#include "common/duration_text.hpp"
#include "runner/budget.hpp"
#include "runner/test_hooks.hpp"
#include "runner/trial_messages.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace memsweep::runner::detail {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

TEST(EffectiveBudget, IsTheSmallerOfTheTwoOrWhicheverIsSet) {
  EXPECT_EQ(effective_budget(std::nullopt, std::nullopt), std::nullopt);
  EXPECT_EQ(effective_budget(5 * kMiB, std::nullopt), 5 * kMiB);
  EXPECT_EQ(effective_budget(std::nullopt, 7 * kMiB), 7 * kMiB);
  EXPECT_EQ(effective_budget(5 * kMiB, 7 * kMiB), 5 * kMiB);
  EXPECT_EQ(effective_budget(9 * kMiB, 7 * kMiB), 7 * kMiB);
}

TEST(OverBudgetBeforeStart, AllowsExactlyWhatFits) {
  EXPECT_EQ(over_budget_before_start(60 * kMiB, 40 * kMiB, 100 * kMiB), std::nullopt);
  const auto message = over_budget_before_start(60 * kMiB + 1, 40 * kMiB, 100 * kMiB);
  ASSERT_TRUE(message);
  EXPECT_EQ(*message, "not run: predicted 60.00 MiB + baseline 40.00 MiB exceeds the budget 100.00 MiB");
}

TEST(OverBudgetBeforeStart, NeitherPartWrapsAround) {
  constexpr auto kHuge = std::numeric_limits<std::uint64_t>::max();
  EXPECT_TRUE(over_budget_before_start(kHuge, 40 * kMiB, 100 * kMiB));
  EXPECT_TRUE(over_budget_before_start(10 * kMiB, 200 * kMiB, 100 * kMiB)) << "the baseline alone passes it";
}

TEST(PassesBudget, OnlyAboveAndOnlyForAReading) {
  EXPECT_FALSE(passes_budget(100, 100));
  EXPECT_TRUE(passes_budget(101, 100));
  EXPECT_FALSE(passes_budget(-1, 0)) << "-1: no reading";
}

TEST(OverBudgetWhileRunning, NamesTheRssTheBudgetTheTimeAndTheEpoch) {
  EXPECT_EQ(over_budget_while_running(300 * kMiB, 256 * kMiB, when_text(1.234, 2, false, false)),
            "stopped: RSS 300.00 MiB passed the budget 256.00 MiB at 1.23 s in epoch 2");
  EXPECT_THAT(over_budget_while_running(300 * kMiB, 256 * kMiB, when_text(0.01, 0, false, false)),
              HasSubstr("before the first epoch"));
}

TEST(OneLine, JoinsLinesAndDropsTheirIndentation) {
  EXPECT_EQ(one_line("mnist not found. Looked in:\n  /a\n  /b\nExpected: x.\n"),
            "mnist not found. Looked in: /a /b Expected: x.");
  EXPECT_EQ(one_line("  already one line  "), "already one line");
  EXPECT_EQ(one_line("ends with a space \nthen more"), "ends with a space then more");
  EXPECT_EQ(one_line("\r\n"), "");
}

TEST(OutOfMemoryMessage, SaysWhatFailed) {
  EXPECT_EQ(out_of_memory_message("loading mnist"), "out of memory (std::bad_alloc) while loading mnist");
}

TEST(TestHook, AppliesToItsTrialOrToEvery) {
  EXPECT_FALSE(parse_test_hook("abc:hang", "xyz"));
  const auto hang = parse_test_hook("abc:hang", "abc");
  ASSERT_TRUE(hang);
  EXPECT_TRUE(hang->hang);
  EXPECT_EQ(hang->allocate_bytes, 0U);
  const auto burst = parse_test_hook("abc:hang;*:allocate=64MiB", "xyz");
  ASSERT_TRUE(burst);
  EXPECT_FALSE(burst->hang);
  EXPECT_EQ(burst->allocate_bytes, 64 * kMiB);
  EXPECT_FALSE(parse_test_hook("", "abc"));
}

TEST(TestHook, ATypoFailsRatherThanTestingNothing) {
  EXPECT_THAT([] { parse_test_hook("abc-hang", "abc"); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("expected TRIAL_ID:ACTION")));
  EXPECT_THAT([] { parse_test_hook("abc:sleep", "abc"); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("unknown action \"sleep\"")));
  EXPECT_THROW(parse_test_hook("abc:allocate=lots", "abc"), std::invalid_argument);
}

TEST(ParseDuration, SecondsOrUnitsLargestFirst) {
  EXPECT_EQ(parse_duration("90"), 90.0);
  EXPECT_EQ(parse_duration("2.5"), 2.5);
  EXPECT_EQ(parse_duration("500ms"), 0.5);
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("30m"), 1800.0);
  EXPECT_EQ(parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration("2d"), 172800.0);
  for (const char* bad : {"", "0", "-5", "1h30", "30m1h", "5 m", "1x", "m", "nan", "inf", "1e400"})
    EXPECT_FALSE(parse_duration(bad)) << bad;
}

}  // namespace
}  // namespace memsweep::runner::detail
