#include "sweep/protocol.hpp"

#include "config/search_point_fields.hpp"
#include "sweep/trial_cursor.hpp"

#include "common/field_codec.hpp"

#include <fmt/format.h>

namespace memsweep::sweep::detail {

std::string tag_name(int message_tag) {
  switch (message_tag) {
    case tag::kRequest: return "REQUEST";
    case tag::kSamples: return "SAMPLES";
    case tag::kEpochs: return "EPOCHS";
    case tag::kRecord: return "RECORD";
    case tag::kLeaving: return "LEAVING";
    case tag::kAlive: return "ALIVE";
    case tag::kCompressedSamples: return "COMPRESSED_SAMPLES";
    case tag::kMetrics: return "METRICS";
    case tag::kAssign: return "ASSIGN";
    case tag::kStop: return "STOP";
    case tag::kFinish: return "FINISH";
    default: return "an unknown message (tag " + std::to_string(message_tag) + ")";
  }
}

void throw_bad_payload(const Message& message, std::size_t item_size) {
  throw std::runtime_error("sweep protocol: " + tag_name(message.tag) + " from rank " + std::to_string(message.source) +
                           " holds " + std::to_string(message.bytes.size()) + " bytes, which does not fit " +
                           std::to_string(item_size) + "-byte items (are all ranks running the same memsweep build?)");
}

std::vector<std::byte> record_payload(const TrialRecord& record) {
  const std::span<const std::byte> row = payload_of(record.row);
  const std::span<const std::byte> text = std::as_bytes(std::span<const char>(record.message));
  std::vector<std::byte> bytes(row.begin(), row.end());
  bytes.insert(bytes.end(), text.begin(), text.end());
  return bytes;
}

TrialRecord record_from_payload(const Message& message) {
  if (message.bytes.size() < sizeof(TrialRow)) throw_bad_payload(message, sizeof(TrialRow));
  TrialRecord record;
  std::memcpy(&record.row, message.bytes.data(), sizeof(TrialRow));
  const auto* text = reinterpret_cast<const char*>(message.bytes.data() + sizeof(TrialRow));
  record.message.assign(text, message.bytes.size() - sizeof(TrialRow));
  return record;
}

std::vector<std::byte> compressed_chunk_payload(const CompressedSampleChunk& chunk) {
  const std::span<const std::byte> head = payload_of(chunk.info);
  std::vector<std::byte> bytes;
  bytes.reserve(head.size() + chunk.bytes.size());
  bytes.insert(bytes.end(), head.begin(), head.end());
  bytes.insert(bytes.end(), chunk.bytes.begin(), chunk.bytes.end());
  return bytes;
}

CompressedSampleChunk compressed_chunk_from_payload(const Message& message) {
  if (message.bytes.size() < sizeof(CompressedChunkInfo)) throw_bad_payload(message, sizeof(CompressedChunkInfo));
  CompressedSampleChunk chunk;
  std::memcpy(&chunk.info, message.bytes.data(), sizeof(CompressedChunkInfo));
  chunk.bytes.assign(message.bytes.begin() + sizeof(CompressedChunkInfo), message.bytes.end());
  return chunk;
}

namespace {

// The session messages' fields, each struct's listed once: encode() and
// the decode_*() functions walk the same lists (common/field_codec.hpp).
struct SessionFields : config::SearchPointFields {
  using config::SearchPointFields::operator();
  constexpr void operator()(FieldsOf<Assignment> auto& assignment, auto&& each) const {
    each("index", assignment.index);
    each("attempt", assignment.attempt);
    each("probe", assignment.probe);
  }
  constexpr void operator()(FieldsOf<StepOutcome> auto& outcome, auto&& each) const {
    each("status", outcome.status);
    each("message", outcome.message);
  }
  constexpr void operator()(FieldsOf<RunRowMessage> auto& message, auto&& each) const {
    each("outcome", message.outcome);
    each("run", message.run);  // plain bytes: trivially copyable, and every rank runs the same build
  }
  constexpr void operator()(FieldsOf<SetupMessage> auto& message, auto&& each) const {
    each("outcome", message.outcome);
    each("run_index", message.run_index);
    each("counter_columns", message.counter_columns);
  }
  constexpr void operator()(FieldsOf<CounterRequest> auto& column, auto&& each) const {
    each("name", column.name);
    each("source", column.source);
  }
  bool known(CounterSourceChoice source) const {
    return source >= CounterSourceChoice::automatic && source <= CounterSourceChoice::kernel;
  }
};
// A member added to a message without its line above fails to compile.
static_assert(lists_every_member<Assignment>(SessionFields{}));
static_assert(lists_every_member<StepOutcome>(SessionFields{}));
static_assert(lists_every_member<RunRowMessage>(SessionFields{}));
static_assert(lists_every_member<SetupMessage>(SessionFields{}));
static_assert(lists_every_member<CounterRequest>(SessionFields{}));

template <typename Message>
std::string encode_message(const Message& message) {
  const std::vector<std::byte> bytes = encode_fields(message, SessionFields{});
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A message that does not decode is a protocol error like the others of
// this file, and most likely a rank of another build.
template <typename Message>
Message decode_message(std::string_view bytes, std::string_view name) {
  try {
    return decode_fields<Message>(std::as_bytes(std::span(bytes.data(), bytes.size())), name, SessionFields{});
  } catch (const FieldCodecError& error) {
    throw std::runtime_error(
        fmt::format("sweep protocol: {} (are all ranks running the same memsweep build?)", error.what()));
  }
}

}  // namespace

std::string encode(const StepOutcome& outcome) { return encode_message(outcome); }
std::string encode(const RunRowMessage& message) { return encode_message(message); }
std::string encode(const SetupMessage& message) { return encode_message(message); }
std::string encode(const Assignment& assignment) { return encode_message(assignment); }

StepOutcome decode_step_outcome(std::string_view bytes) {
  return decode_message<StepOutcome>(bytes, "final status message");
}

RunRowMessage decode_run_row_message(std::string_view bytes) {
  return decode_message<RunRowMessage>(bytes, "run row message");
}

SetupMessage decode_setup_message(std::string_view bytes) {
  return decode_message<SetupMessage>(bytes, "setup message");
}

Assignment decode_assignment(std::string_view bytes) { return decode_message<Assignment>(bytes, "assignment"); }

Assignment assignment_of(const Job& job) {
  return Assignment{.index = job.attempt.index, .attempt = job.attempt.attempt, .probe = job.trial.search};
}

TrialSpec assigned_trial(const Assignment& assignment, const SweepTrials& trials, const SearchSpec* search) {
  if (assignment.index >= trials.size())
    throw std::runtime_error("sweep protocol: rank 0 assigned trial " + std::to_string(assignment.index) + " of " +
                             std::to_string(trials.size()));
  // Made here from its position: no rank holds the sweep's list.
  TrialSpec trial = trials[assignment.index];
  if (!assignment.probe) return trial;
  if (search == nullptr)
    throw std::runtime_error("sweep protocol: rank 0 assigned a search's probe to a sweep without one");
  return search_trial(trial, *search, *assignment.probe);
}

}  // namespace memsweep::sweep::detail
