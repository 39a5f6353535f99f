#include "common/field_codec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace memsweep {

void FieldWriter::text(std::string_view text) {
  count(text.size());
  const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
  bytes_.insert(bytes_.end(), bytes, bytes + text.size());
}

std::size_t FieldReader::count(std::size_t item_bytes) {
  const auto items = value<std::uint64_t>();
  const std::size_t left = bytes_.size() - offset_;
  if (items > left / item_bytes)
    fail(fmt::format("its field {} counts {} items, more than the {} bytes left hold", field(), items, left));
  return static_cast<std::size_t>(items);
}

std::string FieldReader::text() {
  const std::size_t length = count(1);
  const auto* bytes = reinterpret_cast<const char*>(take(length));
  return std::string(bytes, length);
}

bool FieldReader::flag() {
  const auto byte = value<std::uint8_t>();
  if (byte > 1) fail(fmt::format("its field {} holds {}, neither false nor true", field(), byte));
  return byte == 1;
}

void FieldReader::finish() const {
  if (offset_ != bytes_.size())
    fail(fmt::format("{} bytes left over after its last field {}", bytes_.size() - offset_, path_text(last_read_)));
}

void FieldReader::fail(std::string_view what) const {
  throw FieldCodecError(fmt::format("the {} ({} bytes): {}", message_, bytes_.size(), what));
}

std::string FieldReader::path_text(const std::vector<std::string_view>& path) {
  return fmt::format("{}", fmt::join(path, "."));
}

const std::byte* FieldReader::take(std::size_t bytes) {
  if (bytes > bytes_.size() - offset_) fail(fmt::format("ends inside its field {}", field()));
  const std::byte* start = bytes_.data() + offset_;
  offset_ += bytes;
  last_read_ = path_;
  return start;
}

}  // namespace memsweep
