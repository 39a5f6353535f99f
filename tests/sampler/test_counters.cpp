// The counters cover every thread doing the work: threads created after the
// counters start (inheritance) and threads that already existed (one
// descriptor per thread), read while those threads are still alive.

#include "sampler/perf_counters.hpp"
#include "sampler/sampler_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <barrier>
#include <latch>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::size_t kWorkers = 3;
constexpr std::size_t kBytesPerWorker = 40 * kMiB;

struct Reading {
  std::int64_t faults = 0;
  float running = 0;
};

Reading read_faults(CounterSource& source) {
  std::array<std::int64_t, kMaxCounters> values{};
  std::array<float, kMaxCounters> running{};
  EXPECT_TRUE(source.read(std::span(values.data(), 1), std::span(running.data(), 1)));
  return {values[0], running[0]};
}

// The same coverage whichever source serves the event: PAPI's encoding
// (auto, where PAPI's CPU component works) or the kernel's generic event.
class CountersFromEachSource : public ::testing::TestWithParam<CounterSourceChoice> {
 protected:
  static std::unique_ptr<CounterSource> page_faults() {
    CounterSetup setup = open_counters({"perf::PAGE-FAULTS"}, GetParam());
    EXPECT_TRUE(setup.events.at(0).available) << setup.events.at(0).detail;
    if (GetParam() == CounterSourceChoice::kernel) {
      EXPECT_EQ(setup.events.at(0).source, EventSource::kernel);
    }
    return std::move(setup.source);
  }
};

double expected_pages() {
  return static_cast<double>(kWorkers * kBytesPerWorker) / static_cast<double>(::sysconf(_SC_PAGESIZE));
}

TEST_P(CountersFromEachSource, CoverThreadsCreatedAfterTheyStartWhileThoseThreadsLive) {
  auto source = page_faults();
  ASSERT_NE(source, nullptr);
  ASSERT_TRUE(source->start(0, {}));
  std::barrier touched(kWorkers + 1);
  std::barrier read_done(kWorkers + 1);
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < kWorkers; ++i)
    workers.emplace_back([&] {
      TouchedPages pages(kBytesPerWorker);
      pages.touch();
      touched.arrive_and_wait();
      read_done.arrive_and_wait();  // alive (and holding the pages) while read
    });
  touched.arrive_and_wait();
  const Reading live = read_faults(*source);
  read_done.arrive_and_wait();
  for (std::thread& worker : workers) worker.join();
  const Reading after = read_faults(*source);
  source->stop();

  EXPECT_GE(static_cast<double>(live.faults), expected_pages()) << "one fault per fresh page, at least";
  EXPECT_GE(after.faults, live.faults) << "counts of ended threads are kept";
  EXPECT_FLOAT_EQ(live.running, 1.0F);
}

TEST_P(CountersFromEachSource, CoverThreadsThatExistedBeforeTheyStart) {
  auto source = page_faults();
  ASSERT_NE(source, nullptr);
  std::latch counters_started(1);
  std::barrier touched(kWorkers + 1);
  std::barrier read_done(kWorkers + 1);
  std::vector<std::thread> pool;  // like an OpenMP pool kept from an earlier trial
  for (std::size_t i = 0; i < kWorkers; ++i)
    pool.emplace_back([&] {
      counters_started.wait();
      TouchedPages pages(kBytesPerWorker);
      pages.touch();
      touched.arrive_and_wait();
      read_done.arrive_and_wait();
    });
  ASSERT_TRUE(source->start(0, {}));
  counters_started.count_down();
  touched.arrive_and_wait();
  const Reading live = read_faults(*source);
  read_done.arrive_and_wait();
  for (std::thread& worker : pool) worker.join();
  source->stop();
  EXPECT_GE(static_cast<double>(live.faults), expected_pages()) << "one fault per fresh page, at least";
}

TEST_P(CountersFromEachSource, LeaveOutExcludedThreads) {
  auto source = page_faults();
  ASSERT_NE(source, nullptr);
  std::atomic<int> tid{0};
  std::latch started(1);
  std::latch go(1);
  std::thread excluded([&] {
    tid = static_cast<int>(::syscall(SYS_gettid));
    started.count_down();
    go.wait();
    TouchedPages pages(kBytesPerWorker);
    pages.touch();
  });
  started.wait();
  const std::array<int, 1> excluded_tids{tid.load()};
  ASSERT_TRUE(source->start(0, excluded_tids));
  go.count_down();
  excluded.join();
  const Reading reading = read_faults(*source);
  source->stop();
  const double pages = static_cast<double>(kBytesPerWorker) / static_cast<double>(::sysconf(_SC_PAGESIZE));
  EXPECT_LT(static_cast<double>(reading.faults), 0.5 * pages);
}

INSTANTIATE_TEST_SUITE_P(Sources, CountersFromEachSource,
                         ::testing::Values(CounterSourceChoice::automatic, CounterSourceChoice::kernel),
                         [](const auto& param_info) { return std::string(counter_source_name(param_info.param)); });

TEST(Counters, SamplerCountsWorkOnThreadsItDidNotStart) {
  CounterSetup setup = open_counters({"perf::PAGE-FAULTS"});
  ASSERT_NE(setup.source, nullptr);
  SamplerOptions options;
  options.interval = std::chrono::milliseconds(5);
  Sampler sampler(options, make_proc_memory_probe(), std::move(setup.source));
  sampler.begin_region();
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < kWorkers; ++i)
    workers.emplace_back([] {
      TouchedPages pages(kBytesPerWorker);
      pages.touch();
    });
  for (std::thread& worker : workers) worker.join();
  const RegionSummary summary = sampler.end_region();
  ASSERT_EQ(summary.counter_totals.size(), 1U);
  EXPECT_GE(static_cast<double>(summary.counter_totals[0]), 0.9 * expected_pages());
}

TEST(Counters, UnknownEventsAreReportedAndLeftOut) {
  const CounterSetup setup = open_counters({"PAPI_NOT_AN_EVENT", "perf::PAGE-FAULTS", "nosuchpmu::THING"});
  ASSERT_EQ(setup.events.size(), 3U);
  EXPECT_FALSE(setup.events[0].available);
  EXPECT_THAT(setup.events[0].detail, HasSubstr("PAPI does not know this event"));
  EXPECT_TRUE(setup.events[1].available);
  EXPECT_FALSE(setup.events[2].available);
  ASSERT_NE(setup.source, nullptr);
  EXPECT_EQ(setup.source->names(), std::vector<std::string>{"perf::PAGE-FAULTS"});
}

TEST(Counters, NoneAvailableMeansNoSourceAndMemoryStillSampled) {
  CounterSetup setup = open_counters({"PAPI_NOT_AN_EVENT"});
  EXPECT_EQ(setup.source, nullptr);
  Sampler sampler(SamplerOptions{}, make_proc_memory_probe(), std::move(setup.source));
  sampler.start();
  sampler.stop();
  const std::vector<Sample> samples = all_samples(sampler);
  ASSERT_EQ(samples.size(), 1U);
  EXPECT_GT(samples[0].rss_bytes, 0);
  EXPECT_TRUE(sampler.counter_names().empty());
}

TEST(Counters, AtMostSixteenAndDuplicatesCountedOnce) {
  // Seventeen names that both sources serve (PAPI, where its CPU component
  // works, and the kernel's generic events), then one listed twice.
  const std::vector<std::string> names{"perf::PAGE-FAULTS",
                                       "perf::FAULTS",
                                       "page-faults",
                                       "faults",
                                       "perf::page-faults",
                                       "perf::MINOR-FAULTS",
                                       "minor-faults",
                                       "perf::MAJOR-FAULTS",
                                       "major-faults",
                                       "perf::CONTEXT-SWITCHES",
                                       "perf::CS",
                                       "context-switches",
                                       "cs",
                                       "perf::CPU-MIGRATIONS",
                                       "perf::MIGRATIONS",
                                       "cpu-migrations",
                                       "migrations",
                                       "perf::PAGE-FAULTS"};
  const CounterSetup setup = open_counters(names);
  ASSERT_EQ(setup.events.size(), names.size());
  ASSERT_NE(setup.source, nullptr);
  EXPECT_EQ(setup.source->names().size(), kMaxCounters);
  EXPECT_THAT(setup.events[16].detail, HasSubstr("more than 16"));
  EXPECT_THAT(setup.events[17].detail, HasSubstr("listed twice"));
}

TEST(Counters, DefaultsAlwaysIncludeThePageFaultSoftwareEvents) {
  const std::vector<std::string> defaults = default_events();
  EXPECT_THAT(defaults, ::testing::IsSupersetOf({"perf::PAGE-FAULTS", "perf::MINOR-FAULTS", "perf::MAJOR-FAULTS"}));
  for (const EventStatus& status : probe_events(defaults)) EXPECT_TRUE(status.available) << status.name;
}

TEST(Counters, LibraryVersionIsPapi) { EXPECT_THAT(counter_library_version(), HasSubstr("PAPI 7.")); }

struct ScaleCase {
  std::uint64_t value, enabled, running;
  double expected;
};
class ScaledCount : public ::testing::TestWithParam<ScaleCase> {};
TEST_P(ScaledCount, FollowsPerfsEstimate) {
  const ScaleCase& c = GetParam();
  EXPECT_DOUBLE_EQ(sampler::detail::scaled_count(c.value, c.enabled, c.running), c.expected);
}
INSTANTIATE_TEST_SUITE_P(Multiplexing, ScaledCount,
                         ::testing::Values(ScaleCase{100, 1000, 1000, 100.0},  // counted all the time
                                           ScaleCase{100, 1000, 250, 400.0},   // a quarter of the time
                                           ScaleCase{0, 1000, 0, 0.0},         // never scheduled
                                           ScaleCase{7, 0, 0, 0.0}),
                         [](const ::testing::TestParamInfo<ScaleCase>& param) {
                           return "ran_" + std::to_string(param.param.running) + "_of_" +
                                  std::to_string(param.param.enabled);
                         });

}  // namespace
}  // namespace memsweep::testing
