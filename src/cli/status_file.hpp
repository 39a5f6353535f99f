#pragma once
// $MEMSWEEP_STATUS_FILE: rank 0's own exit status, for a job script whose
// launcher may report another (jobs/sweep.sbatch; docs/sweep.md, "Signals
// and exit status 3"). Until issue 43 it was opened with std::ofstream and
// truncated whatever it named: set to the results file, `memsweep run`
// left "0\n" where every result had been; a FIFO without a reader blocked
// the end of the run for ever (SIGTERM's handler restarts the open).
//
// So the path is checked when the run starts (InputError, exit status 2,
// before anything is written), and the write itself neither follows a link
// nor blocks, and writes only a regular file.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace memsweep::cli {

inline constexpr char kStatusFileVariable[] = "MEMSWEEP_STATUS_FILE";

class StatusFile {
 public:
  // The variable's path checked (InputError naming it and what is wrong):
  // refused when it is a symbolic link, anything but a regular file, the
  // sweep file, or absent in a folder that does not exist. nullopt when
  // the variable is unset or empty.
  static std::optional<StatusFile> from_environment(const std::filesystem::path& sweep_file);
  static StatusFile checked(const std::filesystem::path& path, const std::filesystem::path& sweep_file);

  // Once the results file's path is known: refused (InputError) when it is
  // that file, there or still to be created, or when the file holds
  // something other than a status memsweep wrote (an empty file, as
  // `mktemp` makes one, is fine). Said after the results file, so that the
  // results file is called by its name.
  void refuse_results_file_or_contents(const std::filesystem::path& results) const;

  // "STATUS\n", then "left N\n" when known. Best effort: when it cannot be
  // written (gone, replaced by a link or a FIFO, the disk full; or, when
  // the run ended before refuse_results_file_or_contents(), a file that
  // holds something else), one line on stderr says so; the exit status
  // itself is unchanged.
  void write(int exit_status, std::optional<std::size_t> trials_left) const;

  const std::filesystem::path& path() const { return path_; }

 private:
  explicit StatusFile(std::filesystem::path path) : path_(std::move(path)) {}
  std::string named() const;  // "MEMSWEEP_STATUS_FILE=PATH"

  std::filesystem::path path_;
  std::string foreign_contents_;  // why the file's contents are not a status; empty when they are
};

}  // namespace memsweep::cli
