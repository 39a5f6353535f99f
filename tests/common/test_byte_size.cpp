#include "memsweep/byte_size.hpp"

#include <gtest/gtest.h>

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

TEST(FormatByteSize, PicksTheLargestWholeUnit) {
  EXPECT_EQ(format_byte_size(512), "512 B");
  EXPECT_EQ(format_byte_size(1536), "1.50 KiB");
  EXPECT_EQ(format_byte_size(3u * 1024 * 1024 * 1024), "3.00 GiB");
}

}  // namespace
}  // namespace memsweep
