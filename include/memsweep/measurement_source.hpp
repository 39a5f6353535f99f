#pragma once
// A measurement source (docs/architecture.md, "Measurement sources"): one
// folder under src/sampler/ that reads one kind of memory, and one public
// header beside this one that declares its columns once (SourceColumn), so
// that the schema, export, watch and the analysis take them from the
// declaration instead of listing them again. GPU memory (src/sampler/gpu/,
// memsweep/gpu_columns.hpp) is the first.

#include <string_view>

namespace memsweep {

// What a column's values are.
enum class SourceColumnKind {
  level,  // a reading at one moment (bytes in use); a trial's figure is its largest or its mean
  count,  // cumulative since the trial's start (events); a trial's figure is its last
};

// One column of /samples or /trials. -1 (text: empty) means "not measured".
struct SourceColumn {
  std::string_view name;         // the HDF5 column's name
  std::string_view export_name;  // `memsweep export`'s (byte columns end in "_bytes"); NUL-terminated
  std::string_view unit;         // as the table's unit:<column> attribute spells it
  SourceColumnKind kind;
  int since_version;  // the schema version that added it (older files read "not measured")
  std::string_view description;
};

}  // namespace memsweep
