#pragma once
// Memory sizes as users write them: "2GiB", "512 MiB", "1.5GB", "1048576".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep {

// Binary (KiB, MiB, GiB, TiB) and decimal (kB, MB, GB, TB) units, or B or no
// unit for bytes; case-insensitive. nullopt for anything else or a value < 1.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);
inline constexpr std::string_view kByteSizeHelp =
    "a size such as \"2GiB\", \"512MiB\", \"1.5GB\" or a whole number of bytes";

// "1.50 GiB": for tables and messages.
std::string format_byte_size(std::uint64_t bytes);

// `bytes` in the largest binary unit it reaches (B, KiB, ... TiB): {1.5, "GiB"}.
struct ScaledBytes {
  double value = 0.0;
  std::string_view unit;
};
ScaledBytes scale_byte_size(std::uint64_t bytes);

}  // namespace memsweep
