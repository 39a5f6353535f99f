// `memsweep summary` shows each host's node memory where the trials ran on
// several hosts (a multi-node sweep), and nothing of the kind on one.

#include "memsweep/summary_text.hpp"
#include "store/store_fixtures.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TrialRow on_host(int index, const std::string& host, double used_mib, double peak_mib, std::string_view status = "ok") {
  TrialRow row = example_trial(index, status);
  set_fixed(row.host, host);
  row.sys_used_mean = used_mib * 1024 * 1024;
  row.rss_peak = static_cast<std::int64_t>(peak_mib * 1024 * 1024);
  return row;
}

// The table's line for `host`, its cells split on spaces.
std::vector<std::string> host_line(const std::string& out, const std::string& host) {
  std::istringstream lines(out.substr(out.find("nodes (")));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string word; words >> word;) cells.push_back(word);
    if (!cells.empty() && cells.front() == host) return cells;
  }
  return {};
}

TEST(SummaryHosts, OneLinePerHostWithItsNodeMemory) {
  const std::vector<TrialRow> rows{on_host(0, "n1", 1000, 50), on_host(1, "n1", 1200, 70, "failed"),
                                   on_host(2, "n2", 3000, 60)};
  const SummaryInput input{"results.h5", example_header(), rows, {}, {}};
  const std::string out = format_summary({input});
  ASSERT_THAT(out, HasSubstr("nodes (2 hosts)"));
  // host, trials, ok, used mean, min, max, rss peak max
  EXPECT_EQ(host_line(out, "n1"),
            (std::vector<std::string>{"n1", "2", "1", fmt::format("{:.1f}", (1000.0 + 1200.0) / 2), "1000.0", "1200.0",
                                      "70.0"}));
  EXPECT_EQ(host_line(out, "n2"), (std::vector<std::string>{"n2", "1", "1", "3000.0", "3000.0", "3000.0", "60.0"}));
}

TEST(SummaryHosts, NoSectionOnOneHost) {
  const SummaryInput input{
      "results.h5", example_header(), {on_host(0, "n1", 1000, 50), on_host(1, "n1", 900, 40)}, {}, {}};
  EXPECT_THAT(format_summary({input}), Not(HasSubstr("nodes (")));
}

TEST(SummaryHosts, RowsWithoutAHostAreLeftOut) {
  TrialRow lost = on_host(2, "", 5000, 500, "interrupted");
  const SummaryInput input{
      "results.h5", example_header(), {on_host(0, "n1", 1000, 50), on_host(1, "n2", 900, 40), lost}, {}, {}};
  const std::string out = format_summary({input});
  EXPECT_EQ(host_line(out, "n1").at(1), "1");
  EXPECT_EQ(host_line(out, "n2").at(1), "1");
  EXPECT_THAT(out.substr(out.find("nodes (")), Not(HasSubstr("5000.0")));
}

}  // namespace
}  // namespace memsweep::testing
