#pragma once
// The label check shared by the IDX and CIFAR parsers, so both report a bad
// label the same way.

#include "memsweep/dataset.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <string_view>

namespace memsweep::dataset::detail {

// `unit` names what `index` counts ("index" in a label file, "record" in CIFAR).
inline void check_label(unsigned value, std::size_t index, int classes, std::string_view source_name,
                        std::string_view unit) {
  if (value < static_cast<unsigned>(classes)) return;
  throw DatasetError(
      fmt::format("{}: {} {}: label {} is out of range, allowed 0..{}", source_name, unit, index, value, classes - 1));
}

}  // namespace memsweep::dataset::detail
