#include "memsweep/columns.hpp"

namespace memsweep {

std::string export_column_name(const ColumnSpec& column) {
  const std::string name(column.name);
  const auto ends_with = [&](std::string_view end) { return column.name.ends_with(end); };
  if (column.unit == column_unit::kBytes) return ends_with("_bytes") ? name : name + "_bytes";
  if (column.unit == column_unit::kUnixTime) return name + "_unix_s";
  if (column.unit == column_unit::kSeconds) return ends_with("seconds") || ends_with("_s") ? name : name + "_s";
  if (column.unit == column_unit::kEvents) return ends_with("_count") ? name : name + "_count";
  return name;
}

}  // namespace memsweep
