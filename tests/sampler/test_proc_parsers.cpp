// The /proc parsers on captured text: real layouts, and broken ones.

#include "sampler/proc_parsers.hpp"

#include <gtest/gtest.h>

namespace memsweep::sampler::detail {
namespace {

constexpr std::int64_t kKiB = 1024;

TEST(ParseStatm, ReadsSizeResidentShared) {
  const auto pages = parse_statm("765 445 417 5 0 123 0\n");
  ASSERT_TRUE(pages.has_value());
  EXPECT_EQ(pages->size, 765);
  EXPECT_EQ(pages->resident, 445);
  EXPECT_EQ(pages->shared, 417);
  const ProcessMemory memory = process_memory_from_statm(*pages, 4096);
  EXPECT_EQ(memory.rss_bytes, 445 * 4096);
  EXPECT_EQ(memory.anon_rss_bytes, (445 - 417) * 4096);
}

class ParseStatmRejects : public ::testing::TestWithParam<const char*> {};
TEST_P(ParseStatmRejects, Garbage) { EXPECT_FALSE(parse_statm(GetParam()).has_value()); }
INSTANTIATE_TEST_SUITE_P(Broken, ParseStatmRejects,
                         ::testing::Values("", "12", "12 34", "a b c", "10 5 6 1 0 1 0" /* shared > resident */,
                                           "-1 2 1 0 0 0 0"));

constexpr const char* kStatus =
    "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nVmPeak:\t    8564 kB\nVmSize:\t    8564 kB\n"
    "VmLck:\t       0 kB\nVmPin:\t       0 kB\nVmHWM:\t    2144 kB\nVmRSS:\t    2100 kB\n"
    "RssAnon:\t     156 kB\nRssFile:\t    1944 kB\nRssShmem:\t       0 kB\nVmData:\t     360 kB\n";

TEST(ParseStatus, ReadsTheMemoryLinesInBytes) {
  const auto status = parse_status(kStatus);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->peak_rss_bytes, 2144 * kKiB);
  EXPECT_EQ(status->rss_bytes, 2100 * kKiB);
  EXPECT_EQ(status->anon_rss_bytes, 156 * kKiB);
  EXPECT_EQ(status->file_rss_bytes, 1944 * kKiB);
  EXPECT_EQ(status->shmem_rss_bytes, 0);
}

TEST(ParseStatus, KernelThreadWithoutMemoryLinesIsEmpty) {
  EXPECT_FALSE(parse_status("Name:\tkthreadd\nState:\tS (sleeping)\n").has_value());
}

constexpr const char* kMeminfo =
    "MemTotal:       24684096 kB\nMemFree:        23446088 kB\nMemAvailable:   24244272 kB\n"
    "Buffers:            6120 kB\nCached:           954088 kB\nSwapCached:            7 kB\n"
    "Active:           460556 kB\nInactive:         496332 kB\nActive(anon):       1520 kB\n";

TEST(ParseMeminfo, ReadsFieldsAndAppliesThePapersFormula) {
  const auto memory = parse_meminfo(kMeminfo);
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->total_bytes, 24684096 * kKiB);
  EXPECT_EQ(memory->free_bytes, 23446088 * kKiB);
  EXPECT_EQ(memory->available_bytes, 24244272 * kKiB);
  EXPECT_EQ(memory->buffers_bytes, 6120 * kKiB);
  EXPECT_EQ(memory->cached_bytes, 954088 * kKiB);  // not SwapCached
  EXPECT_EQ(memory->active_bytes, 460556 * kKiB);  // not Active(anon)
  EXPECT_EQ(memory->used_bytes(), (24684096 - (23446088 + 6120 + 954088)) * kKiB);
}

TEST(ParseMeminfo, OldKernelWithoutMemAvailableStillParses) {
  const auto memory = parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 20 kB\n");
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->available_bytes, -1);
  EXPECT_EQ(memory->active_bytes, -1);
  EXPECT_EQ(memory->used_bytes(), 870 * kKiB);
}

TEST(ParseMeminfo, MissingFormulaFieldIsEmpty) {
  EXPECT_FALSE(parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nSwapCached: 20 kB\nBuffers: 1 kB\n").has_value());
  EXPECT_FALSE(parse_meminfo("").has_value());
}

TEST(SystemMemory, UsedIsUnknownWhenAFieldIs) {
  SystemMemory memory{100, -1, 1, 1, 1, 1};
  EXPECT_EQ(memory.used_bytes(), -1);
}

constexpr const char* kSmapsRollup =
    "562d08d44000-7ffe03b3d000 ---p 00000000 00:00 0                          [rollup]\n"
    "Rss:                1736 kB\nPss:                 514 kB\nPss_Dirty:           116 kB\n"
    "Pss_Anon:            116 kB\nPss_File:            398 kB\nShared_Clean:       1564 kB\n";

TEST(ParseSmapsRollup, ReadsPssNotItsBreakdown) {
  const auto rollup = parse_smaps_rollup(kSmapsRollup);
  ASSERT_TRUE(rollup.has_value());
  EXPECT_EQ(rollup->rss_bytes, 1736 * kKiB);
  EXPECT_EQ(rollup->pss_bytes, 514 * kKiB);
  EXPECT_EQ(rollup->pss_anon_bytes, 116 * kKiB);
}

TEST(ParseSmapsRollup, WithoutPssIsEmpty) {
  EXPECT_FALSE(parse_smaps_rollup("Rss: 10 kB\nPss_Anon: 1 kB\n").has_value());
}

TEST(FindKibField, KeyMustStartALineAndEndAtTheColon) {
  EXPECT_EQ(find_kib_field("XActive: 5 kB\nActive: 7 kB\n", "Active"), 7 * kKiB);
  EXPECT_EQ(find_kib_field("Active(file): 5 kB\n", "Active"), -1);
  EXPECT_EQ(find_kib_field("HugePages_Total:       3\n", "HugePages_Total"), 3);
  EXPECT_EQ(find_kib_field("Cached: lots\n", "Cached"), -1);
}

}  // namespace
}  // namespace memsweep::sampler::detail
