#include "memsweep/byte_size.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace memsweep {
namespace {

TEST(ParseByteSize, UnitsBinaryAndDecimal) {
  EXPECT_EQ(parse_byte_size("1048576"), 1048576u);
  EXPECT_EQ(parse_byte_size("100B"), 100u);
  EXPECT_EQ(parse_byte_size("2KiB"), 2048u);
  EXPECT_EQ(parse_byte_size("512MiB"), 536870912u);
  EXPECT_EQ(parse_byte_size("2GiB"), 2147483648u);
  EXPECT_EQ(parse_byte_size("1.5 gib"), 1610612736u);
  EXPECT_EQ(parse_byte_size("1TiB"), 1099511627776u);
  EXPECT_EQ(parse_byte_size("3kB"), 3000u);
  EXPECT_EQ(parse_byte_size("2GB"), 2000000000u);
}

TEST(ParseByteSize, RejectsNonsense) {
  for (const char* bad : {"", "GiB", "lots", "2 parsecs", "-1GiB", "0", "0.1B", "1e30TB", "2GiBs"})
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
}

// 1 EiB is the most: every size memsweep holds is an int64 downstream
// (2^63 bytes became a negative budget, that is none).
TEST(ParseByteSize, TheLargestSizeIsOneExbibyte) {
  EXPECT_EQ(parse_byte_size("1048576TiB"), std::uint64_t{1} << 60);
  EXPECT_EQ(parse_byte_size("1152921504606846976"), std::uint64_t{1} << 60);
  EXPECT_FALSE(is_too_large_byte_size("1048576TiB"));
  for (const char* too_large :
       {"1048577TiB", "1152921504606846977", "9223372036854775808", "9999999TiB", "1e30TB", "1e400", "1e400 GiB"}) {
    EXPECT_FALSE(parse_byte_size(too_large).has_value()) << too_large;
    EXPECT_TRUE(is_too_large_byte_size(too_large)) << too_large;
  }
  for (const char* nonsense : {"", "lots", "inf", "nan", "-1e400", "1e-400", "2 parsecs"})
    EXPECT_FALSE(is_too_large_byte_size(nonsense)) << nonsense;
}

TEST(FormatByteSize, PicksTheLargestWholeUnit) {
  EXPECT_EQ(format_byte_size(512), "512 B");
  EXPECT_EQ(format_byte_size(1536), "1.50 KiB");
  EXPECT_EQ(format_byte_size(3u * 1024 * 1024 * 1024), "3.00 GiB");
}

}  // namespace
}  // namespace memsweep
