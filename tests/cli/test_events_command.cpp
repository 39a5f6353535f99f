// `memsweep events` run as a user runs it: the candidates with their
// availability on this machine, and the default set.

#include "support/subprocess.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

TEST(EventsCommand, ListsCandidatesAvailabilityAndTheDefaultSet) {
  const CommandResult result = run_memsweep({"events"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("PAPI 7."));
  for (const char* name : {"PAPI_L1_DCM", "PAPI_L2_DCM", "PAPI_L3_TCM", "PAPI_TLB_DM", "PAPI_LD_INS", "PAPI_SR_INS",
                           "PAPI_TOT_INS", "PAPI_TOT_CYC", "perf::MAJOR-FAULTS"})
    EXPECT_THAT(result.out, HasSubstr(name));
  // The kernel counts software events everywhere, VMs included.
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(\nperf::PAGE-FAULTS +yes )")));
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(default set \(\d+\): .*perf::MINOR-FAULTS)")));
}

TEST(EventsCommand, ChecksExtraNamesAndReportsUnknownOnes) {
  const CommandResult result = run_memsweep({"events", "PAPI_NOT_AN_EVENT"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(\nPAPI_NOT_AN_EVENT +no +- +- +PAPI does not know)")))
      << result.out;
}

TEST(EventsCommand, TheKernelSwitchServesEverythingFromTheKernelsGenericEvents) {
  const CommandResult result = run_memsweep({"events", "--counter-source", "kernel", "page-faults", "PAPI_SR_INS"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("counter source: kernel"));
  for (const char* name : {"perf::PAGE-FAULTS", "perf::MINOR-FAULTS", "page-faults"})
    EXPECT_TRUE(std::regex_search(result.out, std::regex(std::string("\n") + name + " +yes +kernel +type=1 ")))
        << name << " in\n"
        << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(\nPAPI_SR_INS +no .*no generic kernel event)")));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr(" papi ")));
}

TEST(EventsCommand, SaysWhetherPapisCpuComponentWorksAndWhichCpuThisIs) {
  const CommandResult result = run_memsweep({"events"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(^CPU: .+ \(family \d+, model \d+\)\n)"))) << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(CPU component perf_event is (active|disabled: .+))")))
      << result.out;
}

TEST(EventsCommand, AnUnknownCounterSourceIsRefused) {
  const CommandResult result = run_memsweep({"events", "--counter-source", "pmu"});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_THAT(result.err, HasSubstr("--counter-source"));
}

}  // namespace
}  // namespace memsweep::testing
