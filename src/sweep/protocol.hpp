#pragma once
// The messages between rank 0 (the coordinator) and the workers, and their
// payloads: plain bytes of trivially copyable structs and rows (results.hpp).
// Every rank runs the same build, so the layouts agree; a payload whose size
// does not fit is a protocol error (a mixed installation), not a guess.
// docs/sweep.md draws the exchange.

#include "memsweep/error.hpp"
#include "memsweep/job_source.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sweep.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace memsweep::sweep::detail {

namespace tag {
// worker -> rank 0
inline constexpr int kRequest = 1;  // empty: "give me a trial"
inline constexpr int kSamples = 2;  // SampleRow[]: a running trial's samples
inline constexpr int kEpochs = 3;   // EpochRow[]: a running trial's finished epochs
inline constexpr int kRecord = 4;   // TrialRecord: the final row, then the whole message; the worker is free again
inline constexpr int kLeaving = 5;  // empty: the worker saw the stop signal and takes no more trials
inline constexpr int kAlive = 6;    // empty: a trial runs and had nothing to send for kAliveInterval
// CompressedChunkInfo, then the chunk's bytes: a whole /samples chunk of a
// running trial's samples, compressed by the worker (sample_chunk.hpp)
inline constexpr int kCompressedSamples = 7;
inline constexpr int kMetrics = 8;  // MetricRow[]: a running program trial's metrics (/metrics)
// rank 0 -> worker
inline constexpr int kAssign = 11;  // Assignment
inline constexpr int kStop = 12;    // empty: interrupt the running trial
inline constexpr int kFinish = 13;  // empty: no more trials, return (always the last message to a worker)
}  // namespace tag

std::string tag_name(int tag);

// Sent through the field codec (encode, decode_assignment), as the trial
// protocol sends a job: a probe travels as the SearchPoint it is.
struct Assignment {
  std::uint64_t index = 0;  // into the trials every rank holds (a search's: its configurations)
  std::int32_t attempt = 0;
  // A search's probe; none for a plain trial. The worker makes the probe's
  // trial from its configuration, as rank 0 did (search_trial()).
  std::optional<SearchPoint> probe{};
};

Assignment assignment_of(const Job& job);
// The trial `assignment` names, made from `trials` (and `search`, for a probe).
TrialSpec assigned_trial(const Assignment& assignment, const SweepTrials& trials, const SearchSpec* search);

// Rows per SAMPLES message: large enough that a message's fixed cost is
// small next to its rows, small enough to stay a modest buffer (224-byte
// rows: 448 KiB).
inline constexpr std::size_t kRowsPerMessage = 2048;

template <typename T>
std::span<const std::byte> payload_of(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  return std::as_bytes(std::span<const T, 1>(&value, 1));
}

template <typename T>
std::span<const std::byte> payload_of(std::span<const T> rows) {
  static_assert(std::is_trivially_copyable_v<T>);
  return std::as_bytes(rows);
}

[[noreturn]] void throw_bad_payload(const Message& message, std::size_t item_size);

// Copies the bytes into objects rather than casting: the received buffer
// holds no T objects, and a copy of a message is cheap next to writing it.
template <typename T>
T payload_as(const Message& message) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (message.bytes.size() != sizeof(T)) throw_bad_payload(message, sizeof(T));
  T value;
  std::memcpy(&value, message.bytes.data(), sizeof(T));
  return value;
}

template <typename T>
void payload_rows(const Message& message, std::vector<T>& rows) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (message.bytes.size() % sizeof(T) != 0) throw_bad_payload(message, sizeof(T));
  rows.resize(message.bytes.size() / sizeof(T));
  if (!rows.empty()) std::memcpy(rows.data(), message.bytes.data(), message.bytes.size());
}

// RECORD's payload: the TrialRow's bytes, then the message's bytes (any
// length: a message is not cut to fit a fixed size on its way to rank 0).
std::vector<std::byte> record_payload(const TrialRecord& record);
// Throws (a protocol error) for a payload shorter than a TrialRow.
TrialRecord record_from_payload(const Message& message);

// COMPRESSED_SAMPLES' payload: the chunk's head, then its bytes. Throws (a
// protocol error) for a payload shorter than the head.
std::vector<std::byte> compressed_chunk_payload(const CompressedSampleChunk& chunk);
CompressedSampleChunk compressed_chunk_from_payload(const Message& message);

inline void send_empty(Communicator& comm, int destination, int message_tag) {
  comm.send(destination, message_tag, std::span<const std::byte>());
}

// ---- the session's messages (session.cpp) ---------------------------------------
// Rank 0 broadcasts each at a step where every rank waits for its answer.
// Encoded as fields in order by common/field_codec.hpp (integers as their
// bytes, strings and lists with a 64-bit length first); decoding a message
// of the wrong length or with an unknown value throws a protocol error
// naming the message and the field.

// How a step went on rank 0: ok, or the status every rank exits with and
// why (rank 0 prints the message, once).
struct StepOutcome {
  std::int32_t status = exit_status::kOk;
  std::string message;
  bool ok() const { return status == exit_status::kOk; }
  bool operator==(const StepOutcome&) const = default;
};

// Rank 0's decision on this run's row of /runs (what it measures with).
struct RunRowMessage {
  StepOutcome outcome;
  RunRow run;  // plain bytes: trivially copyable, and every rank runs the same build
};

// The results file is ready (or not): what every rank's rows carry.
struct SetupMessage {
  StepOutcome outcome;
  std::int32_t run_index = 0;                   // this invocation's row of /runs
  std::vector<CounterRequest> counter_columns;  // each from the source that served it on rank 0
};

std::string encode(const StepOutcome& outcome);  // also the final status, after the sweep
std::string encode(const RunRowMessage& message);
std::string encode(const SetupMessage& message);
std::string encode(const Assignment& assignment);
Assignment decode_assignment(std::string_view bytes);
StepOutcome decode_step_outcome(std::string_view bytes);
RunRowMessage decode_run_row_message(std::string_view bytes);
SetupMessage decode_setup_message(std::string_view bytes);

}  // namespace memsweep::sweep::detail
