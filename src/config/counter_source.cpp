#include "memsweep/config.hpp"

#include <array>
#include <utility>

namespace memsweep {
namespace {

constexpr std::array<std::pair<CounterSourceChoice, std::string_view>, 3> kNames{{
    {CounterSourceChoice::automatic, "auto"},
    {CounterSourceChoice::papi, "papi"},
    {CounterSourceChoice::kernel, "kernel"},
}};

}  // namespace

std::string_view counter_source_name(CounterSourceChoice choice) {
  for (const auto& [value, name] : kNames)
    if (value == choice) return name;
  return "auto";
}

std::optional<CounterSourceChoice> parse_counter_source(std::string_view text) {
  for (const auto& [value, name] : kNames)
    if (name == text) return value;
  return std::nullopt;
}

}  // namespace memsweep
