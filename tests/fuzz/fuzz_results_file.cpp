// Fuzz target: the results file (HDF5), as `memsweep summary`, `watch` and
// `run --resume` read it. The input is written to a file of this process's
// own ($TMPDIR, else /dev/shm), then read:
//   1. ResultReader: the header, /runs, /trials (whole and in blocks),
//      /epochs, /messages, /samples in blocks, scan_series(); the sweep text in the
//      header parsed and planned against the rows (plan_resume), as a
//      resume does;
//   2. SweepFollower (watch): two update()s and the followed trial;
//   3. ResultStore::open_for_resume (run --resume): checks, clears a dead
//      writer's flag, drops unwritten rows, appends a run; read_trials()
//      and scan_series(). It writes to the file, so it comes last.
// StoreError and the rest of the InputError family are the expected answer
// to bad input; anything else escaping, or a crash, is a finding. So is an
// HDF5 object left open after an input (a leaked handle).
//
// HDF5 itself is not instrumented: a fault inside it shows as a SEGV
// without ASan's report of where the bad address came from.

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/store.hpp"
#include "memsweep/sweep_split.hpp"
#include "watch/follower.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

// Small blocks, so that reads of a range (as watch makes them) are tried
// on the small files of the corpus too.
constexpr std::uint64_t kBlockRows = 7;
constexpr int kRetryKilled = 1;

const std::filesystem::path& input_path() {
  static const std::filesystem::path path = [] {
    const char* tmpdir = std::getenv("TMPDIR");
    const std::filesystem::path dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/dev/shm";
    return dir / ("memsweep-fuzz-results-" + std::to_string(::getpid()) + ".h5");
  }();
  return path;
}

void write_input(const std::uint8_t* data, std::size_t size) {
  // A new file each time: HDF5 recognises a file it has open by its inode.
  std::filesystem::remove(input_path());
  std::ofstream out(input_path(), std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) {
    std::perror("fuzz_results_file: cannot write the input file");
    std::abort();
  }
}

// What a resume does with the file's sweep text and rows.
void plan(const memsweep::FileHeader& header, const std::vector<memsweep::TrialRow>& rows,
          const std::vector<memsweep::SeriesSummary>& series, int run) {
  try {
    memsweep::SweepSpec sweep = memsweep::parse_sweep(header.sweep_text, header.sweep_file);
    // A resume (and a split by a field that is no grid axis) walks the
    // sweep once: a large one takes seconds, which is no finding.
    constexpr std::size_t kTrialsWalked = 100'000;
    if (sweep.trials.size() > kTrialsWalked) return;
    if (!header.part.empty()) sweep = memsweep::select_named_part(sweep, header.part);
    (void)memsweep::sweep_hash(sweep);
    (void)memsweep::plan_resume(sweep.trials, rows, series, kRetryKilled, run, memsweep::LostAttempts::rank_died);
  } catch (const memsweep::InputError&) {
  }
}

// Returns the first trial id, for the follower to follow.
std::string read_all(const std::filesystem::path& path) {
  memsweep::ResultReader reader(path);
  const memsweep::FileHeader& header = reader.header();
  const std::vector<memsweep::RunRow> runs = reader.runs();
  const std::vector<memsweep::TrialRow> trials = reader.trials();
  for (std::uint64_t first = 0; first < reader.trial_count(); first += kBlockRows)
    (void)reader.trials(first, kBlockRows);
  (void)reader.epochs();
  (void)reader.messages();
  for (std::uint64_t first = 0; first < reader.sample_count(); first += kBlockRows)
    (void)reader.samples(first, kBlockRows);
  const std::vector<memsweep::SeriesSummary> series = reader.scan_series();
  plan(header, trials, series, static_cast<int>(runs.size()));
  reader.refresh();
  return trials.empty() ? std::string() : memsweep::get_fixed(trials.front().trial_id);
}

void follow(const std::filesystem::path& path, const std::string& trial) {
  memsweep::watch::SweepFollower follower(path, trial);
  const auto now = std::chrono::system_clock::now();
  (void)follower.update(false, now);
  (void)follower.followed_trial();
  (void)follower.update(std::nullopt, now);
}

void resume(const std::filesystem::path& path, bool swmr) {
  memsweep::RunRow run;
  memsweep::set_fixed(run.command_line, "memsweep run --resume fuzz.toml");
  memsweep::ResultStore store = memsweep::ResultStore::open_for_resume(path, run, memsweep::StoreOptions{swmr});
  plan(store.header(), store.read_trials(), store.scan_series(), store.run_index());
  store.close();
}

// HDF5 converts rows through a 1 MiB buffer it allocates, and zeroes, on
// every read. Its free lists would keep such blocks up to a limit; ASan
// maps and unmaps each one, which made reads most of a run's time. No
// limits: the blocks are reused.
void keep_hdf5_free_lists() {
  static const bool done = [] {
    H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
    return true;
  }();
  (void)done;
}

void check_no_open_objects() {
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0) {
    std::fprintf(stderr, "fuzz_results_file: %zd HDF5 objects still open after the input\n", open);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  keep_hdf5_free_lists();
  write_input(data, size);
  const std::filesystem::path& path = input_path();
  std::string trial;
  bool readable = false;
  try {
    trial = read_all(path);
    readable = true;
  } catch (const memsweep::InputError&) {
  }
  try {
    follow(path, trial);
  } catch (const memsweep::InputError&) {
  }
  // Writing to what cannot be read says nothing new and costs a lot.
  if (readable) {
    try {
      resume(path, (size & 1) == 0);
    } catch (const memsweep::InputError&) {
    }
  }
  check_no_open_objects();
  std::filesystem::remove(path);
  return 0;
}
