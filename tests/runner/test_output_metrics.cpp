// A program's metrics read from its standard output as the output pump
// hands it on (runner/output_metrics.hpp): the last value per metric and
// epoch, lines completed across reads, progress bars, a last line without
// its newline, output dropped when too much waits, and what could not be
// read said once.

#include "runner/output_metrics.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace memsweep::runner::detail {
namespace {

using ::testing::HasSubstr;

class MetricRows final : public TrialSink {
 public:
  void samples(std::span<const SampleRow>) override {}
  void epoch(const EpochRow&) override {}
  void metric(const MetricRow& row) override { rows.push_back(row); }
  std::vector<MetricRow> rows;
};

// The program's stdout as the pump hands it on: appended to by the
// "program" (this test), taken by the scanner.
class OutputFile {
 public:
  void print(const std::string& text) { feed_.append(text); }
  OutputFeed& feed() { return feed_; }

 private:
  OutputFeed feed_;
};

std::vector<ProgramMetric> wlm_metrics(bool with_epoch) {
  std::vector<ProgramMetric> metrics{{"loss", R"(\| loss +([0-9.]+))", ""}, {"valid_ppl", "valid ppl +([0-9.]+)", ""}};
  if (with_epoch) metrics.push_back({"epoch", R"(^\| (?:end of )?epoch +(\d+))", ""});
  return metrics;
}

FixedString<kTrialIdChars> id(const char* text) {
  FixedString<kTrialIdChars> out{};
  set_fixed(out, text);
  return out;
}

struct Seen {
  std::int32_t epoch;
  std::string name;
  double value;
  std::int32_t matches;
};

std::vector<Seen> seen(const std::vector<MetricRow>& rows) {
  std::vector<Seen> out;
  for (const MetricRow& row : rows) out.push_back({row.epoch, get_fixed(row.name), row.value, row.matches});
  return out;
}

MATCHER_P4(IsRow, epoch, name, value, matches, "") {
  return arg.epoch == epoch && arg.name == name && arg.value == value && arg.matches == matches;
}

TEST(OutputMetrics, KeepsTheLastValuePerEpochFromTheEpochPattern) {
  OutputFile out;
  MetricRows sink;
  OutputMetrics metrics(out.feed(), wlm_metrics(true), id("abcdef012345"), 2, sink);
  out.print("starting\n| epoch   1 |   200/ 600 batches | loss  7.01 | ppl  1108.6\n");
  out.print("| epoch   1 |   400/ 600 batches | loss  6.50 | ppl   665.1\n");
  out.print("| end of epoch   1 | time: 3.1s | valid loss  5.52 | valid ppl   250.03\n");
  metrics.scan(0);
  EXPECT_TRUE(sink.rows.empty()) << "epoch 1 is not over until another begins";
  out.print("| epoch   2 |   200/ 600 batches | loss  5.80 | ppl   330.3\n");
  out.print("| end of epoch   2 | time: 3.0s | valid loss  5.30 | valid ppl   200.34\n");
  out.print("| End of training | test loss  5.25 | test ppl   190.57\n");
  metrics.scan(0);
  ASSERT_EQ(sink.rows.size(), 2u) << "epoch 1's rows, sent when epoch 2 began";
  metrics.finish(0);
  EXPECT_THAT(seen(sink.rows), ::testing::ElementsAre(IsRow(1, "loss", 6.50, 2), IsRow(1, "valid_ppl", 250.03, 1),
                                                      IsRow(2, "loss", 5.80, 1), IsRow(2, "valid_ppl", 200.34, 1)));
  for (const MetricRow& row : sink.rows) {
    EXPECT_EQ(get_fixed(row.trial_id), "abcdef012345");
    EXPECT_EQ(row.attempt, 2);
    EXPECT_GE(row.seconds, 0.0);
  }
  EXPECT_EQ(metrics.problems(), "");
}

TEST(OutputMetrics, WithoutAnEpochPatternTakesTheEventsEpochOrNone) {
  OutputFile out;
  MetricRows sink;
  OutputMetrics metrics(out.feed(), wlm_metrics(false), id("t"), 0, sink);
  out.print("valid ppl 300\n");
  metrics.scan(0);
  out.print("valid ppl 280\nvalid ppl 270\n");
  metrics.scan(1);  // the program reported epoch 1 before these were read
  out.print("valid ppl 260\n");
  metrics.finish(1);
  EXPECT_THAT(seen(sink.rows),
              ::testing::ElementsAre(IsRow(0, "valid_ppl", 300.0, 1), IsRow(1, "valid_ppl", 260.0, 3)));
}

TEST(OutputMetrics, ALineIsMatchedOnceWholeAndTheLastOneNeedsNoNewline) {
  OutputFile out;
  MetricRows sink;
  OutputMetrics metrics(out.feed(), wlm_metrics(false), id("t"), 0, sink);
  out.print("| valid loss 5.1 | valid ppl 12");
  metrics.scan(0);
  out.print("3.5\n| valid ppl 99");
  metrics.scan(0);
  // A progress bar: what shows is after the last \r; a CRLF ending is one line's end.
  out.print("\r| valid ppl 42.0 | loss 1.5\r\n| loss 1.25");
  metrics.finish(0);
  EXPECT_THAT(seen(sink.rows), ::testing::ElementsAre(IsRow(0, "loss", 1.25, 2), IsRow(0, "valid_ppl", 42.0, 2)))
      << "123.5 read whole, not as 12; 99 was overwritten on its line; the last line counted at the end";
}

TEST(OutputMetrics, AValueThatIsNoNumberIsSaidOnceAndKeepsTheLastGoodOne) {
  OutputFile out;
  MetricRows sink;
  OutputMetrics metrics(out.feed(), {{"ppl", "ppl +([^ ]+)", ""}, {"epoch", "epoch ([^ ]+)", ""}}, id("t"), 0, sink);
  out.print("ppl 10.5\nppl 1.2.3\nppl abc\nepoch 1.5\n");
  metrics.finish(0);
  EXPECT_THAT(seen(sink.rows), ::testing::ElementsAre(IsRow(0, "ppl", 10.5, 1)));
  EXPECT_EQ(metrics.problems(), "3 metric matches were not a number, the first: ppl = \"1.2.3\"");
}

TEST(OutputMetrics, ALineTooLongIsSkippedAndSaid) {
  OutputFile out;
  MetricRows sink;
  OutputMetrics metrics(out.feed(), {{"ppl", "ppl +([0-9.]+)", ""}}, id("t"), 0, sink);
  out.print("ppl 1\n" + std::string(kMetricMaxLineBytes + 10, 'x') + " ppl 2\nppl 3\n");
  metrics.finish(0);
  EXPECT_THAT(seen(sink.rows), ::testing::ElementsAre(IsRow(0, "ppl", 3.0, 2)));
  EXPECT_THAT(metrics.problems(), HasSubstr("1 output line longer than 8 KiB not matched for metrics"));
}

TEST(OutputMetrics, AScanReadsABoundedShareAndTheEndReadsTheRest) {
  OutputFile out;
  MetricRows sink;
  OutputMetrics metrics(out.feed(), {{"n", "^n ([0-9]+)$", ""}}, id("t"), 0, sink);
  std::string lines;
  int printed = 0;
  while (lines.size() < 3 * kMetricScanBytesPerCall) lines += "n " + std::to_string(++printed) + "\n";
  out.print(lines);
  metrics.scan(0);
  metrics.finish(0);
  ASSERT_EQ(sink.rows.size(), 1u);
  EXPECT_EQ(sink.rows[0].value, printed) << "the last line printed";
  EXPECT_EQ(sink.rows[0].matches, printed) << "every line matched once";
}

TEST(OutputMetrics, OutputBeyondWhatMayWaitDropsTheOldestAndMatchingResumesAtALine) {
  OutputFile out;
  MetricRows sink;
  OutputMetrics metrics(out.feed(), {{"n", "^n ([0-9]+)$", ""}}, id("t"), 0, sink);
  std::string lines;
  int printed = 0;
  while (lines.size() < kMetricFinalScanBytes + kMetricFinalScanBytes / 2)
    lines += "n " + std::to_string(++printed) + "\n";
  // In pieces, as a pump reads them, none of them taken until the end.
  for (std::size_t at = 0; at < lines.size(); at += 65536) out.print(lines.substr(at, 65536));
  metrics.finish(0);
  const std::uint64_t dropped = lines.size() - kMetricFinalScanBytes;
  ASSERT_EQ(sink.rows.size(), 1u);
  EXPECT_EQ(sink.rows[0].value, printed) << "the last line printed is kept";
  EXPECT_LT(sink.rows[0].matches, printed) << "the oldest lines were dropped";
  // Every whole line of what was kept matched, the one the drop cut not.
  const std::string kept = lines.substr(dropped);
  const auto whole_lines = std::count(kept.begin(), kept.end(), '\n') - 1;
  EXPECT_EQ(sink.rows[0].matches, whole_lines);
  EXPECT_THAT(metrics.problems(), HasSubstr(fmt::format("{:.1f} MiB of the program's output not matched",
                                                        static_cast<double>(dropped) / (1024.0 * 1024.0))));
}

TEST(MetricValue, ReadsDecimalNumbersOnly) {
  EXPECT_EQ(metric_value("123.4"), 123.4);
  EXPECT_EQ(metric_value(" 5e-3 "), 5e-3);
  EXPECT_EQ(metric_value("+7"), 7.0);
  EXPECT_EQ(metric_value("-0.5"), -0.5);
  EXPECT_FALSE(metric_value(""));
  EXPECT_FALSE(metric_value("1.2.3"));
  EXPECT_FALSE(metric_value("12ms"));
  EXPECT_FALSE(metric_value("+-1"));
}

}  // namespace
}  // namespace memsweep::runner::detail
