#pragma once
// What /samples says about each trial attempt (resume's killed rows; watch).

#include "memsweep/results.hpp"
#include "store/table.hpp"

#include <span>
#include <vector>

namespace memsweep::store {

// One summary per (trial id, attempt) present in `samples`, then in
// `unwritten` (rows a writer holds that are not in the file yet), in the
// order of their first sample. Reads the table in blocks, converting only
// the columns it needs.
std::vector<SeriesSummary> scan_series(const Table& samples, const Hdf5Errors& errors,
                                       std::span<const SampleRow> unwritten = {});

}  // namespace memsweep::store
