#include "cli/export_command.hpp"

#include "cli/delimited_writer.hpp"
#include "cli/export_tables.hpp"
#include "cli/output_file.hpp"
#include "cli/results_path.hpp"
#include "memsweep/error.hpp"
#include "memsweep/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace memsweep::cli {
namespace {

// Samples are read this many rows at a time (about 2 MiB of rows with a
// few counters): the samples table of a long sweep need never be in memory.
constexpr std::uint64_t kSampleRowsPerRead = 16384;

constexpr char kStandardOutput[] = "-";

// One results file to export, opened before anything is written, so that a
// bad file among several leaves no output at all.
struct InputFile {
  std::string path;  // as given: the `file` column
  ResultReader reader;
};

// Each row's whole message (/messages; older files: the row's own column).
class WholeMessages {
 public:
  explicit WholeMessages(const ResultReader& reader) : messages_(reader.messages()) {}
  std::string of(const TrialRow& row) const { return whole_message(row, messages_); }

 private:
  TrialMessages messages_;
};

void write_header(const std::vector<std::string>& columns, bool with_file, DelimitedWriter& out) {
  if (with_file) out.text("file");
  for (const std::string& column : columns) out.text(column);
  out.end_row();
}

// The counter events of all the files, in the order they first appear:
// files with different counters share one header, with empty cells where a
// file has no such column.
std::vector<std::string> counter_union(const std::vector<InputFile>& inputs) {
  std::vector<std::string> events;
  for (const InputFile& input : inputs)
    for (const std::string& event : input.reader.header().counter_columns)
      if (std::find(events.begin(), events.end(), event) == events.end()) events.push_back(event);
  return events;
}

std::vector<int> slots_in(const FileHeader& header, const std::vector<std::string>& events) {
  std::vector<int> slots;
  const std::vector<std::string>& own = header.counter_columns;
  for (const std::string& event : events) {
    const auto found = std::find(own.begin(), own.end(), event);
    slots.push_back(found == own.end() ? -1 : static_cast<int>(found - own.begin()));
  }
  return slots;
}

void export_table(ExportTable table, const std::vector<InputFile>& inputs, DelimitedWriter& out) {
  const bool with_file = inputs.size() > 1;
  switch (table) {
    case ExportTable::trials: {
      write_header(trial_columns(), with_file, out);
      for (const InputFile& input : inputs) {
        const WholeMessages messages(input.reader);
        for (const TrialRow& row : input.reader.trials()) {
          if (with_file) out.text(input.path);
          write_trial(row, messages.of(row), out);
          out.end_row();
        }
      }
      break;
    }
    case ExportTable::epochs: {
      write_header(epoch_columns(), with_file, out);
      for (const InputFile& input : inputs)
        for (const EpochRow& row : input.reader.epochs()) {
          if (with_file) out.text(input.path);
          write_epoch(row, out);
          out.end_row();
        }
      break;
    }
    case ExportTable::searches: {
      write_header(search_columns(), with_file, out);
      for (const InputFile& input : inputs)
        for (const SearchRow& row : input.reader.searches()) {
          if (with_file) out.text(input.path);
          write_search(row, out);
          out.end_row();
        }
      break;
    }
    case ExportTable::metrics: {
      write_header(metric_columns(), with_file, out);
      for (const InputFile& input : inputs)
        for (const MetricRow& row : input.reader.metrics()) {
          if (with_file) out.text(input.path);
          write_metric(row, out);
          out.end_row();
        }
      break;
    }
    case ExportTable::samples: {
      const std::vector<std::string> events = counter_union(inputs);
      write_header(sample_columns(events), with_file, out);
      for (const InputFile& input : inputs) {
        const std::vector<int> slots = slots_in(input.reader.header(), events);
        const std::uint64_t rows = input.reader.sample_count();
        for (std::uint64_t first = 0; first < rows; first += kSampleRowsPerRead)
          for (const SampleRow& row : input.reader.samples(first, kSampleRowsPerRead)) {
            if (with_file) out.text(input.path);
            write_sample(row, slots, out);
            out.end_row();
          }
      }
      break;
    }
  }
  out.flush();
}

// -o naming one of the files read would, with --force, replace a results
// file with its own export.
void refuse_output_among_inputs(const std::string& output, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    std::error_code error;
    if (std::filesystem::equivalent(output, input, error))
      throw InputError(fmt::format("-o {}: is one of the results files being exported ({})", output, input));
  }
}

}  // namespace

void add_export_command(CLI::App& app, ExportOptions& options) {
  CLI::App* command = add_results_command(
      app, "export",
      "Write a table of results files as CSV or TSV, units in the column names, for spreadsheets, R and pandas "
      "(docs/results-file.md, Export)",
      options.results_files, kResultsFilesHelp);
  command->add_option("--table", options.table, "trials (the default), epochs, samples, searches or metrics");
  command->add_option("--format", options.format, "csv (the default) or tsv");
  command->add_option("-o,--output", options.output,
                      "Write to this file rather than to stdout (-: stdout, as without -o; ./- names a file \"-\")");
  command->add_flag("--force", options.force, "Replace the -o file when it exists");
}

int run_export_command(const ExportOptions& options) {
  // Checked here rather than by CLI11, whose message for a bad choice takes
  // two lines: one line, exit status 2, like every other bad input.
  const std::optional<ExportTable> table = parse_export_table(options.table);
  if (!table)
    throw InputError(fmt::format("--table {}: expected trials, epochs, samples, searches or metrics", options.table));
  const std::optional<TextFormat> format = parse_text_format(options.format);
  if (!format) throw InputError(fmt::format("--format {}: expected csv or tsv", options.format));
  // "-" is standard output, as for most tools that write a file (a file
  // of that name is ./-).
  const bool to_stdout = options.output.empty() || options.output == kStandardOutput;
  if (options.force && to_stdout)
    throw InputError(options.output.empty() ? "--force: replaces the -o file; there is none"
                                            : "--force: replaces the -o file; -o - is standard output");

  std::vector<InputFile> inputs;
  for (const std::string& path : options.results_files) inputs.push_back({path, ResultReader(path)});

  if (to_stdout) {
    DelimitedWriter out(stdout, "stdout", *format);
    export_table(*table, inputs, out);
    return exit_status::kOk;
  }
  refuse_output_among_inputs(options.output, options.results_files);
  OutputFile file(options.output, options.force);
  DelimitedWriter out(file.stream(), options.output, *format);
  export_table(*table, inputs, out);
  file.commit();
  return exit_status::kOk;
}

}  // namespace memsweep::cli
