// Time limits as users write them, and as the runner turns them into clock
// time: nothing so long that it wraps round (issue 28: `--trial-timeout
// 1e308` stopped every trial at once).

#include "common/duration_text.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

namespace memsweep {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, TheLongestLimitIsTenYears) {
  EXPECT_EQ(parse_duration("3650d"), 3650.0 * 86400.0);
  EXPECT_EQ(parse_duration("315360000"), 315360000.0);
  EXPECT_FALSE(is_too_long_duration("3650d"));
  for (const char* too_long :
       {"3650d1ms", "315360001", "1e308", "9999999999999999h", "106751991167d", "1e400", "1e400s", "1e308h30m"}) {
    EXPECT_FALSE(parse_duration(too_long)) << too_long;
    EXPECT_TRUE(is_too_long_duration(too_long)) << too_long;
  }
}

// What is not a duration at all is not "too long": its message says so.
TEST(ParseDuration, NonsenseIsNotTooLong) {
  for (const char* bad : {"", "0", "-1e400", "inf", "infs", "nan", "1h30", "lots", "1e-400"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
    EXPECT_FALSE(is_too_long_duration(bad)) << bad;
  }
}

TEST(LimitMilliseconds, SaturatesInsteadOfWrapping) {
  const milliseconds longest = limit_milliseconds(kMaxDurationSeconds);
  EXPECT_EQ(longest, milliseconds(315'360'000'000));
  EXPECT_EQ(limit_milliseconds(1e308), longest);
  EXPECT_EQ(limit_milliseconds(std::numeric_limits<double>::infinity()), longest);
  // Added to a steady clock's now, the longest limit is still in the future.
  const auto now = std::chrono::steady_clock::now();
  EXPECT_GT(now + longest, now);
}

TEST(LimitMilliseconds, APositiveLimitNeverBecomesZero) {
  EXPECT_EQ(limit_milliseconds(2.0), milliseconds(2000));
  EXPECT_EQ(limit_milliseconds(0.0001), milliseconds(1));
  EXPECT_EQ(limit_milliseconds(0.0015), milliseconds(2));  // rounded up: never before the limit
  EXPECT_EQ(limit_milliseconds(0.0), milliseconds(1));
  EXPECT_EQ(limit_milliseconds(-5.0), milliseconds(1));
  EXPECT_EQ(limit_milliseconds(std::nan("")), milliseconds(1));
}

TEST(FormatDuration, HugeDurationsDoNotWrapNegative) {
  EXPECT_EQ(format_duration(kMaxDurationSeconds), "87600h00m");
  EXPECT_EQ(format_duration(1e308).front(), '1');
  EXPECT_EQ(format_duration(1e308).find('-'), std::string::npos);
}

}  // namespace
}  // namespace memsweep
