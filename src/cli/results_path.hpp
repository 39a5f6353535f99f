#pragma once
// Where `memsweep run` writes its results, computed in one place so that
// `memsweep plan --outputs` (which job scripts read) always names the file
// the run will write.

#include <filesystem>
#include <optional>
#include <string>

namespace memsweep::cli {

// The placeholder in -o that a part's label replaces.
inline constexpr char kPartPlaceholder[] = "{part}";

// `output` is -o as given (empty: not given); `part_label` a part's label
// (SweepPart::label) when the sweep is split, else nullopt.
//
// Whole sweep: `output`, else the sweep file's stem + ".h5" in the working
// directory. A part: every "{part}" of `output` replaced by the label, else
// "<stem>.<label>.h5" in the working directory.
//
// Throws InputError, naming -o, when a part's `output` has no "{part}" (the
// parts would share one file) and when a whole sweep's has one.
std::filesystem::path results_path(const std::string& sweep_file, const std::string& output,
                                   const std::optional<std::string>& part_label);

}  // namespace memsweep::cli
