#include "sweep/protocol.hpp"
#include "sweep/trial_cursor.hpp"

#include <fmt/format.h>

namespace memsweep::detail {

std::string tag_name(int message_tag) {
  switch (message_tag) {
    case tag::kRequest: return "REQUEST";
    case tag::kSamples: return "SAMPLES";
    case tag::kEpochs: return "EPOCHS";
    case tag::kRecord: return "RECORD";
    case tag::kLeaving: return "LEAVING";
    case tag::kAlive: return "ALIVE";
    case tag::kCompressedSamples: return "COMPRESSED_SAMPLES";
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

// Fields appended in order: integers as their bytes, strings after their length.
class FieldWriter {
 public:
  template <typename T>
  FieldWriter& add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
    return *this;
  }
  FieldWriter& add_text(std::string_view text) {
    add(static_cast<std::uint64_t>(text.size()));
    bytes_.append(text);
    return *this;
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// The same fields read back; a message that ends early or goes on past its
// last field is a protocol error that names it and the field.
class FieldReader {
 public:
  FieldReader(std::string_view bytes, std::string_view message) : bytes_(bytes), message_(message) {}

  template <typename T>
  T take(std::string_view field) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), field);
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::string take_text(std::string_view field) {
    const auto length = take<std::uint64_t>(field);
    need(length, field);
    std::string text(bytes_.substr(offset_, length));
    offset_ += length;
    return text;
  }
  void expect_end() const {
    if (offset_ != bytes_.size()) fail(fmt::format("{} bytes left over after its last field", bytes_.size() - offset_));
  }
  [[noreturn]] void fail(std::string_view what) const {
    throw std::runtime_error(
        fmt::format("sweep protocol: the {} message ({} bytes): {} (are all ranks running the "
                    "same memsweep build?)",
                    message_, bytes_.size(), what));
  }

 private:
  void need(std::uint64_t length, std::string_view field) const {
    if (length > bytes_.size() - offset_) fail(fmt::format("ends inside its field {}", field));
  }

  std::string_view bytes_;
  std::string_view message_;
  std::size_t offset_ = 0;
};

void add_outcome(FieldWriter& writer, const StepOutcome& outcome) {
  writer.add(outcome.status).add_text(outcome.message);
}

StepOutcome take_outcome(FieldReader& reader) {
  StepOutcome outcome;
  outcome.status = reader.take<std::int32_t>("status");
  outcome.message = reader.take_text("message");
  return outcome;
}

CounterSourceChoice counter_source_from(const FieldReader& reader, const std::string& name) {
  const std::optional<CounterSourceChoice> source = parse_counter_source(name);
  if (!source) reader.fail(fmt::format("unknown counter source \"{}\"", name));
  return *source;
}

}  // namespace

std::string encode(const StepOutcome& outcome) {
  FieldWriter writer;
  add_outcome(writer, outcome);
  return writer.take();
}

std::string encode(const RunRowMessage& message) {
  FieldWriter writer;
  add_outcome(writer, message.outcome);
  writer.add(message.run);
  return writer.take();
}

std::string encode(const SetupMessage& message) {
  FieldWriter writer;
  add_outcome(writer, message.outcome);
  writer.add(message.run_index).add(static_cast<std::uint64_t>(message.counter_columns.size()));
  for (const CounterRequest& column : message.counter_columns)
    writer.add_text(column.name).add_text(counter_source_name(column.source));
  return writer.take();
}

StepOutcome decode_step_outcome(std::string_view bytes) {
  FieldReader reader(bytes, "final status");
  const StepOutcome outcome = take_outcome(reader);
  reader.expect_end();
  return outcome;
}

RunRowMessage decode_run_row_message(std::string_view bytes) {
  FieldReader reader(bytes, "run row");
  RunRowMessage message{.outcome = take_outcome(reader), .run = reader.take<RunRow>("run")};
  reader.expect_end();
  return message;
}

SetupMessage decode_setup_message(std::string_view bytes) {
  FieldReader reader(bytes, "setup");
  SetupMessage message;
  message.outcome = take_outcome(reader);
  message.run_index = reader.take<std::int32_t>("run_index");
  const auto columns = reader.take<std::uint64_t>("counter_columns");
  // Each column takes at least its two lengths: a count past that is no count.
  if (columns > bytes.size() / (2 * sizeof(std::uint64_t)))
    reader.fail(fmt::format("{} counter columns do not fit", columns));
  for (std::uint64_t i = 0; i < columns; ++i) {
    CounterRequest column;
    column.name = reader.take_text("counter column name");
    column.source = counter_source_from(reader, reader.take_text("counter column source"));
    message.counter_columns.push_back(std::move(column));
  }
  reader.expect_end();
  return message;
}

Assignment assignment_of(const Job& job) {
  Assignment assignment{.index = job.attempt.index, .attempt = job.attempt.attempt};
  if (const std::optional<SearchPoint>& point = job.trial.search) {
    assignment.search = point->search;
    assignment.value = point->value;
    assignment.limit_bytes = point->limit_bytes;
    assignment.probe = point->probe;
    assignment.full = point->full ? 1 : 0;
  }
  return assignment;
}

TrialSpec assigned_trial(const Assignment& assignment, const SweepTrials& trials, const SearchSpec* search) {
  if (assignment.index >= trials.size())
    throw std::runtime_error("sweep protocol: rank 0 assigned trial " + std::to_string(assignment.index) + " of " +
                             std::to_string(trials.size()));
  // Made here from its position: no rank holds the sweep's list.
  TrialSpec trial = trials[assignment.index];
  if (assignment.search < 0) return trial;
  if (search == nullptr)
    throw std::runtime_error("sweep protocol: rank 0 assigned a search's probe to a sweep without one");
  return search_trial(trial, *search,
                      SearchPoint{.search = assignment.search,
                                  .probe = assignment.probe,
                                  .value = assignment.value,
                                  .limit_bytes = assignment.limit_bytes,
                                  .full = assignment.full != 0});
}

}  // namespace memsweep::detail
