#include "sweep/protocol.hpp"

namespace memsweep::detail {

std::string tag_name(int message_tag) {
  switch (message_tag) {
    case tag::kRequest: return "REQUEST";
    case tag::kSamples: return "SAMPLES";
    case tag::kEpochs: return "EPOCHS";
    case tag::kRecord: return "RECORD";
    case tag::kLeaving: return "LEAVING";
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

}  // namespace memsweep::detail
