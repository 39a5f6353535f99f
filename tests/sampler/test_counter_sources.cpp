// Which source serves each event name, as data: PAPI (its name, libpfm4's
// encoding) or the kernel's generic perf events. Once with a PAPI whose CPU
// component is disabled, as Debian's PAPI 7.0 is on a CPU newer than its
// libpfm4 (Zen 5, Granite Rapids), and once with the real PAPI of this
// machine. Then counting through the kernel's generic events for real.

#include "sampler/event_resolution.hpp"
#include "sampler/sampler_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <papi.h>
#include <sys/syscall.h>

#include <iostream>

namespace memsweep::testing {
namespace {

using sampler::detail::EventNamer;
using sampler::detail::WayToCount;
using ::testing::HasSubstr;

// What PAPI 7.0 answers on such a CPU: its perf_event component disabled
// at PAPI_library_init, and then no name known, perf:: ones included.
class PapiWithItsCpuComponentDisabled final : public EventNamer {
 public:
  sampler::detail::PapiEvent resolve(const std::string&) const override {
    throw sampler::detail::CounterError("PAPI does not know this event here: Event does not exist", PAPI_ENOEVNT);
  }
  std::string version() const override { return "PAPI 7.0.0.0"; }
  PapiCpuComponent cpu_component() const override {
    PapiCpuComponent component;
    component.name = "perf_event";
    component.reason = "Error libpfm4 no default PMU found";
    return component;
  }
};

constexpr std::uint64_t cache_read_miss(std::uint64_t cache) {
  return cache | (PERF_COUNT_HW_CACHE_OP_READ << 8U) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16U);
}

struct Expected {
  const char* name;
  CounterSourceChoice choice;
  EventSource source;  // none: unavailable
  std::uint32_t type;
  std::uint64_t config;
  const char* reason;  // part of why not, when unavailable
};

void PrintTo(const Expected& expected, std::ostream* out) {
  *out << expected.name << " (" << counter_source_name(expected.choice) << ")";
}

// The first way that would be tried, or every reason there is none.
void expect_resolution(const Expected& expected, const std::vector<WayToCount>& ways) {
  const auto first = std::find_if(ways.begin(), ways.end(), [](const WayToCount& way) { return way.encoded; });
  if (expected.source == EventSource::none) {
    EXPECT_EQ(first, ways.end()) << "served by " << event_source_name(first->source);
    std::string reasons;
    for (const WayToCount& way : ways) reasons += way.why_not + "; ";
    EXPECT_THAT(reasons, HasSubstr(expected.reason));
    return;
  }
  ASSERT_NE(first, ways.end()) << (ways.empty() ? "no way at all" : ways.front().why_not);
  EXPECT_EQ(first->source, expected.source);
  ASSERT_EQ(first->encoded->terms.size(), 1U);
  EXPECT_EQ(first->encoded->terms[0].attr.type, expected.type);
  EXPECT_EQ(first->encoded->terms[0].attr.config, expected.config);
  EXPECT_EQ(first->encoded->terms[0].attr.inherit, 1U) << "threads the trial starts later are counted too";
}

constexpr auto kAuto = CounterSourceChoice::automatic;
constexpr auto kKernelOnly = CounterSourceChoice::kernel;
constexpr auto kPapiOnly = CounterSourceChoice::papi;
constexpr auto kKernel = EventSource::kernel;
constexpr auto kNone = EventSource::none;

class WithoutPapisCpuComponent : public ::testing::TestWithParam<Expected> {};

TEST_P(WithoutPapisCpuComponent, NamesResolveToTheKernelsGenericEvents) {
  expect_resolution(GetParam(), sampler::detail::ways_to_count(GetParam().name, GetParam().choice,
                                                               PapiWithItsCpuComponentDisabled()));
}

INSTANTIATE_TEST_SUITE_P(
    Table, WithoutPapisCpuComponent,
    ::testing::Values(
        // PAPI presets with a generic equivalent.
        Expected{"PAPI_TOT_CYC", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, ""},
        Expected{"PAPI_TOT_INS", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, ""},
        Expected{"PAPI_L1_DCM", kAuto, kKernel, PERF_TYPE_HW_CACHE, cache_read_miss(PERF_COUNT_HW_CACHE_L1D), ""},
        Expected{"PAPI_L3_TCM", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, ""},
        Expected{"PAPI_TLB_DM", kAuto, kKernel, PERF_TYPE_HW_CACHE, cache_read_miss(PERF_COUNT_HW_CACHE_DTLB), ""},
        Expected{"PAPI_BR_MSP", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, ""},
        // perf's own names, as `perf list` spells them.
        Expected{"cycles", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, ""},
        Expected{"instructions", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, ""},
        Expected{"cache-misses", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, ""},
        Expected{"L1-dcache-load-misses", kAuto, kKernel, PERF_TYPE_HW_CACHE, cache_read_miss(PERF_COUNT_HW_CACHE_L1D),
                 ""},
        Expected{"LLC-load-misses", kAuto, kKernel, PERF_TYPE_HW_CACHE, cache_read_miss(PERF_COUNT_HW_CACHE_LL), ""},
        Expected{"dTLB-load-misses", kAuto, kKernel, PERF_TYPE_HW_CACHE, cache_read_miss(PERF_COUNT_HW_CACHE_DTLB), ""},
        Expected{"branch-misses", kAuto, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, ""},
        Expected{"page-faults", kAuto, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, ""},
        Expected{"minor-faults", kAuto, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, ""},
        Expected{"major-faults", kAuto, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, ""},
        Expected{"context-switches", kAuto, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, ""},
        // PAPI's native names of the software events, memsweep's defaults.
        Expected{"perf::PAGE-FAULTS", kAuto, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, ""},
        Expected{"perf::MINOR-FAULTS", kAuto, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, ""},
        Expected{"perf::MAJOR-FAULTS", kAuto, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, ""},
        Expected{"perf::CONTEXT-SWITCHES", kKernelOnly, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
                 ""},
        // No generic equivalent, or no such name: unavailable, and why.
        Expected{"PAPI_SR_INS", kAuto, kNone, 0, 0, "no generic kernel event stands for this PAPI preset"},
        Expected{"PAPI_L2_DCM", kAuto, kNone, 0, 0, "no generic kernel event stands for this PAPI preset"},
        Expected{"PAPI_LD_INS", kAuto, kNone, 0, 0, "no generic kernel event stands for this PAPI preset"},
        Expected{"nosuchpmu::THING", kAuto, kNone, 0, 0, "not a generic kernel event's name"},
        // PAPI only: nothing, since PAPI names nothing here.
        Expected{"perf::PAGE-FAULTS", kPapiOnly, kNone, 0, 0, "Event does not exist"}));

// The real PAPI of this machine: where its CPU component works it serves
// the software events itself, with the same encoding the kernel path uses.
class WithThisMachinesPapi : public ::testing::TestWithParam<Expected> {};

TEST_P(WithThisMachinesPapi, NamesResolveAsItsCpuComponentAllows) {
  Expected expected = GetParam();
  const PapiCpuComponent component = sampler::detail::papi().cpu_component();
  std::cout << "[   PAPI   ] CPU component " << component.name << (component.active ? " active" : " disabled: ")
            << component.reason << "\n";
  if (expected.source == EventSource::papi && !component.active) expected.source = EventSource::kernel;
  expect_resolution(expected, sampler::detail::ways_to_count(expected.name, expected.choice, sampler::detail::papi()));
}

constexpr auto kPapi = EventSource::papi;

INSTANTIATE_TEST_SUITE_P(
    Table, WithThisMachinesPapi,
    ::testing::Values(
        // papi where the component is active, else kernel (the test says which).
        Expected{"perf::PAGE-FAULTS", kAuto, kPapi, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, ""},
        Expected{"perf::MINOR-FAULTS", kAuto, kPapi, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, ""},
        Expected{"perf::MAJOR-FAULTS", kAuto, kPapi, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, ""},
        Expected{"perf::CONTEXT-SWITCHES", kAuto, kPapi, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, ""},
        Expected{"page-faults", kAuto, kPapi, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, ""},
        // The switch to the kernel path works on any machine.
        Expected{"perf::PAGE-FAULTS", kKernelOnly, kKernel, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, ""},
        Expected{"PAPI_TOT_INS", kKernelOnly, kKernel, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, ""},
        Expected{"PAPI_SR_INS", kKernelOnly, kNone, 0, 0, "no generic kernel event stands for this PAPI preset"},
        Expected{"PAPI_NOT_AN_EVENT", kAuto, kNone, 0, 0, "PAPI does not know this event here"}));

// ---- counting through the kernel's generic events -------------------------

TEST(KernelSource, SoftwareEventsAreAvailableOnEveryMachine) {
  for (const EventStatus& status :
       probe_events({"perf::PAGE-FAULTS", "minor-faults", "major-faults", "context-switches"}, kKernelOnly)) {
    EXPECT_TRUE(status.available) << status.name << ": " << status.detail;
    EXPECT_EQ(status.source, EventSource::kernel) << status.name;
    ASSERT_EQ(status.encoding.size(), 1U);
    EXPECT_EQ(status.encoding[0].type, PERF_TYPE_SOFTWARE);
  }
}

// A loop of exactly two instructions per iteration (dec, jnz).
void known_loop(std::uint64_t iterations) {
#if defined(__x86_64__)
  asm volatile("1: dec %0\n\tjnz 1b" : "+r"(iterations) : : "cc");
#else
#error "the instruction-count bounds are written for x86-64"
#endif
}

bool machine_counts_instructions() {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

TEST(KernelSource, InstructionsOverAKnownLoopOrReportedUnavailable) {
  if (!machine_counts_instructions()) {
    std::cout << "[ NO HW PMU ] perf_event_open(PERF_COUNT_HW_INSTRUCTIONS) fails here (a VM without a virtual "
                 "PMU?): checking that hardware events are reported unavailable with a reason\n";
    for (const EventStatus& status : probe_events({"instructions", "PAPI_TOT_INS", "cycles"}, kKernelOnly)) {
      EXPECT_FALSE(status.available) << status.name;
      EXPECT_THAT(status.detail, HasSubstr("this machine does not count it")) << status.name;
    }
    return;
  }
  std::cout << "[ HW PMU ] this machine counts hardware events: checking instructions over a known loop\n";
  CounterSetup setup = open_counters({"instructions"}, kKernelOnly);
  ASSERT_NE(setup.source, nullptr) << setup.events.at(0).detail;
  ASSERT_TRUE(setup.source->start(0, {}));
  constexpr std::uint64_t kIterations = 50'000'000;
  std::array<std::int64_t, 1> before{};
  std::array<std::int64_t, 1> after{};
  std::array<float, 1> running{};
  ASSERT_TRUE(setup.source->read(before, running));
  known_loop(kIterations);
  ASSERT_TRUE(setup.source->read(after, running));
  setup.source->stop();
  const double counted = static_cast<double>(after[0] - before[0]);
  // Two per iteration, plus the reads and whatever the kernel did for this
  // thread meanwhile (user and kernel level are both counted): well under 10 %.
  EXPECT_GE(counted, 2.0 * kIterations);
  EXPECT_LE(counted, 2.2 * kIterations);
}

}  // namespace
}  // namespace memsweep::testing
