#pragma once
// Memory sizes as users write them: "2GiB", "512 MiB", "1.5GB", "1048576".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep {

// The largest size memsweep takes: 1 EiB (2^60 bytes), a million times a
// large node's memory. Every size memsweep reads fits an int64 with room to
// add to it (the results file, the cgroup's memory.max and the estimates
// hold sizes as int64); 2^63 became a negative budget, that is none.
inline constexpr std::uint64_t kMaxByteSize = std::uint64_t{1} << 60;
inline constexpr std::string_view kMaxByteSizeText = "1 EiB (2^60 bytes)";

// Binary (KiB, MiB, GiB, TiB) and decimal (kB, MB, GB, TB) units, or B or no
// unit for bytes; case-insensitive. nullopt for anything else, a value < 1
// or one above kMaxByteSize.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);
inline constexpr std::string_view kByteSizeHelp =
    "a size such as \"2GiB\", \"512MiB\", \"1.5GB\" or a whole number of bytes";

// Whether `text` is written as a size but above kMaxByteSize (so the
// message can say that, not "not a size").
bool is_too_large_byte_size(std::string_view text);

// "1.50 GiB": for tables and messages.
std::string format_byte_size(std::uint64_t bytes);

// "12.3": MiB with one decimal, as the summary's tables show figures; "-"
// for one not measured (negative).
std::string mib_text(double bytes);

// `bytes` in the largest binary unit it reaches (B, KiB, ... TiB): {1.5, "GiB"}.
struct ScaledBytes {
  double value = 0.0;
  std::string_view unit;
};
ScaledBytes scale_byte_size(std::uint64_t bytes);

}  // namespace memsweep
