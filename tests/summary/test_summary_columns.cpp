// `memsweep summary`'s dataset tables lead with the trial's own memory (its
// peak RSS, the process tree's for a program) and put the node's used
// memory after it; the note under them says whose RSS it is, per kind of
// trial shown (issue 43).

#include "memsweep/summary_text.hpp"
#include "store/store_fixtures.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string line_with(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', at) + 1;
  return text.substr(start, text.find('\n', at) - start);
}

TrialRow program_trial(int index) {
  TrialRow row = example_trial(index, "ok");
  set_fixed(row.trainer, "wlm");
  return row;
}

std::string summary_of(std::vector<TrialRow> rows) {
  return format_summary({SummaryInput{"results.h5", example_header(), std::move(rows), {}, {}}});
}

TEST(SummaryColumns, TheTrialsOwnPeakComesFirstAndTheNodesUsedMemoryAfter) {
  const std::string out = summary_of({example_trial(0, "ok")});
  const std::string header = line_with(out, "rss peak");
  ASSERT_FALSE(header.empty()) << out;
  const std::size_t peak = header.find("rss peak");
  const std::size_t mean = header.find("rss mean");
  const std::size_t footprint = header.find("peak-base");
  const std::size_t used = header.find("used MB");
  ASSERT_NE(used, std::string::npos);
  EXPECT_LT(peak, mean);
  EXPECT_LT(mean, footprint);
  EXPECT_LT(footprint, used) << "the node's memory after the trial's own figures: " << header;
  // The row's cells follow: its peak (180,000,000 B = 171.7 MiB) before its node's used mean.
  const std::string row = line_with(out, std::string(get_fixed(example_trial(0, "ok").trial_id)));
  const TrialRow trial = example_trial(0, "ok");
  const std::string peak_cell = fmt::format("{:.1f}", static_cast<double>(trial.rss_peak) / (1024.0 * 1024.0));
  const std::string used_cell = fmt::format("{:.1f}", trial.sys_used_mean / (1024.0 * 1024.0));
  ASSERT_NE(row.find(peak_cell), std::string::npos) << row;
  ASSERT_NE(row.find(used_cell), std::string::npos) << row;
  EXPECT_LT(row.find(peak_cell), row.find(used_cell)) << row;
}

TEST(SummaryColumns, TheNoteSaysWhoseRssItIsForEachKindOfTrial) {
  const auto note_of = [](const std::string& out) { return line_with(out, "rss peak, rss mean:"); };
  const std::string builtin = note_of(summary_of({example_trial(0, "ok")}));
  EXPECT_THAT(builtin, HasSubstr("the trial's resident memory, of the trial's process"));
  EXPECT_THAT(builtin, Not(HasSubstr("process tree")));

  const std::string programs = note_of(summary_of({program_trial(0), program_trial(1)}));
  EXPECT_THAT(programs, HasSubstr("the trial's resident memory, summed over the program's whole process tree"));
  EXPECT_THAT(programs, Not(HasSubstr("the trial's process")));
  EXPECT_THAT(programs, HasSubstr("used MB: the node's memory used by every process on it"));

  const std::string both = note_of(summary_of({example_trial(0, "ok"), program_trial(1)}));
  EXPECT_THAT(both, HasSubstr("of the trial's process for memsweep's trainer, summed over the program's whole "
                              "process tree for a program"));
}

}  // namespace
}  // namespace memsweep::testing
