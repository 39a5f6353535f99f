#pragma once
// The file's root attributes (FileHeader), and the checks that tell a
// memsweep results file of a schema version this memsweep reads (1 to the
// current one) from anything else, and one it may continue (the current).

#include "memsweep/store.hpp"
#include "store/hdf5_handles.hpp"

namespace memsweep::store {

inline constexpr char kFormatAttribute[] = "format";
inline constexpr char kSchemaVersionAttribute[] = "schema_version";

void write_header(hid_t file, const FileHeader& header, const Hdf5Errors& errors);

// Throws StoreError: "not a memsweep results file (no format attribute)",
// "schema version 4, this memsweep reads versions 1 to 3", a missing attribute.
FileHeader read_header(hid_t file, const Hdf5Errors& errors);

// Throws StoreError unless `header` is of the version this memsweep writes:
// rows of another version's layout must not be appended to its tables. The
// message says what to do instead.
void check_resumable(const FileHeader& header, const Hdf5Errors& errors);

}  // namespace memsweep::store
