// The pipe format between a rank and its trial process, alone: every
// message through a real pipe and back, and every way a frame can be bad.

#include "runner/trial_protocol.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <thread>

namespace memsweep::runner_detail {
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

TrialSpec every_field_trial() {
  TrialSpec trial;
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
  trial.repeat = 2;
  trial.memory_plan = MemoryPlan::recompute;
  trial.recompute_every = 3;
  trial.id = trial_id(trial);
  return trial;
}

TEST(TrialProtocol, AJobCarriesEveryFieldOfTheTrial) {
  TrialJob job;
  job.trial = every_field_trial();
  job.threads = 3;
  job.predicted_bytes = 123456789;
  const TrialJob back = decode_job(through_pipe(encode(job)));
  EXPECT_EQ(back.trial.canonical_text(), job.trial.canonical_text());
  EXPECT_EQ(back.trial.id, job.trial.id);
  EXPECT_EQ(back.trial.optimizer.momentum, 0.8) << "a field the canonical text leaves out for adam";
  EXPECT_EQ(back.trial.memory_plan, MemoryPlan::recompute);
  EXPECT_EQ(back.trial.recompute_every, 3);
  EXPECT_EQ(back.threads, 3);
  EXPECT_EQ(back.predicted_bytes, 123456789);

  TrialJob mnist;
  mnist.trial.dataset.kind = DatasetKind::mnist;
  mnist.trial.id = trial_id(mnist.trial);
  EXPECT_EQ(decode_job(through_pipe(encode(mnist))).trial.canonical_text(), mnist.trial.canonical_text());
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
  EXPECT_THAT([&] { decode_job(encode(job)); }, ::testing::ThrowsMessage<ProtocolError>(HasSubstr("memory plan")));
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
  EXPECT_THAT([&] { decode_epoch(cut); }, ::testing::ThrowsMessage<ProtocolError>(HasSubstr("cut short")));
  Frame longer = encode(EpochReport{1, 0.5, 0.5, 1.0});
  longer.payload.push_back(std::byte{0});
  EXPECT_THAT([&] { decode_epoch(longer); }, ::testing::ThrowsMessage<ProtocolError>(HasSubstr("1 bytes left over")));
  Frame bad_outcome = encode(ResultReport{});
  bad_outcome.payload[0] = std::byte{9};
  EXPECT_THAT([&] { decode_result(bad_outcome); },
              ::testing::ThrowsMessage<ProtocolError>(HasSubstr("unknown result outcome 9")));
  // A string announcing more bytes than the frame holds.
  Frame lying = encode(FailureReport{"abc"});
  const std::uint32_t huge = 1000;
  std::memcpy(lying.payload.data(), &huge, sizeof(huge));
  EXPECT_THROW(decode_failure(lying), ProtocolError);
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
  EXPECT_THAT(error_for({kFrameMagic, 2, 13, 0}),
              HasSubstr("a frame of protocol version 2, this memsweep speaks version 1"));
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
}  // namespace memsweep::runner_detail
