// The sampling thread: timing, phases, overruns, drops, PSS cadence and
// repeated start/stop, on the real /proc probe unless a fake makes the
// behaviour deterministic.

#include "sampler/sampler_support.hpp"

#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>

#include <algorithm>
#include <stdexcept>

namespace memsweep::testing {
namespace {

using std::chrono::milliseconds;

SamplerOptions every(milliseconds interval) {
  SamplerOptions options;
  options.interval = interval;
  return options;
}

std::vector<std::int64_t> intervals_ns(const std::vector<Sample>& samples) {
  std::vector<std::int64_t> deltas;
  for (std::size_t i = 1; i < samples.size(); ++i) deltas.push_back(samples[i].t_ns - samples[i - 1].t_ns);
  return deltas;
}

std::int64_t median(std::vector<std::int64_t> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

int open_fds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  ::closedir(dir);
  return count;
}

TEST(Sampler, MedianIntervalAt10msIsWithin10Percent) {
  Sampler sampler(every(milliseconds(10)), make_proc_memory_probe(), nullptr);
  sampler.start();
  std::this_thread::sleep_for(milliseconds(1500));
  sampler.stop();
  const std::vector<Sample> samples = all_samples(sampler);
  ASSERT_GE(samples.size(), 100U);
  const double median_ms = static_cast<double>(median(intervals_ns(samples))) * 1e-6;
  EXPECT_NEAR(median_ms, 10.0, 1.0);
  // Absolute deadlines do not drift: the n-th sample is near n x 10 ms.
  EXPECT_NEAR(samples.back().t_seconds(),
              0.010 * static_cast<double>(samples.size() - 1 + sampler.stats().missed_ticks), 0.010);
}

TEST(Sampler, SamplesRecordRealMemory) {
  Sampler sampler(every(milliseconds(5)), make_proc_memory_probe(), nullptr);
  sampler.start();
  std::this_thread::sleep_for(milliseconds(60));
  sampler.stop();
  const std::vector<Sample> samples = all_samples(sampler);
  ASSERT_FALSE(samples.empty());
  EXPECT_EQ(samples.front().t_ns < milliseconds(5).count() * 1'000'000, true);  // the first at once
  for (const Sample& sample : samples) {
    EXPECT_EQ(sample.flags & (kSampleProcessReadFailed | kSampleSystemReadFailed), 0U);
    EXPECT_GT(sample.rss_bytes, 0);
    EXPECT_GT(sample.anon_rss_bytes, 0);
    EXPECT_LE(sample.anon_rss_bytes, sample.rss_bytes);
    EXPECT_GT(sample.sys_total_bytes, sample.sys_used_bytes);
    EXPECT_EQ(sample.sys_used_bytes,
              sample.sys_total_bytes - (sample.sys_free_bytes + sample.sys_buffers_bytes + sample.sys_cached_bytes));
    EXPECT_GT(sample.sys_available_bytes, 0);
    EXPECT_GT(sample.sys_active_bytes, 0);
  }
}

TEST(Sampler, SamplesCarryThePhaseInForceWhenTaken) {
  Sampler sampler(every(milliseconds(5)), std::make_unique<FakeProbe>(), nullptr);
  // Each epoch with a phase of its own, so that a sample pairing an epoch
  // with another epoch's phase shows.
  const auto phase_of = [](std::int32_t epoch) {
    return epoch == 0 ? sample_phase::kSetup : epoch == 2 ? sample_phase::kEvaluating : sample_phase::kTraining;
  };
  sampler.set_phase(0, phase_of(0));
  sampler.start();
  for (std::int32_t epoch = 1; epoch <= 3; ++epoch) {
    std::this_thread::sleep_for(milliseconds(100));
    sampler.set_phase(epoch, phase_of(epoch));
  }
  std::this_thread::sleep_for(milliseconds(100));
  sampler.stop();
  const std::vector<Sample> samples = all_samples(sampler);
  std::array<int, 4> per_epoch{};
  for (std::size_t i = 0; i < samples.size(); ++i) {
    ASSERT_GE(samples[i].epoch, 0);
    ASSERT_LE(samples[i].epoch, 3);
    ++per_epoch[static_cast<std::size_t>(samples[i].epoch)];
    EXPECT_EQ(samples[i].phase, phase_of(samples[i].epoch)) << "sample " << i;
    if (i > 0) {
      EXPECT_GE(samples[i].epoch, samples[i - 1].epoch) << "phases only move forward here";
    }
  }
  for (const int count : per_epoch) EXPECT_GE(count, 5);
}

TEST(Sampler, OverrunsSkipDeadlinesInsteadOfBursting) {
  auto probe = std::make_unique<FakeProbe>();
  probe->process_delay = std::chrono::microseconds(25'000);  // 2.5 intervals per tick
  Sampler sampler(every(milliseconds(10)), std::move(probe), nullptr);
  sampler.start();
  std::this_thread::sleep_for(milliseconds(400));
  sampler.stop();
  const std::vector<Sample> samples = all_samples(sampler);
  ASSERT_GE(samples.size(), 5U);
  EXPECT_GE(sampler.stats().missed_ticks, samples.size());
  for (const std::int64_t delta : intervals_ns(samples)) {
    EXPECT_GE(delta, milliseconds(25).count() * 1'000'000 * 9 / 10);
  }
}

TEST(Sampler, StalledConsumerCountsDroppedSamples) {
  SamplerOptions options = every(milliseconds(1));
  options.chunk_count = 1;
  Sampler sampler(options, std::make_unique<FakeProbe>(), nullptr);
  sampler.start();
  // Until well past what one chunk holds (256): nobody drains meanwhile. A
  // count, not a fixed sleep: a loaded machine ticks fewer times in 600 ms.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (sampler.stats().samples < 2 * kSamplesPerChunk && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  sampler.stop();
  const SamplerStats stats = sampler.stats();
  const std::vector<Sample> samples = all_samples(sampler);
  EXPECT_EQ(samples.size(), kSamplesPerChunk);
  EXPECT_GT(stats.dropped_samples, 0U);
  EXPECT_EQ(stats.samples, samples.size() + stats.dropped_samples);
}

TEST(Sampler, PssIsReadOnItsOwnSlowerCadence) {
  SamplerOptions options = every(milliseconds(5));
  options.pss_interval = milliseconds(100);
  Sampler sampler(options, make_proc_memory_probe(), nullptr);
  sampler.start();
  std::this_thread::sleep_for(milliseconds(550));
  sampler.stop();
  const SamplerStats stats = sampler.stats();
  EXPECT_GE(stats.pss_reads, 4U);
  EXPECT_LE(stats.pss_reads, 8U);
  EXPECT_EQ(stats.pss_read_failures, 0U);
  const std::vector<Sample> samples = all_samples(sampler);
  const auto fresh =
      std::count_if(samples.begin(), samples.end(), [](const Sample& s) { return (s.flags & kSamplePssFresh) != 0; });
  EXPECT_GE(fresh, 3);
  EXPECT_LT(static_cast<std::size_t>(fresh), samples.size() / 3);
  EXPECT_GT(samples.back().pss_bytes, 0);
  EXPECT_LE(samples.back().pss_bytes, samples.back().rss_bytes * 2);
}

TEST(Sampler, StartsAndStopsCleanlyManyTimes) {
  CounterSetup setup = open_counters({"perf::PAGE-FAULTS"});
  ASSERT_NE(setup.source, nullptr);
  SamplerOptions options = every(milliseconds(1));
  options.pss_interval = milliseconds(3);
  Sampler sampler(options, make_proc_memory_probe(), std::move(setup.source));
  const int fds_before = open_fds();
  constexpr int kRuns = 50;
  for (int run = 0; run < kRuns; ++run) {
    const auto started = std::chrono::steady_clock::now();
    sampler.start();
    EXPECT_TRUE(sampler.running());
    if (run % 2 == 0) std::this_thread::sleep_for(milliseconds(5));
    sampler.stop();
    const auto run_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
    EXPECT_FALSE(sampler.running());
    const std::vector<Sample> samples = all_samples(sampler);
    ASSERT_FALSE(samples.empty()) << "run " << run;
    // Not "under 1 ms": on a loaded machine the thread may start late. Time
    // that did not restart would exceed this run's whole duration.
    EXPECT_LE(samples.front().t_ns, run_ns.count()) << "time restarts at each start";
    EXPECT_EQ(sampler.stats().samples, samples.size());
  }
  sampler.stop();  // idempotent
  EXPECT_EQ(open_fds(), fds_before) << "counters and threads leave nothing open";
}

// A program trial's region (docs/runner.md, "Programs"): its counters open
// while its child waits before the exec, its samples start at the exec.
TEST(Sampler, AHeldRegionCountsAtOnceAndSamplesOnlyFromItsRelease) {
  CounterSetup setup = open_counters({"perf::PAGE-FAULTS"});
  ASSERT_NE(setup.source, nullptr);
  Sampler sampler(every(milliseconds(5)), make_proc_memory_probe(), std::move(setup.source));
  sampler.begin_held_region(RegionBaseline{});
  EXPECT_TRUE(sampler.running());
  // Faults while held: counted, not sampled.
  TouchedPages touched(std::size_t{1} << 20);
  touched.touch();
  std::this_thread::sleep_for(milliseconds(60));
  EXPECT_EQ(sampler.stats().samples, 0U) << "no sample before the release";

  const auto released = std::chrono::steady_clock::now();
  sampler.set_phase(0, sample_phase::kUnknown);
  sampler.release();
  EXPECT_GE(sampler.stats().samples, 1U) << "release() returns once the first sample is taken";
  sampler.set_phase(1, sample_phase::kTraining);  // a program's first event, right after its exec
  std::this_thread::sleep_for(milliseconds(60));
  const RegionSummary region = sampler.end_region();
  const auto since_release = std::chrono::steady_clock::now() - released;
  const std::vector<Sample> samples = all_samples(sampler);
  ASSERT_GE(samples.size(), 3U);
  EXPECT_EQ(region.samples, samples.size());
  EXPECT_LE(samples.front().t_ns, std::chrono::duration_cast<std::chrono::nanoseconds>(since_release).count())
      << "times count from the release, not from the start 60 ms before";
  EXPECT_EQ(samples.front().phase, sample_phase::kUnknown) << "the first sample has the phase of the release";
  EXPECT_GE(samples.front().counters[0], static_cast<std::int64_t>(touched.pages()))
      << "the faults while held were counted";
}

TEST(Sampler, AHeldRegionEndedBeforeItsReleaseHasNoSamples) {
  Sampler sampler(every(milliseconds(5)), make_proc_memory_probe(), nullptr);
  sampler.begin_held_region(RegionBaseline{});
  std::this_thread::sleep_for(milliseconds(30));
  const RegionSummary region = sampler.end_region();
  EXPECT_FALSE(sampler.running());
  EXPECT_EQ(region.samples, 0U);
  EXPECT_LT(region.mean_rss_bytes, 0);
  EXPECT_TRUE(all_samples(sampler).empty());
  sampler.release();  // nothing: not running
  EXPECT_FALSE(sampler.running());
  // And the sampler starts again as usual.
  sampler.start();
  std::this_thread::sleep_for(milliseconds(20));
  sampler.stop();
  EXPECT_FALSE(all_samples(sampler).empty());
}

TEST(Sampler, RejectsBadIntervalsAndDoubleStart) {
  EXPECT_THROW(Sampler(every(milliseconds(0)), std::make_unique<FakeProbe>(), nullptr).start(), std::invalid_argument);
  EXPECT_THROW(Sampler(every(milliseconds(kMaxSamplerIntervalMs + 1)), std::make_unique<FakeProbe>(), nullptr).start(),
               std::invalid_argument);
  Sampler sampler(every(milliseconds(10)), std::make_unique<FakeProbe>(), nullptr);
  sampler.start();
  EXPECT_THROW(sampler.start(), std::logic_error);
  sampler.stop();
}

TEST(Sampler, LongIntervalStillStopsPromptly) {
  Sampler sampler(every(milliseconds(60'000)), std::make_unique<FakeProbe>(), nullptr);
  sampler.start();
  std::this_thread::sleep_for(milliseconds(20));
  const auto before = std::chrono::steady_clock::now();
  sampler.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(500));
  EXPECT_EQ(all_samples(sampler).size(), 1U);
}

TEST(Sampler, FailedReadsAreFlaggedAndCountedNotFatal) {
  auto probe = std::make_unique<FakeProbe>();
  probe->fail_process = true;
  Sampler sampler(every(milliseconds(5)), std::move(probe), nullptr);
  sampler.start();
  std::this_thread::sleep_for(milliseconds(30));
  sampler.stop();
  const std::vector<Sample> samples = all_samples(sampler);
  ASSERT_FALSE(samples.empty());
  EXPECT_EQ(sampler.stats().process_read_failures, samples.size());
  for (const Sample& sample : samples) {
    EXPECT_NE(sample.flags & kSampleProcessReadFailed, 0U);
    EXPECT_EQ(sample.rss_bytes, -1);
    EXPECT_GT(sample.sys_used_bytes, 0) << "the other reads go on";
  }
}

}  // namespace
}  // namespace memsweep::testing
