#pragma once
// Before a sweep writes anything: is every real dataset its trials need
// where the run will look, and do the files' headers say what they should?
// Only a few bytes of each file are read (decompressed when gzip), so a
// check costs milliseconds; the trial's full load still checks every byte
// (labels in range, the data as long as the header says inside a gzip file),
// and a dataset that vanishes after the check fails its trials as before.
//
// `memsweep run` checks on every rank before the results file exists;
// `memsweep plan` prints the reports.

#include "memsweep/config.hpp"
#include "memsweep/dataset.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace memsweep {

struct DatasetReport {
  enum class State {
    found,      // every required file is there and its header is right
    missing,    // no folder on the search list holds all the required files
    malformed,  // the files are there, but one cannot be read or is not what it should be
  };

  DatasetKind kind = DatasetKind::mnist;
  State state = State::missing;
  std::filesystem::path folder;              // found, malformed: the folder a trial would read
  std::vector<std::filesystem::path> files;  // found: what a trial reads, in reading order
  // found: from the IDX headers, or from the sizes of CIFAR-10 batches;
  // nullopt for a gzip CIFAR-10 batch whose trailer does not record a
  // whole number of records (only the full load can count it).
  std::optional<std::size_t> train_records;
  std::optional<std::size_t> test_records;
  ImageShape shape;     // found: what the trials' inputs are
  std::string problem;  // missing, malformed: one line, naming what was looked for and where

  bool found() const { return state == State::found; }
};

// Whether the trial reads its real dataset's files: memsweep's trainer
// always; a program only when its command, env or workdir names {data_dir}
// (otherwise its `dataset` is a label). Synthetic data need no files.
bool reads_dataset_files(const TrialSpec& trial);

// The real datasets the trials read (reads_dataset_files), each once, in
// the order the trials first name them.
std::vector<DatasetKind> datasets_needed(const std::vector<TrialSpec>& trials);

// One dataset on the search list (dataset_search_dirs). Never throws for a
// missing or bad file: that is the report's state.
DatasetReport check_dataset(DatasetKind kind, const std::vector<std::filesystem::path>& search_dirs);

// Every dataset the trials need, in datasets_needed() order.
std::vector<DatasetReport> check_datasets(const std::vector<TrialSpec>& trials,
                                          const std::vector<std::filesystem::path>& search_dirs);

// One line per report: "mnist: found in DIR: 60000 train, 10000 test, 1x28x28",
// or "mnist: " and the problem.
std::string report_line(const DatasetReport& report);

// Throws InputError listing every report not found, one line each (and a
// last line saying how to point memsweep at the data when one is missing);
// returns when every dataset was found.
void require_datasets(const std::vector<DatasetReport>& reports);

}  // namespace memsweep
