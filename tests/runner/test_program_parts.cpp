// A program trial's pure parts, on values: its events lines, the pid lists
// of /proc and cgroups, its executable's lookup and environment, the end
// of its stderr, and how its end becomes a status.

#include "runner/program_events.hpp"
#include "runner/program_launch.hpp"
#include "runner/trial_ending.hpp"
#include "sampler/process_tree.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

namespace memsweep::runner::detail {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = ProgramEvent::Kind;

TEST(ParseEventLine, TheFourKindsOfLine) {
  const auto train = parse_event_line(R"({"epoch": 2, "phase": "train"})");
  ASSERT_TRUE(train);
  EXPECT_EQ(train->kind, Kind::train);
  EXPECT_EQ(train->epoch, 2);

  const auto eval = parse_event_line(R"({"phase": "eval"})");
  ASSERT_TRUE(eval);
  EXPECT_EQ(eval->kind, Kind::eval);

  const auto end = parse_event_line(R"({"epoch": 2, "loss": 0.31, "accuracy": 0.91, "note": "extra keys are fine"})");
  ASSERT_TRUE(end);
  EXPECT_EQ(end->kind, Kind::epoch_end);
  EXPECT_DOUBLE_EQ(end->loss, 0.31);
  EXPECT_DOUBLE_EQ(end->accuracy, 0.91);

  const auto no_accuracy = parse_event_line(R"({"epoch": 1, "loss": 2})");
  ASSERT_TRUE(no_accuracy);
  EXPECT_DOUBLE_EQ(no_accuracy->accuracy, -1.0);

  const auto size = parse_event_line(R"({"parameters": 101770, "activations_per_example": 138})");
  ASSERT_TRUE(size);
  EXPECT_EQ(size->kind, Kind::model_size);
  EXPECT_EQ(size->parameters, 101770);
  EXPECT_EQ(size->activations_per_example, 138);
}

TEST(ParseEventLine, AnythingElseIsNotAnEvent) {
  for (const char* line :
       {"", "epoch 1", "[1, 2]", "{\"epoch\": 1}", R"({"phase": "train"})", R"({"phase": "test"})",
        R"({"epoch": 0, "phase": "train"})", R"({"epoch": 1.5, "phase": "train"})", R"({"epoch": "1", "loss": 0.3})",
        R"({"loss": 0.3})", R"({"epoch": 1, "loss": "low"})", R"({"epoch": 1, "loss": 0.3, "accuracy": 1.5})",
        R"({"epoch": 1, "loss": NaN})", R"({"parameters": -1})",
        R"({"parameters": 10, "activations_per_example": 0.5})", R"({"epoch": 1, "phase": "train")"})
    EXPECT_FALSE(parse_event_line(line)) << line;
}

// The reader on a pipe: lines split across writes, a last line without its
// newline, blank lines, bad lines counted with the first one kept.
TEST(EventLineReader, TurnsLinesIntoReportsAndCountsTheRest) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text =
      "{\"parameters\": 10}\n{\"epoch\": 1, \"ph"
      "ase\": \"train\"}\n\nnot json\n{\"phase\": \"eval\"}\n{\"epoch\": 1, \"loss\": 0.5, \"accuracy\": 0.8}\n"
      "{\"epoch\": 7}\n{\"epoch\": 2, \"phase\": \"train\"}";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  EventLineReader reader(fds[0]);
  std::vector<Frame> frames;
  while (auto frame = reader.next()) frames.push_back(*frame);
  ::close(fds[0]);
  EXPECT_TRUE(reader.at_end());
  ASSERT_EQ(frames.size(), 4U);
  EXPECT_EQ(decode_phase(frames[0]).epoch, 1);
  EXPECT_FALSE(decode_phase(frames[0]).evaluating);
  EXPECT_TRUE(decode_phase(frames[1]).evaluating);
  EXPECT_EQ(decode_phase(frames[1]).epoch, 1) << "the eval phase belongs to the epoch under way";
  EXPECT_EQ(decode_epoch(frames[2]).epoch, 1);
  EXPECT_DOUBLE_EQ(decode_epoch(frames[2]).test_accuracy, 0.8);
  EXPECT_EQ(decode_phase(frames[3]).epoch, 2) << "the last line had no newline";
  const ProgramProgress& progress = reader.progress();
  EXPECT_EQ(progress.bad_lines, 2);
  EXPECT_EQ(progress.first_bad_line, "not json");
  EXPECT_EQ(progress.epochs_done, 1);
  EXPECT_DOUBLE_EQ(progress.last_loss, 0.5);
  ASSERT_TRUE(progress.model_size);
  EXPECT_EQ(progress.model_size->parameters, 10);
}

TEST(EventLineReader, AHugeLineIsOneBadLineAndTheReaderGoesOn) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  EventLineReader reader(fds[0]);
  const std::string chunk(4096, 'x');
  std::vector<Frame> frames;
  for (int i = 0; i < 40; ++i) {  // 160 KiB of one line, read as it comes
    ASSERT_EQ(::write(fds[1], chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
    while (auto frame = reader.next()) frames.push_back(*frame);
  }
  const std::string after = "\n{\"phase\": \"eval\"}\n";
  ASSERT_EQ(::write(fds[1], after.data(), after.size()), static_cast<ssize_t>(after.size()));
  ::close(fds[1]);
  while (auto frame = reader.next()) frames.push_back(*frame);
  ::close(fds[0]);
  EXPECT_EQ(reader.progress().bad_lines, 1);
  EXPECT_EQ(reader.progress().first_bad_line.size(), 120U) << "cut for the message";
  ASSERT_EQ(frames.size(), 1U);
  EXPECT_TRUE(decode_phase(frames[0]).evaluating);
}

TEST(ParseEventLine, TheGpuLineGivesTheProgramsOwnPeaks) {
  const auto gpu =
      parse_event_line(R"({"gpu": {"device": 1, "allocated_peak": 1073741824, "reserved_peak": 2147483648}})");
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->kind, Kind::gpu);
  EXPECT_EQ(gpu->device, 1);
  EXPECT_EQ(gpu->allocated_peak, 1073741824);
  EXPECT_EQ(gpu->reserved_peak, 2147483648);
  EXPECT_EQ(gpu_event_problem(R"({"gpu": {"device": 0, "allocated_peak": 0, "reserved_peak": 0}})"), "");
}

// Each wrong {"gpu": ...} line, and what its message says.
struct BadGpuLine {
  const char* line;
  const char* problem;
};
class ParseBadGpuLine : public ::testing::TestWithParam<BadGpuLine> {};

TEST_P(ParseBadGpuLine, IsNotAnEventAndSaysWhy) {
  EXPECT_FALSE(parse_event_line(GetParam().line)) << GetParam().line;
  EXPECT_EQ(gpu_event_problem(GetParam().line), GetParam().problem);
}

INSTANTIATE_TEST_SUITE_P(
    Lines, ParseBadGpuLine,
    ::testing::Values(BadGpuLine{R"({"gpu": 5})",
                                 R"(gpu: expected an object {"device": D, "allocated_peak": N, "reserved_peak": N})"},
                      BadGpuLine{R"({"gpu": {"allocated_peak": 1, "reserved_peak": 2}})", "gpu: device is missing"},
                      BadGpuLine{R"({"gpu": {"device": 0, "reserved_peak": 2}})", "gpu: allocated_peak is missing"},
                      BadGpuLine{R"({"gpu": {"device": 0, "allocated_peak": 1, "reserved_peak": -5}})",
                                 "gpu: reserved_peak must be a whole number of bytes from 0, not -5"},
                      BadGpuLine{R"({"gpu": {"device": 0, "allocated_peak": 1.5, "reserved_peak": 2}})",
                                 "gpu: allocated_peak must be a whole number of bytes from 0, not 1.5"},
                      BadGpuLine{R"({"gpu": {"device": "cuda:0", "allocated_peak": 1, "reserved_peak": 2}})",
                                 R"(gpu: device must be a whole number (a device index) from 0, not "cuda:0")"}));

TEST(EventLineReader, KeepsTheLargestGpuPeaksAndNamesWhatIsWrongWithABadGpuLine) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text =
      "{\"gpu\": {\"device\": 0, \"allocated_peak\": 100, \"reserved_peak\": 400}}\n"
      "{\"gpu\": {\"device\": 0, \"allocated_peak\": 300}}\n"
      "{\"gpu\": {\"device\": 1, \"allocated_peak\": 200, \"reserved_peak\": 300}}\n";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  EventLineReader reader(fds[0]);
  while (reader.next()) {
  }
  ::close(fds[0]);
  const ProgramProgress& progress = reader.progress();
  EXPECT_EQ(progress.gpu.allocated_peak, 200);
  EXPECT_EQ(progress.gpu.reserved_peak, 400);
  EXPECT_EQ(progress.bad_lines, 1);
  EXPECT_THAT(progress.first_bad_line, HasSubstr("(gpu: reserved_peak is missing)"));
}

TEST(ParsePidList, ChildrenFilesAndCgroupProcs) {
  EXPECT_THAT(parse_pid_list("123 456 "), ElementsAre(123, 456));
  EXPECT_THAT(parse_pid_list("7\n8\n9\n"), ElementsAre(7, 8, 9));
  EXPECT_THAT(parse_pid_list(""), ::testing::IsEmpty());
  EXPECT_THAT(parse_pid_list("12 x 13"), ElementsAre(12)) << "a list ends at what is not a pid";
  EXPECT_THAT(parse_pid_list("0 5"), ::testing::IsEmpty());
}

TEST(FindExecutable, SearchesPathAndResolvesRelativeNamesAgainstTheWorkdir) {
  testing::TempDir dir;
  const auto bin = dir.path() / "bin";
  std::filesystem::create_directories(bin);
  const auto tool = bin / "tool";
  std::ofstream(tool) << "#!/bin/sh\n";
  ::chmod(tool.c_str(), 0755);
  const auto plain = bin / "plain";
  std::ofstream(plain) << "data\n";
  ::chmod(plain.c_str(), 0644);

  const std::string path_list = "/nonexistent:" + bin.string();
  EXPECT_EQ(find_executable("tool", path_list, {}), tool.string());
  EXPECT_FALSE(find_executable("plain", path_list, {})) << "not executable";
  EXPECT_FALSE(find_executable("missing", path_list, {}));
  EXPECT_FALSE(find_executable("bin", dir.path().string(), {})) << "a folder is not a program";
  EXPECT_EQ(find_executable("bin/tool", "", dir.path()), (dir.path() / "bin/tool").string());
  EXPECT_EQ(find_executable(tool.string(), "", "/elsewhere"), tool.string());
}

TEST(MergedEnvironment, ReplacesAndAddsNames) {
  const std::vector<std::string> base{"PATH=/bin", "HOME=/root", "OMP_NUM_THREADS=8"};
  const auto merged = merged_environment(base, {{"OMP_NUM_THREADS", "2"}, {"MEMSWEEP_EVENTS_FD", "3"}});
  EXPECT_THAT(merged, ElementsAre("PATH=/bin", "HOME=/root", "OMP_NUM_THREADS=2", "MEMSWEEP_EVENTS_FD=3"));
  EXPECT_EQ(environment_value(merged, "OMP_NUM_THREADS"), "2");
  EXPECT_FALSE(environment_value(merged, "OMP"));
}

// ru_maxrss = max(the rank's image before the exec, the program's): the
// program's only where it is above the image's peak read at the gate.
struct MaxRssCase {
  std::int64_t max_rss;
  std::int64_t pre_exec_peak;
  std::int64_t expected;
};

class ProgramMaxRss : public ::testing::TestWithParam<MaxRssCase> {};

TEST_P(ProgramMaxRss, IsTheProgramsOnlyAboveTheRanksImage) {
  const MaxRssCase& test = GetParam();
  EXPECT_EQ(program_max_rss(test.max_rss, test.pre_exec_peak), test.expected);
}

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
INSTANTIATE_TEST_SUITE_P(
    Table, ProgramMaxRss,
    ::testing::Values(MaxRssCase{12 * kMiB, 12 * kMiB, -1},  // sleep: the rank's 12 MiB image, never the program's
                      MaxRssCase{12 * kMiB + kPreExecGrowthBytes, 12 * kMiB, -1},  // within what the fork may touch
                      MaxRssCase{12 * kMiB + kPreExecGrowthBytes + 1, 12 * kMiB,
                                 12 * kMiB + kPreExecGrowthBytes + 1},  // above it: the program's
                      MaxRssCase{400 * kMiB, 12 * kMiB, 400 * kMiB},    // a real training program
                      MaxRssCase{400 * kMiB, -1, -1},                   // the image unknown: not used
                      MaxRssCase{-1, 12 * kMiB, -1}));                  // no rusage

TEST(OutputTail, TheLastNonBlankLinesBounded) {
  EXPECT_EQ(output_tail("a\nb\n\nc\nd\n\n", 3, 100), "b | c | d");
  EXPECT_EQ(output_tail("only", 3, 100), "only");
  EXPECT_EQ(output_tail("", 3, 100), "");
  EXPECT_EQ(output_tail("Traceback\n  File x\nValueError: é is bad\n", 1, 100), "ValueError: é is bad");
  const std::string cut = output_tail("0123456789é", 1, 4);
  EXPECT_EQ(cut, "…89é") << "cut at the front, never inside a character";
}

ProcessOutcome program_ended(bool exited, int code_or_signal) {
  ProcessOutcome outcome;
  outcome.program = true;
  outcome.end.exited = exited;
  (exited ? outcome.end.exit_status : outcome.end.signal) = code_or_signal;
  outcome.seconds = 3.2;
  outcome.epoch = 2;
  outcome.output_tail = "ValueError: bad shape";
  return outcome;
}

TEST(DecideEnding, AProgramsExitStatusIsItsResult) {
  const TrialEnding ok = decide_ending(program_ended(true, 0));
  EXPECT_EQ(ok.status, TrialStatus::ok);
  EXPECT_EQ(ok.cause, end_cause::kExited);
  EXPECT_EQ(ok.message, "");

  const TrialEnding failed = decide_ending(program_ended(true, 1));
  EXPECT_EQ(failed.status, TrialStatus::failed);
  EXPECT_EQ(failed.message, "the program exited with status 1 at 3.20 s in epoch 2: ValueError: bad shape");

  const TrialEnding crashed = decide_ending(program_ended(false, SIGSEGV));
  EXPECT_EQ(crashed.status, TrialStatus::failed);
  EXPECT_EQ(crashed.cause, end_cause::kCrash);
  EXPECT_THAT(crashed.message, HasSubstr("the program crashed: SIGSEGV"));

  const TrialEnding outside = decide_ending(program_ended(false, SIGTERM));
  EXPECT_EQ(outside.status, TrialStatus::killed) << "a SIGTERM memsweep did not send";

  ProcessOutcome asked = program_ended(false, SIGTERM);
  asked.stop_requested = true;
  const TrialEnding stopped = decide_ending(asked);
  EXPECT_EQ(stopped.status, TrialStatus::interrupted);
  EXPECT_EQ(stopped.cause, end_cause::kStopped);

  ProcessOutcome over = program_ended(false, SIGKILL);
  over.kill = RankKill::timeout;
  over.kill_message = "stopped: no result within its time limit";
  EXPECT_EQ(decide_ending(over).status, TrialStatus::timeout) << "the rank's own kills first";
}

}  // namespace
}  // namespace memsweep::runner::detail
