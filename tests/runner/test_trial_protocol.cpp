// The pipe format between a rank and its trial process, alone: every
// message through a real pipe and back, and every way a frame can be bad.

#include "runner/trial_protocol.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <thread>
#include <utility>

namespace memsweep::runner::detail {
namespace {

using ::testing::HasSubstr;

class PipeEnds {
 public:
  PipeEnds() {
    if (::pipe2(fds_.data(), O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  }
  ~PipeEnds() {
    close_write();
    close_read();
  }
  PipeEnds(const PipeEnds&) = delete;
  PipeEnds& operator=(const PipeEnds&) = delete;
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_write() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }
  void close_read() {
    if (fds_[0] >= 0) ::close(fds_[0]);
    fds_[0] = -1;
  }
  void write_raw(const void* bytes, std::size_t size) const {
    ASSERT_EQ(::write(fds_[1], bytes, size), static_cast<ssize_t>(size));
  }

 private:
  std::array<int, 2> fds_{-1, -1};
};

Frame through_pipe(const Frame& frame) {
  PipeEnds pipe;
  EXPECT_TRUE(write_frame(pipe.write_end(), frame));
  FrameReader reader(pipe.read_end());
  std::optional<Frame> got = reader.next();
  EXPECT_TRUE(got.has_value());
  return got ? *got : Frame{};
}

// That each list of the protocol names every member of its struct is
// checked where the lists are, at compile time (trial_protocol.cpp's
// static_asserts). Set a new field in every_field_trial() and compare it in
// expect_same_trial(), so that AJobCarriesEveryFieldOfTheTrial sees it travel.

// Every field of TrialSpec away from its default, nested ones included:
// a field the job's list leaves out comes back as its default and fails
// AJobCarriesEveryFieldOfTheTrial.
TrialSpec every_field_trial() {
  TrialSpec trial;
  trial.repeat = 2;
  trial.plan_index = 41;
  trial.dataset.kind = DatasetKind::synthetic;
  trial.dataset.synthetic = SyntheticSpec{{3, 16, 12}, 7, 321, 45, 0.25, 99};
  trial.model = ModelKind::cnn;
  trial.channels = {8, 16};
  trial.optimizer = OptimizerSpec{OptimizerKind::adam, 0.8, 0.85, 0.995, 1e-7};
  trial.learning_rate = 0.0123456789;
  trial.epochs = 4;
  trial.batch_size = 24;
  trial.hidden = {100, 50, 25};
  trial.seed = 0xFEEDFACECAFEBEEFULL;
  trial.memory_plan = MemoryPlan::recompute;
  trial.recompute_every = 3;
  trial.mem_budget_bytes = 3ULL << 30;
  trial.timeout_seconds = 12.5;
  trial.gpus_per_trial = 2;
  trial.gpu_limit_bytes = 40ULL << 30;
  trial.origin = "sweep.toml:12 grid[3]";
  trial.program = ProgramSpec{.name = "torch_mnist",
                              .command = {"python3", "train.py", "--lr={learning_rate}"},
                              .env = {{"OMP_NUM_THREADS", "2"}, {"SEED", "{seed}"}},
                              .workdir = "/tmp/work",
                              .place = "sweep.toml:4: program",
                              .fields = {"batch_size", "learning_rate"},
                              .uses_data_dir = true,
                              .metrics = {{"valid_ppl", "valid ppl +([0-9.]+)", "sweep.toml:5: programs.p.metrics"}},
                              .uses_trial_dir = true,
                              .uses_gpu = true,
                              .keep_trial_dir = KeepTrialDir::always,
                              .log_limit_bytes = 12345};
  trial.params = {{"dropout", ParamValue{"0.25", "0.25"}}, {"widths", ParamValue{"16,32", "[16,32]"}}};
  trial.search =
      SearchPoint{.search = 1, .probe = 5, .value = 96, .limit_bytes = 1ULL << 31, .full = false, .gpu = true};
  trial.id = trial_id(trial);
  return trial;
}

// Field by field, written out rather than walked by the codec's own list,
// so that a field the list misses is caught here.
void expect_same_trial(const TrialSpec& got, const TrialSpec& sent) {
  EXPECT_EQ(got.id, sent.id);
  EXPECT_EQ(got.repeat, sent.repeat);
  EXPECT_EQ(got.plan_index, sent.plan_index);
  EXPECT_EQ(got.dataset.kind, sent.dataset.kind);
  EXPECT_EQ(got.dataset.synthetic, sent.dataset.synthetic);  // shape, classes, sizes, noise, seed
  EXPECT_EQ(got.model, sent.model);
  EXPECT_EQ(got.channels, sent.channels);
  EXPECT_EQ(got.optimizer.kind, sent.optimizer.kind);
  EXPECT_EQ(got.optimizer.momentum, sent.optimizer.momentum);
  EXPECT_EQ(got.optimizer.beta1, sent.optimizer.beta1);
  EXPECT_EQ(got.optimizer.beta2, sent.optimizer.beta2);
  EXPECT_EQ(got.optimizer.epsilon, sent.optimizer.epsilon);
  EXPECT_EQ(got.learning_rate, sent.learning_rate);
  EXPECT_EQ(got.epochs, sent.epochs);
  EXPECT_EQ(got.batch_size, sent.batch_size);
  EXPECT_EQ(got.hidden, sent.hidden);
  EXPECT_EQ(got.seed, sent.seed);
  EXPECT_EQ(got.memory_plan, sent.memory_plan);
  EXPECT_EQ(got.recompute_every, sent.recompute_every);
  EXPECT_EQ(got.mem_budget_bytes, sent.mem_budget_bytes);
  EXPECT_EQ(got.timeout_seconds, sent.timeout_seconds);
  EXPECT_EQ(got.origin, sent.origin);
  ASSERT_EQ(got.program.has_value(), sent.program.has_value());
  if (sent.program) {
    EXPECT_EQ(got.program->name, sent.program->name);
    EXPECT_EQ(got.program->command, sent.program->command);
    EXPECT_EQ(got.program->env, sent.program->env);
    EXPECT_EQ(got.program->workdir, sent.program->workdir);
    EXPECT_EQ(got.program->place, sent.program->place);
    EXPECT_EQ(got.program->fields, sent.program->fields);
    EXPECT_EQ(got.program->uses_data_dir, sent.program->uses_data_dir);
    ASSERT_EQ(got.program->metrics.size(), sent.program->metrics.size());
    for (std::size_t i = 0; i < sent.program->metrics.size(); ++i) {
      EXPECT_EQ(got.program->metrics[i].name, sent.program->metrics[i].name);
      EXPECT_EQ(got.program->metrics[i].pattern, sent.program->metrics[i].pattern);
      EXPECT_EQ(got.program->metrics[i].place, sent.program->metrics[i].place);
    }
    EXPECT_EQ(got.program->uses_trial_dir, sent.program->uses_trial_dir);
    EXPECT_EQ(got.program->uses_gpu, sent.program->uses_gpu);
    EXPECT_EQ(got.program->keep_trial_dir, sent.program->keep_trial_dir);
    EXPECT_EQ(got.program->log_limit_bytes, sent.program->log_limit_bytes);
  }
  ASSERT_EQ(got.params.size(), sent.params.size());
  for (std::size_t i = 0; i < sent.params.size(); ++i) {
    EXPECT_EQ(got.params[i].first, sent.params[i].first);
    EXPECT_EQ(got.params[i].second.text, sent.params[i].second.text);
    EXPECT_EQ(got.params[i].second.json, sent.params[i].second.json);
  }
  ASSERT_EQ(got.search.has_value(), sent.search.has_value());
  if (sent.search) {
    EXPECT_EQ(got.search->search, sent.search->search);
    EXPECT_EQ(got.search->probe, sent.search->probe);
    EXPECT_EQ(got.search->value, sent.search->value);
    EXPECT_EQ(got.search->limit_bytes, sent.search->limit_bytes);
    EXPECT_EQ(got.search->full, sent.search->full);
    EXPECT_EQ(got.search->gpu, sent.search->gpu);
  }
  EXPECT_EQ(got.gpus_per_trial, sent.gpus_per_trial);
  EXPECT_EQ(got.gpu_limit_bytes, sent.gpu_limit_bytes);
}

TEST(TrialProtocol, AJobCarriesEveryFieldOfTheTrial) {
  TrialJob job;
  job.trial = every_field_trial();
  job.threads = 3;
  job.predicted_bytes = 123456789;
  const TrialJob back = decode_job(through_pipe(encode(job)));  // decoding checks the id against the fields
  expect_same_trial(back.trial, job.trial);
  EXPECT_EQ(back.trial.canonical_text(), job.trial.canonical_text());
  EXPECT_EQ(back.threads, 3);
  EXPECT_EQ(back.predicted_bytes, 123456789);

  // And the defaults: no program, no search, an empty list.
  TrialJob mnist;
  mnist.trial.dataset.kind = DatasetKind::mnist;
  mnist.trial.id = trial_id(mnist.trial);
  expect_same_trial(decode_job(through_pipe(encode(mnist))).trial, mnist.trial);
}

TEST(TrialProtocol, ACutJobNamesTheFieldItEndsIn) {
  TrialJob job;
  job.trial = every_field_trial();
  Frame cut = encode(job);
  cut.payload.resize(cut.payload.size() - sizeof(job.predicted_bytes) - sizeof(job.threads) - 1);
  EXPECT_THAT([&] { decode_job(cut); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("ends inside its field trial.search.gpu")));
}

TEST(TrialProtocol, AJobCarriesEachMemoryPlan) {
  for (const MemoryPlan plan : {MemoryPlan::keep, MemoryPlan::reuse, MemoryPlan::recompute}) {
    TrialJob job;
    job.trial = every_field_trial();
    job.trial.memory_plan = plan;
    job.trial.id = trial_id(job.trial);
    const TrialJob back = decode_job(through_pipe(encode(job)));
    EXPECT_EQ(back.trial.memory_plan, plan);
    EXPECT_EQ(back.trial.id, job.trial.id);
    // The length travels under every plan, as the sweep file gave it.
    EXPECT_EQ(back.trial.recompute_every, 3);
  }
  // A plan the other end does not know is refused, not trained as another.
  TrialJob job;
  job.trial = every_field_trial();
  job.trial.memory_plan = static_cast<MemoryPlan>(7);
  EXPECT_THAT([&] { decode_job(encode(job)); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("unknown value 7 in its field trial.memory_plan")));
}

TEST(TrialProtocol, AJobWhoseFieldsDoNotMatchItsIdIsRefused) {
  TrialJob job;
  job.trial = every_field_trial();
  job.trial.epochs = 5;  // the id is still the one of 4 epochs
  EXPECT_THAT([&] { decode_job(encode(job)); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("arrived with fields whose id is")));
  job.trial = every_field_trial();
  job.trial.recompute_every = 4;  // the id is still the one of segments of 3
  EXPECT_THAT([&] { decode_job(encode(job)); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("arrived with fields whose id is")));
}

TEST(TrialProtocol, ReportsRoundTrip) {
  const ReadyReport ready = decode_ready(through_pipe(encode(ReadyReport{4242, 60000, 10000, 219520000})));
  EXPECT_EQ(ready.pid, 4242);
  EXPECT_EQ(ready.train_examples, 60000U);
  EXPECT_EQ(ready.test_examples, 10000U);
  EXPECT_EQ(ready.dataset_bytes, 219520000U);

  const PhaseReport phase = decode_phase(through_pipe(encode(PhaseReport{true, 7})));
  EXPECT_TRUE(phase.evaluating);
  EXPECT_EQ(phase.epoch, 7);

  const EpochReport epoch = decode_epoch(through_pipe(encode(EpochReport{3, 0.125, 0.875, 1.5})));
  EXPECT_EQ(epoch.epoch, 3);
  EXPECT_EQ(epoch.train_loss, 0.125);
  EXPECT_EQ(epoch.test_accuracy, 0.875);
  EXPECT_EQ(epoch.seconds, 1.5);

  const ResultReport result =
      decode_result(through_pipe(encode(ResultReport{ResultOutcome::diverged, "loss became nan", 2, -1.0, 0.5})));
  EXPECT_EQ(result.outcome, ResultOutcome::diverged);
  EXPECT_EQ(result.message, "loss became nan");
  EXPECT_EQ(result.epochs_done, 2);
  EXPECT_EQ(result.test_accuracy, 0.5);

  const std::string long_message(5000, 'x');  // longer than a results-file column: the rank cuts it
  EXPECT_EQ(decode_failure(through_pipe(encode(FailureReport{long_message}))).message, long_message);
  EXPECT_EQ(through_pipe(empty_frame(FrameType::go)).type, FrameType::go);
  EXPECT_TRUE(through_pipe(empty_frame(FrameType::exit)).payload.empty());
}

TEST(TrialProtocol, DecodingTheWrongTypeOrAShortOrLongPayloadFails) {
  EXPECT_THAT(
      [] {
        decode_epoch(encode(PhaseReport{false, 1}));
      },
      ::testing::ThrowsMessage<ProtocolError>(HasSubstr("expected a epoch frame, got a phase frame")));
  Frame cut = encode(EpochReport{1, 0.5, 0.5, 1.0});
  cut.payload.pop_back();
  EXPECT_THAT([&] { decode_epoch(cut); }, ::testing::ThrowsMessage<ProtocolError>(
                                              HasSubstr("the epoch frame (27 bytes): ends inside its field seconds")));
  Frame longer = encode(EpochReport{1, 0.5, 0.5, 1.0});
  longer.payload.push_back(std::byte{0});
  EXPECT_THAT([&] { decode_epoch(longer); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("1 bytes left over after its last field seconds")));
  Frame bad_outcome = encode(ResultReport{});
  bad_outcome.payload[0] = std::byte{9};
  EXPECT_THAT([&] { decode_result(bad_outcome); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("unknown value 9 in its field outcome")));
  Frame bad_phase = encode(PhaseReport{true, 1});
  bad_phase.payload[0] = std::byte{2};
  EXPECT_THAT([&] { decode_phase(bad_phase); }, ::testing::ThrowsMessage<ProtocolError>(
                                                    HasSubstr("its field evaluating holds 2, neither false nor true")));
  // A string announcing more bytes than the frame holds.
  Frame lying = encode(FailureReport{"abc"});
  const std::uint64_t huge = 1000;
  std::memcpy(lying.payload.data(), &huge, sizeof(huge));
  EXPECT_THAT([&] { decode_failure(lying); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("its field message counts 1000 items")));
}

TEST(TrialProtocol, FramesSplitAcrossReadsAndSeveralInOneReadAreReassembled) {
  PipeEnds pipe;
  ::fcntl(pipe.read_end(), F_SETFL, O_NONBLOCK);
  FrameReader reader(pipe.read_end());
  const std::vector<std::byte> first = frame_bytes(encode(PhaseReport{false, 1}));
  const std::vector<std::byte> second = frame_bytes(encode(EpochReport{1, 0.5, 0.25, 2.0}));
  pipe.write_raw(first.data(), 5);
  EXPECT_FALSE(reader.next()) << "5 bytes are not a frame";
  EXPECT_FALSE(reader.at_end());
  std::vector<std::byte> rest(first.begin() + 5, first.end());
  rest.insert(rest.end(), second.begin(), second.end());
  pipe.write_raw(rest.data(), rest.size());
  const std::optional<Frame> a = reader.next();
  const std::optional<Frame> b = reader.next();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(decode_phase(*a).epoch, 1);
  EXPECT_EQ(decode_epoch(*b).test_accuracy, 0.25);
  EXPECT_FALSE(reader.next());
  pipe.close_write();
  EXPECT_FALSE(reader.next());
  EXPECT_TRUE(reader.at_end());
}

TEST(TrialProtocol, AWriterThatStopsInTheMiddleOfAFrameIsAnError) {
  PipeEnds pipe;
  const std::vector<std::byte> bytes = frame_bytes(encode(EpochReport{}));
  pipe.write_raw(bytes.data(), bytes.size() - 3);
  pipe.close_write();
  FrameReader reader(pipe.read_end());
  EXPECT_THAT([&] { reader.next(); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("closed the pipe in the middle of a frame")));
}

// The header: magic, version, type, length.
struct RawHeader {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t type;
  std::uint32_t length;
};

std::string error_for(const RawHeader& header) {
  PipeEnds pipe;
  pipe.write_raw(&header, sizeof(header));
  pipe.close_write();
  FrameReader reader(pipe.read_end());
  try {
    reader.next();
  } catch (const ProtocolError& error) {
    return error.what();
  }
  return "no error";
}

TEST(TrialProtocol, ABadHeaderIsRefusedWithItsReason) {
  EXPECT_THAT(error_for({0x12345678U, kProtocolVersion, 13, 0}), HasSubstr("not a memsweep trial frame"));
  EXPECT_THAT(error_for({kFrameMagic, static_cast<std::uint16_t>(kProtocolVersion + 1), 13, 0}),
              HasSubstr(fmt::format("a frame of protocol version {}, this memsweep speaks version {}",
                                    kProtocolVersion + 1, kProtocolVersion)));
  EXPECT_THAT(error_for({kFrameMagic, kProtocolVersion, 77, 0}), HasSubstr("a frame of unknown type 77"));
  EXPECT_THAT(error_for({kFrameMagic, kProtocolVersion, 13, kMaxPayloadBytes + 1}),
              HasSubstr("more than the 1048576 a frame may hold"));
}

// A rank writing to a trial process that has just died must not die of
// SIGPIPE: the write fails, and the signal is neither delivered nor left
// pending (this test process has SIGPIPE's default action: death).
TEST(TrialProtocol, WritingToAClosedPipeFailsWithoutKillingTheWriter) {
  PipeEnds pipe;
  pipe.close_read();
  EXPECT_FALSE(write_frame(pipe.write_end(), empty_frame(FrameType::go)));
  sigset_t pending;
  ::sigpending(&pending);
  EXPECT_FALSE(::sigismember(&pending, SIGPIPE));
}

}  // namespace
}  // namespace memsweep::runner::detail
