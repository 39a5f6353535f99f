#pragma once
// The sweep file: a TOML description of the trials to run (see
// docs/sweep-file.md), parsed and expanded into a deterministic list of
// trials, each with a stable id derived from what it is.

#include "memsweep/dataset_spec.hpp"
#include "memsweep/error.hpp"
#include "memsweep/memory_plan.hpp"
#include "memsweep/optimizer_spec.hpp"
#include "memsweep/search_spec.hpp"
#include "memsweep/training_spec.hpp"

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace memsweep {

// The results file stores hidden widths in fixed-size columns, so the schema
// has a maximum depth; widths and counts are bounded to catch typos early.
inline constexpr int kMaxHiddenLayers = 16;
inline constexpr int kMaxLayerWidth = 1'000'000;
inline constexpr int kMaxConvBlocks = 8;
inline constexpr int kMaxEpochs = 100'000;
inline constexpr int kMaxBatchSize = 1 << 20;
inline constexpr int kMaxRepeats = 10'000;
// recompute_every: layers per recomputed segment. More than any network has
// (hidden, convolution and AlexNet's layers together); a value past the
// network's depth makes the whole network one segment.
inline constexpr int kMaxRecomputeEvery = 1'000;
inline constexpr int kMaxGpusPerTrial = 16;          // the GPU reader's devices (gpu_memory.hpp's kMaxGpuDevices)
inline constexpr int kMaxRandomCount = 100'000'000;  // config/expand.hpp's kMaxSweepTrials
inline constexpr int kMinSamplerIntervalMs = 1;
inline constexpr int kMaxSamplerIntervalMs = 600'000;  // ten minutes
inline constexpr int kDefaultSamplerIntervalMs = 10;

// `alexnet` is a fixed convolution stack (model_spec.hpp) before `hidden`.
enum class ModelKind { mlp, cnn, alexnet };

std::string_view model_name(ModelKind kind);

// A value of a trial's [params] table: free parameters that mean something
// only to its program. Scalars, or a list of scalars.
struct ParamValue {
  std::string text;  // what {name} becomes: 0.1, adam, true; a list comma-separated: 16,32
  std::string json;  // the value as JSON, for the results file: 0.1, "adam", true, [16,32]
};

// When a program trial's {trial_dir} is kept ([programs.NAME]
// keep_trial_dir): after an attempt that did not end ok (the default),
// always (true) or never (false).
enum class KeepTrialDir : std::uint8_t { failed, always, never };

// A program's stdout and stderr logs keep at most this much each per
// attempt by default ([programs.NAME] log_limit): the first half and the
// last half, with a line saying what was dropped between.
inline constexpr std::uint64_t kDefaultLogLimitBytes = std::uint64_t{64} << 20;

// A program that trains instead of memsweep's own trainer (docs/sweep-file.md,
// "Programs"). The texts are templates: {field} placeholders are filled per
// trial when it starts (program.hpp).
// A program's metric: `pattern` (an ECMAScript regular expression with one
// capture group) over each line of its standard output; the group's text is
// the value. The metric named kEpochMetric gives the epoch the lines after it
// belong to.
struct ProgramMetric {
  std::string name;     // an identifier of at most kMaxMetricName characters
  std::string pattern;  // as written in the sweep file
  std::string place;    // "sweep.toml:4: programs.wlm.metrics.valid_ppl", for messages
};
inline constexpr std::string_view kEpochMetric = "epoch";
inline constexpr std::size_t kMaxMetricName = 32;  // the results file's metric name column

struct ProgramSpec {
  std::string name;                                      // the `trainer` column
  std::vector<std::string> command;                      // argv, argv[0] first; never empty
  std::vector<std::pair<std::string, std::string>> env;  // sorted by name
  std::string workdir;                                   // empty: the run's working directory
  std::string place;                                     // "sweep.toml:4: program", for messages
  // The built-in fields ("dataset", "model", "optimizer", "learning_rate",
  // "epochs", "batch_size", "hidden", "channels", …) that the sweep file sets
  // for this trial or that its texts name as placeholders, sorted: the
  // others mean nothing to the program, and are shown blank.
  std::vector<std::string> fields;
  // A text names {data_dir}: only then is the trial's dataset more than a
  // label, and its files are looked for (dataset_preflight.hpp).
  bool uses_data_dir = false;
  // Its [programs.NAME] metrics: figures matched in its standard output
  // (docs/sweep-file.md, "Metrics"), sorted by name; checked when the file
  // is read (one capture group, ECMAScript syntax).
  std::vector<ProgramMetric> metrics;
  // A text names {trial_dir}: a folder of the attempt's own is made for it.
  bool uses_trial_dir = false;
  // A text names {gpu}: the trial needs a GPU even where gpus_per_trial
  // is not set (TrialSpec::gpus_needed()).
  bool uses_gpu = false;
  KeepTrialDir keep_trial_dir = KeepTrialDir::failed;
  std::uint64_t log_limit_bytes = kDefaultLogLimitBytes;  // per stream and attempt; 0: no limit
};

// A trial's [params] as JSON (TrialSpec::params_json()) fit the results
// file's column of this many bytes.
inline constexpr std::size_t kMaxParamsJsonBytes = 512;

// The trainer column's value for memsweep's own trainer.
inline constexpr std::string_view kBuiltinTrainer = "memsweep";

// A trial that is a probe of a search ([search], search_spec.hpp): which
// search, its number in it, the axis value it trains and the limit it must
// train within. The limit is part of the trial's id (the same values under
// two limits are two trials); the rest is bookkeeping.
struct SearchPoint {
  std::int32_t search = 0;
  std::int32_t probe = 0;
  std::int64_t value = 0;
  std::uint64_t limit_bytes = 0;
  bool full = true;  // trains the configuration's own epochs
  bool gpu = false;  // limit_bytes is its GPU's (SearchDevice::gpu)
};

// One trial, fully resolved: every field has a value.
struct TrialSpec {
  std::string id;  // stable: a hash of canonical_text(), see below
  int repeat = 0;  // 0 .. repeats-1
  // Its 0-based position in the whole sweep's expansion, the order `memsweep
  // plan` lists (repeat-major); set by the sweep parser and kept when a part
  // is selected, so that every file numbers a trial alike. Not part of the
  // id. -1: a trial not from a sweep file.
  int plan_index = -1;
  DatasetSpec dataset;
  ModelKind model = ModelKind::mlp;
  std::vector<int> channels;  // convolution blocks, model = cnn only
  OptimizerSpec optimizer;
  double learning_rate = 0.01;
  int epochs = 1;
  int batch_size = 32;
  std::vector<int> hidden{128};  // fully connected hidden widths, input side first
  std::uint64_t seed = 0;
  // How the trainer holds the step's buffers (memory_plan.hpp); part of the
  // id only where it is not the default, so older sweeps keep their ids.
  MemoryPlan memory_plan = MemoryPlan::keep;
  // Layers per segment for `recompute` (kRecomputeEveryDefault: ceil(sqrt(L)));
  // kept as the file gave it whatever the plan, but only `recompute` uses it.
  int recompute_every = kRecomputeEveryDefault;
  std::optional<std::uint64_t> mem_budget_bytes;  // not part of the id: a limit, not the trial
  std::optional<double> timeout_seconds;          // wall time from the start of training; not part of the id
  // The GPUs the trial runs on, its own (docs/runner.md, "A trial's GPUs");
  // nullopt: gpus_needed()'s default. Where it runs, not what it is: not
  // part of the id.
  std::optional<int> gpus_per_trial;
  // The most GPU memory the trial may have on each of its devices, held by
  // memsweep (docs/runner.md, "A GPU limit"); kWholeDevice: the device's
  // own size. A limit, not what the trial is: not part of the id.
  std::optional<std::uint64_t> gpu_limit_bytes;
  static constexpr std::uint64_t kWholeDevice = 0;
  std::string origin;                                      // where the file defines it, e.g. "sweep.toml:12 grid[3]"
  std::optional<ProgramSpec> program;                      // nullopt: memsweep's own trainer
  std::vector<std::pair<std::string, ParamValue>> params;  // sorted by name
  std::optional<SearchPoint> search;                       // a search's probe

  // gpus_per_trial, else the default: one for a program on a node that has
  // GPUs or a program that names {gpu}, none for memsweep's CPU trainer.
  int gpus_needed(bool node_has_gpus) const;

  // "memsweep", or the program's name.
  std::string_view trainer() const { return program ? std::string_view(program->name) : kBuiltinTrainer; }
  // Whether the built-in field `name` (as the sweep file names it) is part
  // of what the trial is: always for memsweep's own trainer; for a program,
  // only where the file sets it or its texts name it (ProgramSpec::fields).
  bool shows_field(std::string_view name) const;
  // The [params] as one JSON object ({} when there are none), keys sorted.
  std::string params_json() const;

  // Every field that defines the trial and only those (an optimizer's unused
  // parameters, a non-synthetic dataset's synthetic shape and an MLP's
  // channels are left out), in a fixed order with round-trip number
  // formatting. Editing or reordering a sweep file never changes it.
  std::string canonical_text() const;

  // recompute_every where the plan uses it, else kRecomputeEveryDefault:
  // what the id, the results file and the trainer see.
  int effective_recompute_every() const {
    return memory_plan == MemoryPlan::recompute ? recompute_every : kRecomputeEveryDefault;
  }

  // One line for people: "mnist mlp adam lr=0.001 batch=64 epochs=5
  // hidden=[128,64]" (progress lines, watch). A program's: its trainer, the
  // fields it shows and its params ("torch_mnist mnist lr=0.1 batch=64
  // epochs=2 dropout=0.25").
  std::string summary_text() const;

  // Repeats train with different seeds (weights, shuffling) so that their
  // spread includes that variation.
  std::uint64_t training_seed() const;
};

// 12 hex digits of the canonical text's 64-bit hash.
std::string trial_id(const TrialSpec& trial);

// The trial's network: its model kind, widths and channels, on its
// dataset's images and classes.
ModelSpec model_spec(const TrialSpec& trial);

// What the trainer needs of the trial (the trainer knows no sweep file).
TrainingSpec training_spec(const TrialSpec& trial);

// Where the sampler's counters come from ([sampler] counter_source,
// --counter-source): PAPI first, then the kernel's generic events for what
// PAPI cannot name (the default); or one of the two only.
enum class CounterSourceChoice { automatic, papi, kernel };

// "auto", "papi", "kernel".
std::string_view counter_source_name(CounterSourceChoice choice);
// The inverse; nullopt for any other text.
std::optional<CounterSourceChoice> parse_counter_source(std::string_view text);

struct SamplerSpec {
  int interval_ms = kDefaultSamplerIntervalMs;
  std::vector<std::string> events;  // event names (PAPI's or perf's); empty: the sampler's defaults
  CounterSourceChoice counter_source = CounterSourceChoice::automatic;
};

// Positions start + b × stride + j, for b < blocks and j < block: the
// trials of a part that is one value of a grid axis, or one repeat.
struct StridedPositions {
  std::size_t start = 0;
  std::size_t block = 0;
  std::size_t stride = 0;
  std::size_t blocks = 0;
};

// A sweep's trials in `memsweep plan`'s order (repeat-major), each made from
// its position when asked: no list of them is held, so 10^7 trials cost what
// their sweep file costs (docs/sweep.md, "Large sweeps"). Reads like a
// vector of TrialSpec, whose elements are made, not stored: each access
// builds the trial (a few microseconds), so walk it once, not per use.
//
// A sweep of at most kWalkedTrials trials per repeat is walked when it is
// parsed: every trial is checked, and one defined twice is left out (with a
// note), so positions count distinct trials. A larger one is not: its
// duplicates keep their positions, and the scheduler skips a trial whose id
// it has already handed out (duplicates_known() is false).
class SweepTrials {
 public:
  class Source;  // what makes trial p: a sweep's sections, or a list
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = TrialSpec;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = TrialSpec;
    Iterator(const SweepTrials* trials, std::size_t position) : trials_(trials), position_(position) {}
    TrialSpec operator*() const { return (*trials_)[position_]; }
    Iterator& operator++() {
      ++position_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return position_ == other.position_; }

   private:
    const SweepTrials* trials_;
    std::size_t position_;
  };

  SweepTrials();
  SweepTrials(std::vector<TrialSpec> listed);  // NOLINT(google-explicit-constructor): trials made elsewhere
  explicit SweepTrials(std::shared_ptr<const Source> source);

  std::size_t size() const;
  bool empty() const { return size() == 0; }
  TrialSpec operator[](std::size_t position) const;  // position < size()
  TrialSpec at(std::size_t position) const;          // throws std::out_of_range
  // Trial `position`, or nullopt where its values are wrong together (a
  // large sweep's trials are not all made when it is read; making one
  // throws its ConfigError): what a walk over the sweep skips, as the
  // scheduler does (docs/sweep.md, "Large sweeps").
  std::optional<TrialSpec> made(std::size_t position) const;
  TrialSpec front() const { return (*this)[0]; }
  TrialSpec back() const { return (*this)[size() - 1]; }
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size()); }
  bool duplicates_known() const;

  // Where one field takes each of its values in turn, on its own (a grid
  // axis of a sweep that is that grid; `repeat`): value k's trials are
  // StridedPositions{k × inner, inner, values × inner, size() / (values ×
  // inner)}. nullopt otherwise.
  struct Axis {
    std::size_t values = 0;
    std::size_t inner = 0;
  };
  std::optional<Axis> axis(std::string_view field) const;

  // Trials that between them give each field every value it takes here,
  // for checks that need each value once (datasets' files, programs): every
  // trial of a sweep of at most 10^4 trials (repeats left out); of a larger
  // one, each section's values with the first trial's others (of a field
  // whose values are numbers, kCoveredNumbers from first to last: the parser
  // checked each), and the first and last trials; of a part of more than
  // 10^4, an even sample of 10^4.
  std::vector<TrialSpec> every_value() const;
  // Every trial, made: for tests and for sweeps known to be small.
  std::vector<TrialSpec> list() const { return {begin(), end()}; }

  // Only these positions of this list (sorted, each < size()), in their order.
  SweepTrials only(std::vector<std::size_t> positions) const;
  SweepTrials only(const StridedPositions& positions) const;

 private:
  std::shared_ptr<const Source> source_;
};

class SweepTrials::Source {
 public:
  virtual ~Source() = default;
  virtual std::size_t size() const = 0;
  virtual TrialSpec at(std::size_t position) const = 0;
  virtual bool duplicates_known() const { return true; }
  virtual std::optional<SweepTrials::Axis> axis(std::string_view field) const {
    (void)field;
    return std::nullopt;
  }
  virtual std::vector<TrialSpec> every_value() const;
};

// Sweeps with at most this many trials per repeat are walked when parsed.
inline constexpr std::uint64_t kWalkedTrials = 100'000;
// Of a larger one, every_value() gives at most this many of a field's
// values when they are numbers (the parser checked each).
inline constexpr std::size_t kCoveredNumbers = 16;

// One section of the sweep file as `memsweep plan` summarises it: its
// fields and the values each takes ("batch_size", "3 values: 16, 32, 64").
struct SectionSummary {
  std::string name;  // "[grid]", "[random]", "[[trial]]"
  std::uint64_t trials = 0;
  std::vector<std::pair<std::string, std::string>> fields;
};

struct SweepSpec {
  std::string name;
  std::uint64_t seed = 0;
  int repeats = 1;
  SamplerSpec sampler;
  std::string source_name;  // the file as given
  std::string source_text;  // its whole text, kept for the results file
  SweepTrials trials;
  std::vector<std::string> notes;  // things the user should know (merged duplicates)
  std::vector<SectionSummary> sections;
  // What defines the trials, whatever the file's comments, spacing and key
  // order: every section's values but limits that are not part of a trial
  // (mem_budget, timeout) and the sweep's name; with the expansion rules'
  // version. Empty for a sweep not read from a file.
  std::string definition;
  // [search]: the trials above are its configurations (the axis at the
  // range's low end), each searched at each limit (docs/search.md).
  std::optional<SearchSpec> search;
  // The part of a split sweep these trials are (SweepPart::name(),
  // "dataset=mnist"); empty for the whole sweep.
  std::string part;
};

// A sweep-file error: names the file, the line and the key, and says what
// was expected. what() is "FILE:LINE: KEY: DETAIL" ("FILE:LINE: DETAIL"
// without a key); each part is also a field of its own.
class ConfigError : public InputError {
 public:
  ConfigError(std::string file, int line, std::string key, std::string detail);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key() const { return key_; }        // dotted ("trial[0].hidden[2]"), or empty
  const std::string& detail() const { return detail_; }  // what was expected, and found

 private:
  std::string file_;
  int line_;
  std::string key_;
  std::string detail_;
};

// Parses and expands a sweep file. Throws ConfigError for bad content and
// InputError when the file cannot be read.
SweepSpec load_sweep_file(const std::filesystem::path& path);

// The same, from text; `source_name` is used in messages.
SweepSpec parse_sweep(std::string_view text, const std::string& source_name);

// Configuration `configuration`'s probe: the axis at `point.value`, the
// limit as its memory budget (the trial's own, if smaller, stays), the
// epochs of a probe (probe_epochs) unless `point.full`, and the id made
// again. The value is within the axis's range ([search] checked it).
TrialSpec search_trial(const TrialSpec& configuration, const SearchSpec& search, const SearchPoint& point);

// One field of a trial described outside a sweep file, by its [[trial]]
// key ("dataset", "hidden", "batch_size", ...), with a text, a whole number
// or a list of whole numbers.
struct TrialField {
  std::string name;
  std::variant<std::string, std::int64_t, std::vector<std::int64_t>> value;
};

// The trial that a sweep file named `source_name` holding one [[trial]]
// with these fields would give: the same checks, defaults, origin
// ("SOURCE:1 trial[0]") and id. A bad value throws ConfigError whose key()
// is "trial[0].FIELD" (with "[i]" for a list's element) and whose detail()
// says what was expected.
TrialSpec trial_from_fields(const std::vector<TrialField>& fields, const std::string& source_name);

}  // namespace memsweep
