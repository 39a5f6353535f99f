#pragma once
// Where `memsweep run` writes its results, computed in one place so that
// `memsweep plan --outputs` (which job scripts read) always names the file
// the run will write; and the `results` argument of the commands that read
// results files.

#include <CLI/CLI.hpp>

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

// A command that reads results files (summary, export: several, with
// kResultsFilesHelp; watch: one), with its required `results` argument.
template <typename Files>
CLI::App* add_results_command(CLI::App& app, const std::string& name, const std::string& description, Files& files,
                              const std::string& files_help) {
  CLI::App* command = app.add_subcommand(name, description);
  command->add_option("results", files, files_help)->required();
  return command;
}
inline constexpr char kResultsFilesHelp[] = "The results file(s) (HDF5) written by memsweep run";

}  // namespace memsweep::cli
