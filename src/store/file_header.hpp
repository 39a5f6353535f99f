#pragma once
// The file's root attributes (FileHeader), and the checks that tell a
// memsweep results file of this schema version from anything else.

#include "memsweep/store.hpp"
#include "store/hdf5_handles.hpp"

namespace memsweep::store {

inline constexpr char kFormatAttribute[] = "format";
inline constexpr char kSchemaVersionAttribute[] = "schema_version";

void write_header(hid_t file, const FileHeader& header, const Hdf5Errors& errors);

// Throws StoreError: "not a memsweep results file (no format attribute)",
// "schema version 2, this memsweep reads 1", a missing attribute.
FileHeader read_header(hid_t file, const Hdf5Errors& errors);

}  // namespace memsweep::store
