#pragma once
// The pipes between a rank and its trial process (`memsweep trial`): the
// rank sends the job and the go-ahead, the process reports that it is
// ready, its phases, its epochs and its result. docs/runner.md draws it.
//
// A frame is a 12-byte header (magic, format version, type, payload length,
// in the host's byte order: both ends run on one host) and a payload of
// fields written one after the other by common/field_codec.hpp: integers
// and doubles as their bytes, strings and lists with a 64-bit length first.
// Both ends are the same binary, but the version is checked anyway: a frame
// of another version is an error, never a guess.

#include "memsweep/config.hpp"

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner::detail {

inline constexpr std::uint32_t kFrameMagic = 0x5054534DU;  // "MSTP" in memory on little-endian hosts
inline constexpr std::uint16_t kProtocolVersion = 2;       // 2: 64-bit lengths, every TrialSpec field
// A job carries one trial; epochs and results are a few hundred bytes.
inline constexpr std::uint32_t kMaxPayloadBytes = 1U << 20;

// The descriptors a trial process finds its pipes and dataset at.
inline constexpr int kControlFd = 3;  // rank -> trial process
inline constexpr int kReportFd = 4;   // trial process -> rank
inline constexpr int kDatasetFd = 5;  // the shared dataset (shared_dataset.hpp), read-only

// The rank asks a training process to stop at its next step (a stop signal
// reached the rank) with this signal: it needs no thread in the trial
// process to listen for it.
inline constexpr int kTrialStopSignal = SIGUSR2;

enum class FrameType : std::uint16_t {
  // rank -> trial process
  job = 1,   // TrialJob
  go = 2,    // empty: start training (the rank has read the baseline and opened the counters)
  exit = 3,  // empty: end now (after the result, or instead of go)
  // trial process -> rank
  ready = 11,    // ReadyReport: the data are mapped and touched, nothing of the trial is built
  phase = 12,    // PhaseReport: a phase (training or evaluating epoch E) begins
  epoch = 13,    // EpochReport
  result = 14,   // ResultReport: training ended (completed, diverged or stopped)
  failure = 15,  // FailureReport: the trial could not run or threw
};
std::string_view frame_type_name(FrameType type);

// A frame that cannot be read: wrong magic or version, a payload too long
// or cut short, a field past its end, an unknown type or enum value. Its
// message names the frame and the field.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Frame {
  FrameType type = FrameType::job;
  std::vector<std::byte> payload;
};

// ---- messages -------------------------------------------------------------------

struct TrialJob {
  TrialSpec trial;  // every field; its id is checked against them when decoded
  std::int32_t threads = 1;
  std::int64_t predicted_bytes = -1;  // for an out-of-memory message; -1: no estimate
};

struct ReadyReport {
  std::int32_t pid = 0;
  std::uint64_t train_examples = 0;
  std::uint64_t test_examples = 0;
  std::uint64_t dataset_bytes = 0;  // mapped
};

struct PhaseReport {
  bool evaluating = false;  // false: training
  std::int32_t epoch = 0;
};

struct EpochReport {
  std::int32_t epoch = 0;
  double train_loss = 0.0;
  double test_accuracy = 0.0;
  double seconds = 0.0;
};

enum class ResultOutcome : std::uint8_t { completed = 0, diverged = 1, stopped = 2 };

struct ResultReport {
  ResultOutcome outcome = ResultOutcome::completed;
  std::string message;  // why it diverged or stopped
  std::int32_t epochs_done = 0;
  double final_train_loss = -1.0;
  double test_accuracy = -1.0;
};

struct FailureReport {
  std::string message;  // one line
};

Frame encode(const TrialJob& job);
Frame encode(const ReadyReport& report);
Frame encode(const PhaseReport& report);
Frame encode(const EpochReport& report);
Frame encode(const ResultReport& report);
Frame encode(const FailureReport& report);
Frame empty_frame(FrameType type);

// Each throws ProtocolError when the frame is of another type or its
// payload does not hold exactly that message.
TrialJob decode_job(const Frame& frame);
ReadyReport decode_ready(const Frame& frame);
PhaseReport decode_phase(const Frame& frame);
EpochReport decode_epoch(const Frame& frame);
ResultReport decode_result(const Frame& frame);
FailureReport decode_failure(const Frame& frame);

// ---- on a descriptor ---------------------------------------------------------------

// The frame's bytes, header first.
std::vector<std::byte> frame_bytes(const Frame& frame);

// Writes the whole frame (retrying short writes and EINTR). False when the
// other end is gone (EPIPE) or another write error happened.
bool write_frame(int fd, const Frame& frame);

// Where a running trial's reports come from, as frames: memsweep's own
// trial process writes them (FrameReader); a program's events lines are
// turned into them (program_events.hpp).
class ReportSource {
 public:
  virtual ~ReportSource() = default;
  // The next complete report, reading what is available; nullopt when none
  // is complete yet (or at the end: see at_end()).
  virtual std::optional<Frame> next() = 0;
  // The writer closed its end.
  virtual bool at_end() const = 0;
  virtual int fd() const = 0;
};

// Reads frames from a descriptor as bytes arrive, without blocking when
// asked not to: the rank polls the report pipe alongside its other work.
class FrameReader final : public ReportSource {
 public:
  explicit FrameReader(int fd) : fd_(fd) {}
  // On a blocking descriptor next() waits for a whole frame (or the end).
  // Throws ProtocolError for a bad frame. Use one reader per descriptor: it
  // keeps bytes read past a frame.
  std::optional<Frame> next() override;
  // A partial frame left at the end is an error.
  bool at_end() const override { return at_end_; }
  int fd() const override { return fd_; }

 private:
  std::optional<Frame> take_buffered();
  int fd_;
  std::vector<std::byte> buffer_;
  bool at_end_ = false;
};

}  // namespace memsweep::runner::detail
