#pragma once
// What a sweep records, as plain rows: one per trial attempt, per sample and
// per epoch. The rows are fixed-size and trivially copyable, so that the same
// bytes are a row of the results file's tables (store.hpp), an MPI message
// from a worker to rank 0 (sweep.hpp), and a struct a test can build by hand.
// The schema (version 3 since each trial runs in a process of
// its own, 4 since a trial may be a program's process tree, 5 since
// messages are stored whole) is documented in docs/results-file.md.
//
// Also here, as pure functions: which trials a sweep still has to run, given
// what a results file already holds (resume), and the sweep's identity hash.

#include "memsweep/config.hpp"
#include "memsweep/estimate_parts.hpp"
#include "memsweep/flush_interval.hpp"
#include "memsweep/sampler.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace memsweep {

inline constexpr int kSchemaVersion = 13;
// The oldest version readers still read (columns added later read as their
// "not measured" value); only the current one is written or resumed.
inline constexpr int kOldestReadableSchemaVersion = 1;
inline constexpr std::string_view kFormatName = "memsweep";

// Fixed string widths of the tables' text columns (NUL-padded, not
// necessarily NUL-terminated: a 12-character trial id fills its 12 bytes).
inline constexpr std::size_t kTrialIdChars = 12;
inline constexpr std::size_t kNameChars = 16;  // dataset, model, optimizer, status
inline constexpr std::size_t kHostChars = 64;
inline constexpr std::size_t kMessageChars = 256;                 // TrialRow::message: a message's first bytes
inline constexpr std::size_t kMessagePieceChars = 256;            // MessageRow::text
inline constexpr std::size_t kDefinitionChars = 512;              // TrialSpec::canonical_text()
inline constexpr std::size_t kParamsChars = kMaxParamsJsonBytes;  // TrialSpec::params_json()
inline constexpr std::size_t kGpuDevicesChars = 40;               // "0,1,...,15"
inline constexpr std::size_t kGpuUuidsChars = 256;                // 6 UUIDs ("GPU-" + 36), commas
inline constexpr std::size_t kGpuNameChars = 64;                  // "NVIDIA H100 80GB HBM3"
inline constexpr std::size_t kAllocConfChars = 128;               // PYTORCH_CUDA_ALLOC_CONF
inline constexpr std::size_t kMetricNameChars = kMaxMetricName;   // MetricRow::name: a [programs] metric's name

template <std::size_t N>
using FixedString = std::array<char, N>;

// Copies `text` into `out`, cut at N bytes (on a UTF-8 boundary), NUL-padded.
template <std::size_t N>
void set_fixed(FixedString<N>& out, std::string_view text);
// The text up to the first NUL or the end.
template <std::size_t N>
std::string get_fixed(const FixedString<N>& field);

// A trial attempt's final status. `interrupted` and `killed` are not final
// for the trial: a resume may run it again (killed: per --retry-killed).
// `timeout`: the trial passed its time limit and its process was killed.
enum class TrialStatus { ok, failed, diverged, over_budget, timeout, interrupted, killed };
std::string_view status_name(TrialStatus status);
std::optional<TrialStatus> parse_status(std::string_view name);
inline constexpr std::string_view kStatusNames = "ok, failed, diverged, over_budget, timeout, interrupted, killed";
// ok, failed, diverged, over_budget, timeout: the trial has its result and never runs again.
bool is_final(TrialStatus status);
// The names of the final statuses, in kStatusNames' order: the results
// file's `final_statuses` attribute (schema 10), so that a reader need not
// know which they are.
std::vector<std::string> final_status_names();

// One row of /trials: a trial attempt, its hyperparameters and its result.
// Bytes are bytes of the rank's process (RSS) or of the node (sys_*); -1
// where a figure could not be measured. Times are seconds: start_time and
// end_time since the Unix epoch, the others since the trial's start.
// A program trial's hidden widths when its file neither sets nor names
// `hidden` (TrialRow::depth): blank, not an MLP without hidden layers. Its
// other blank built-in fields: "" for names, NaN learning rate, 0 epochs and
// batch size (TrialSpec::shows_field).
inline constexpr std::int32_t kBlankDepth = -1;
// A row's estimate_parts before any part is recorded: every part absent.
inline constexpr auto kNoEstimateParts = [] {
  std::array<std::int64_t, kEstimatePartColumns.size()> parts{};
  parts.fill(-1);
  return parts;
}();

struct TrialRow {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;  // 0 for a trial's first run, then 1, 2, ... (resumes)
  std::int32_t repeat = 0;
  std::int32_t run = 0;  // which invocation of `memsweep run` on this file: 0, then one more per resume
  // The trial's 0-based position in the whole sweep as `memsweep plan` lists
  // it (TrialSpec::plan_index; schema 5): a part's trials keep the whole
  // sweep's numbers. -1: not recorded (older files).
  std::int32_t plan_index = -1;
  FixedString<kNameChars> dataset{};
  FixedString<kNameChars> model{};
  FixedString<kNameChars> optimizer{};
  double learning_rate = 0.0;
  std::int32_t epochs = 0;
  std::int32_t batch_size = 0;
  std::int32_t depth = 0;  // number of hidden layers
  std::array<std::int32_t, kMaxHiddenLayers> hidden{};
  std::array<std::int32_t, kMaxConvBlocks> channels{};  // cnn only
  std::uint64_t seed = 0;
  std::int32_t rank = -1;
  FixedString<kHostChars> host{};
  FixedString<kNameChars> status{};
  // The message's first kMessageChars bytes (cut on a UTF-8 boundary); the
  // whole of it goes to /messages (schema 5, MessageRow).
  FixedString<kMessageChars> message{};
  double start_time = 0.0;
  double end_time = 0.0;
  double wall_seconds = 0.0;
  std::int64_t rss_baseline = -1;
  std::int64_t rss_peak = -1;
  double rss_mean = -1.0;
  std::int64_t rss_footprint = -1;    // peak - baseline: the trial's own memory
  double sys_used_mean = -1.0;        // the paper's formula 2 (mean of formula 1 over the samples)
  std::int64_t predicted_bytes = -1;  // estimate.hpp's full estimate of the footprint
  std::int32_t epochs_done = 0;
  double final_train_loss = -1.0;
  double test_accuracy = -1.0;  // after the last epoch done, in [0, 1]
  std::uint64_t samples = 0;
  std::uint64_t dropped_samples = 0;
  FixedString<kDefinitionChars> definition{};  // TrialSpec::canonical_text()
  // How the trial's process ended (schema 3; rows of older files read the
  // defaults). end_cause is one of the end_cause names below.
  std::int32_t pid = -1;                // the trial process on `host`; -1: none was started
  std::int32_t end_signal = 0;          // the signal that ended it; 0: it exited (or none was started)
  std::int32_t oom_killed = 0;          // 1: the kernel's OOM killer ended it
  FixedString<kNameChars> end_cause{};  // empty: no process was started
  FixedString<kNameChars> isolation{};  // cgroup2, cgroup1 or proc: what measured and limited the trial
  double start_seconds = -1.0;          // spawn to ready: the per-trial process start cost
  std::int64_t cgroup_peak = -1;        // the trial's cgroup's peak (memory.peak, max_usage_in_bytes); -1: none
  // Who trained it and what its process tree did (schema 4; rows of older
  // files read the defaults: an empty trainer is memsweep's own).
  FixedString<kNameChars> trainer{};   // "memsweep", or the program's name
  FixedString<kParamsChars> params{};  // TrialSpec::params_json()
  std::int32_t processes = -1;         // processes the trial's tree had, all told; -1: not recorded
  std::int64_t rss_peak_hwm_sum = -1;  // the sum of each process's own peak (VmHWM): the tree's peak at most
  std::int64_t process_peak_max = -1;  // the largest single process's peak (VmHWM, wait4's ru_maxrss)
  std::int32_t bad_event_lines = 0;    // a program's events lines that were not understood
  // The search the trial is a probe of (schema 6; rows of older files and
  // of trials outside searches read the defaults): SearchRow::search, the
  // probe's number in it from 0, the axis value, the limit in bytes, and
  // whether it trained the configuration's own epochs (1: a verification,
  // or a probe as long as the trial) or probe_epochs (0).
  std::int32_t search = -1;
  std::int32_t probe = -1;
  std::int64_t axis_value = -1;
  std::int64_t search_limit = -1;
  std::int32_t full_run = -1;
  // 1: the program said it ran out of memory (an events line
  // {"out_of_memory": ...}, a GPU's included); 0: not (schema 6).
  std::int32_t reported_oom = 0;
  // GPU memory (schema 7; src/sampler/gpu/ measures it, columns.hpp declares the
  // columns): -1 / empty when not measured.
  std::int64_t gpu_peak = -1;
  FixedString<kGpuDevicesChars> gpu_devices{};  // "0,2"
  FixedString<kNameChars> gpu_peak_source{};    // "tree", "device_delta"
  std::int64_t torch_allocated_peak = -1;       // the program's {"gpu": ...} events line
  std::int64_t torch_reserved_peak = -1;
  // How the trainer held the step's buffers (schema 8; memory_plan.hpp):
  // "keep", "reuse" or "recompute", and recompute's layers per segment (0:
  // the default, ceil(sqrt(L)); always 0 for the other plans). Rows of
  // older files read keep and 0, what every trial then trained with; a
  // program trial that neither sets nor names memory_plan reads "".
  FixedString<kNameChars> memory_plan{'k', 'e', 'e', 'p'};
  std::int32_t recompute_every = 0;
  // What the analysis would otherwise work out again (schema 10; -1 where
  // unknown, and in rows of older files): the model's weights and biases
  // (estimate.hpp's parameter_count), and each part of the estimate behind
  // predicted_bytes, in kEstimatePartColumns' order (the full estimate's
  // parts, the trial process, the resident dataset; a program's Q&A rule).
  std::int64_t parameters = -1;
  std::array<std::int64_t, kEstimatePartColumns.size()> estimate_parts = kNoEstimateParts;
  // The training examples each epoch went through, after
  // --max-train-examples (schema 12): what counts per step are worked out
  // from. -1 where not known (a program's trial; rows of older files).
  std::int64_t train_examples = -1;
  // The trial's own GPUs (schema 13; docs/runner.md, "A trial's GPUs"):
  // their UUIDs as its CUDA_VISIBLE_DEVICES named them, NVML's name for
  // them, their memory in all, the driver's version and its CUDA's; and
  // the PYTORCH_CUDA_ALLOC_CONF the program ran with. Empty and -1 for a
  // trial given no GPU, and in rows of older files.
  FixedString<kGpuUuidsChars> gpu_uuids{};
  FixedString<kGpuNameChars> gpu_name{};
  std::int64_t gpu_total = -1;
  FixedString<kNameChars> gpu_driver{};
  FixedString<kNameChars> cuda_version{};
  FixedString<kAllocConfChars> cuda_alloc_conf{};
  // Its GPU limit (schema 13; docs/runner.md, "A GPU limit"): the bytes its
  // devices' use may reach in all (-1: none), what held it
  // (gpu_limit_mechanism: "device", "reserve", "dmem" or "watch") and what
  // a reserve held beside it.
  std::int64_t gpu_limit = -1;
  FixedString<kNameChars> gpu_limit_mechanism{};
  std::int64_t gpu_reserved = -1;
  // A probe's search's device: "host" or "gpu" (search_limit is its GPU
  // limit, 0 for the whole device); empty outside searches (schema 13).
  FixedString<kNameChars> search_device{};
};

// Records `bytes` as the trial's estimate part `part` (kEstimatePartColumns);
// throws std::invalid_argument for a part that has no column.
void record_estimate_part(TrialRow& row, std::string_view part, std::uint64_t bytes);

// One row of /searches (schema 6): one configuration's search at one limit,
// written when the search ends. Sizes in bytes; -1 where there is none.
inline constexpr std::size_t kAxisChars = 64;
struct SearchRow {
  std::int32_t search = 0;         // configuration × limits + limit index
  std::int32_t configuration = 0;  // the configuration's position (`memsweep plan`'s, from 0)
  std::int32_t limit_index = 0;    // into [search] limit
  std::int32_t run = 0;            // the run that ended it
  // The configuration: trial_row_for() of it, with the axis at the range's low end.
  FixedString<kTrialIdChars> configuration_id{};
  FixedString<kNameChars> trainer{};
  FixedString<kNameChars> dataset{};
  FixedString<kNameChars> model{};
  FixedString<kNameChars> optimizer{};
  double learning_rate = 0.0;
  std::int32_t epochs = 0;
  std::int32_t batch_size = 0;
  std::int32_t depth = 0;
  std::array<std::int32_t, kMaxHiddenLayers> hidden{};
  std::array<std::int32_t, kMaxConvBlocks> channels{};
  std::int32_t repeat = 0;
  FixedString<kParamsChars> params{};
  FixedString<kDefinitionChars> definition{};  // the configuration's canonical text
  FixedString<kAxisChars> axis{};
  std::int64_t range_low = 0;
  std::int64_t range_high = 0;
  std::int64_t limit = 0;                 // bytes
  FixedString<kNameChars> enforced_by{};  // cgroup2, cgroup1 or budget: how the limit held the trials
  FixedString<kNameChars> strategy{};
  FixedString<kNameChars> status{};  // a search_status name
  std::int64_t fits = -1;            // the answer: the largest value that trained within the limit
  std::int32_t fits_verified = 0;    // 1: `fits` trained to the end (its own epochs)
  std::int64_t does_not_fit = -1;    // the smallest value seen not to fit
  double fit_a_mib = -1.0;           // peak = a + b × value, fitted on the probes that fit; -1: no fit
  double fit_b_mib = -1.0;           // MiB per unit of the axis
  std::int64_t predicted = -1;       // the estimate's answer, built-in trials only
  std::int32_t trials = 0;           // trials the search used
  double seconds = 0.0;              // its trials' wall time, summed
  FixedString<kMessageChars> message{};
  // The configuration's memory plan (schema 8), as TrialRow's: searches of
  // one configuration under two plans are two searches.
  FixedString<kNameChars> memory_plan{'k', 'e', 'e', 'p'};
  std::int32_t recompute_every = 0;
  // Which memory the limit is of (schema 13): "host", or "gpu" with the
  // device the probes ran on, its name and size (the limit "device" is
  // that size); older files read "host" and no device.
  FixedString<kNameChars> device{'h', 'o', 's', 't'};
  FixedString<kGpuNameChars> gpu_name{};
  std::int64_t gpu_total = -1;
};
static_assert(std::is_trivially_copyable_v<SearchRow>);

// SearchRow::status.
namespace search_status {
inline constexpr std::string_view kFound = "found";             // fits and does_not_fit within the resolution
inline constexpr std::string_view kBelowRange = "below_range";  // even the range's low end does not fit
inline constexpr std::string_view kAboveRange = "above_range";  // the range's high end fits
inline constexpr std::string_view kStopped = "stopped";         // max_trials reached first
inline constexpr std::string_view kFailed = "failed";           // a trial failed for another reason than memory
}  // namespace search_status

// TrialRow::end_cause: why the trial's process ended.
namespace end_cause {
inline constexpr std::string_view kExited = "exited";       // it reported its result and exited
inline constexpr std::string_view kBudget = "budget";       // the rank killed it: RSS past the memory budget
inline constexpr std::string_view kGpu = "gpu";             // the rank killed it: its GPU memory past its GPU limit
inline constexpr std::string_view kTimeout = "timeout";     // the rank killed it: past its time limit
inline constexpr std::string_view kStopped = "stopped";     // the rank killed it: it did not stop when asked
inline constexpr std::string_view kOom = "oom";             // the kernel's OOM killer
inline constexpr std::string_view kSignal = "signal";       // killed by a signal the rank did not send
inline constexpr std::string_view kCrash = "crash";         // a fault signal (SIGSEGV, SIGBUS, SIGABRT, ...)
inline constexpr std::string_view kNoResult = "no_result";  // exited without reporting a result
// The three below: no result came, and the trial runs again (interrupted),
// unless its rank was lost both of the last two times it ran it.
inline constexpr std::string_view kRankLost = "rank_lost";  // its rank died (or rank 0, or the launcher ended it)
inline constexpr std::string_view kNodeLost = "node_lost";  // the job script says a node of the run was lost
inline constexpr std::string_view kSilent = "silent";  // rank 0 gave its rank up as silent (stopped, hung, cut off)
}  // namespace end_cause

// One row of /samples. `counters` follow the file's counter columns
// (FileHeader::counter_columns); a worker that could not open one writes -1.
struct SampleRow {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;
  std::int32_t rank = -1;
  std::int32_t epoch = 0;  // 0 before the first epoch (setup), then 1, 2, ...
  // What the trial was doing when the sample was taken (schema 5): a
  // sample_phase value (sampler.hpp). Older files read kUnknown.
  std::int32_t phase = sample_phase::kUnknown;
  double t = 0.0;  // seconds since the trial's sampler started
  std::int64_t rss = -1;
  std::int64_t anon_rss = -1;
  std::int64_t pss = -1;
  std::int64_t sys_used = -1;
  std::int64_t sys_total = -1;  // the node's MemTotal
  std::int64_t sys_available = -1;
  std::int64_t sys_active = -1;
  // GPU memory (schema 7): -1 when not measured.
  std::int64_t gpu_used = -1;
  std::int64_t gpu_tree_used = -1;
  std::array<std::int64_t, kMaxCounters> counters{};
};

// One row of /epochs.
struct EpochRow {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;
  std::int32_t epoch = 0;  // from 1
  double train_loss = 0.0;
  double test_accuracy = 0.0;
  double seconds = 0.0;   // this epoch's wall time
  std::int64_t rss = -1;  // at the end of the epoch
  std::int64_t sys_used = -1;
};

// One row of /messages (schema 5): a piece of a trial attempt's whole
// message. A message of any length is stored as pieces of at most
// kMessagePieceChars bytes, each cut on a UTF-8 boundary (so each is text of
// its own), numbered from 0; the whole message is their concatenation in
// piece order. Fixed-size pieces rather than one variable-length string:
// HDF5 1.10's SWMR does not support variable-length data (its global heap),
// and a reader following the writer fails on it (docs/results-file.md).
struct MessageRow {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;
  std::int32_t run = 0;
  std::int32_t piece = 0;
  FixedString<kMessagePieceChars> text{};
};

// One row of /metrics (schema 11): a program's own figure, matched by a
// [programs.NAME] metrics pattern in its standard output
// (docs/sweep-file.md, "Metrics"): per trial attempt, metric and epoch, the
// last value matched in that epoch. Epoch 0 holds what came before any
// epoch was known (all of it when the program gives no epochs). An
// attempt's rows of one metric come in the order matched, so its last row
// holds the last value the program printed: the trial's final value.
struct MetricRow {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;
  std::int32_t epoch = 0;
  FixedString<kMetricNameChars> name{};
  double value = 0.0;
  double seconds = 0.0;      // since the program's start, when the last match was read
  std::int32_t matches = 0;  // the lines of this epoch that matched
};

// The results file's root attributes (store.hpp). Written once, when the file is created.
struct FileHeader {
  std::string format{kFormatName};
  int schema_version = kSchemaVersion;
  std::string sweep_name{};
  std::string sweep_file{};  // as given on the command line
  std::string sweep_text{};  // its whole text
  std::string sweep_hash{};  // results.hpp sweep_hash(): of the part's trials when `part` is set
  // The part of the sweep the file holds, as SweepPart::name() gives it
  // ("dataset=mnist", sweep_split.hpp); empty: the whole sweep. Files written
  // before parts existed have no such attribute and read as empty.
  std::string part{};
  std::string command_line{};
  std::string memsweep_version{};
  std::string onednn_version{};
  std::string mpi_version{};
  std::string papi_version{};
  std::string hdf5_version{};
  int ranks = 1;
  std::vector<std::string> hosts{};  // by rank
  std::string start_time{};          // ISO 8601, UTC
  int sampler_interval_ms = 0;
  std::int64_t planned_trials = 0;              // attempts the sweep defines (trials x repeats)
  std::vector<std::string> events_requested{};  // as the sweep file asked (empty: defaults)
  std::vector<std::string> counter_columns{};   // events recorded, in the samples table's column order
  // Per counter column, what served it when the file was created: "papi" or
  // "kernel" (event_source_name()), and the perf_event type and config
  // (encoding_text()). Files written before counters had two sources have
  // neither attribute; they read as empty (all their counters came from PAPI).
  std::vector<std::string> counter_sources{};
  std::vector<std::string> counter_encodings{};
  std::vector<std::string> event_notes{};  // events left out, and why
  bool swmr = true;
};

// Paths in /runs: long enough for a cluster's scratch paths.
inline constexpr std::size_t kPathChars = 1024;

// One row of /runs: each invocation of `memsweep run` on the file.
struct RunRow {
  std::int32_t run = 0;
  double start_time = 0.0;  // seconds since the Unix epoch
  std::int32_t ranks = 0;
  FixedString<kMessageChars> hosts{};  // comma-separated
  FixedString<kMessageChars * 4> command_line{};
  FixedString<kNameChars> memsweep_version{};
  // How the run ended (schema 3; older files read the defaults): rank 0
  // rewrites its run's row when a stop begins and when it closes the file.
  double end_time = -1.0;               // seconds since the Unix epoch; -1: not (yet) ended
  FixedString<kNameChars> end_state{};  // a run_end_state name; empty: running, or rank 0 died unaware
  // What the run measured with, and how it was started (schema 5; older
  // files read the defaults). A resume reuses them (run_record.hpp).
  FixedString<kPathChars> data_dirs{};           // the dataset search folders, absolute, ':'-separated
  std::int64_t max_train_examples = 0;           // 0: all
  std::int64_t max_test_examples = 0;            // 0: all
  std::int32_t threads = 0;                      // training threads per rank as asked; 0: the CPUs the rank may use
  FixedString<kNameChars> counter_source{};      // auto, papi or kernel: the sweep file's, or --counter-source
  std::int64_t mem_budget = -1;                  // bytes; -1: none
  double trial_timeout = -1.0;                   // seconds; -1: none
  double flush_interval = kDefaultFlushSeconds;  // seconds
  std::int32_t no_swmr = 0;                      // 1: --no-swmr
  FixedString<kNameChars> launcher{};            // mpirun, srun, or empty: alone (ranks 1) or not known
  FixedString<kPathChars> executable{};          // memsweep as it was invoked
  FixedString<kPathChars> sweep_file{};          // as given
  FixedString<kPathChars> output_option{};       // -o as given; empty: the default
  FixedString<kNameChars> split_by{};            // --split-by; empty: the whole sweep
  std::int32_t part = -1;                        // --part; -1: the whole sweep
  FixedString<kMessageChars> retried{};          // the statuses this run ran again (--retry), comma-separated
  FixedString<kPathChars> changed_options{};     // what --allow-changed-options let differ from the run before
  // What the predictions added for a fresh trial process on rank 0's node
  // (trial_process_cost.hpp): its coefficients and where they came from
  // (schema 9; older files read empty).
  FixedString<kMessageChars> trial_process_cost{};
};

// RunRow::end_state.
namespace run_end_state {
inline constexpr std::string_view kStopping = "stopping";  // a stop began (a signal): written at once
inline constexpr std::string_view kStopped = "stopped";    // closed after a stop, trials left to run
inline constexpr std::string_view kEnded = "ended";        // closed with every trial run
}  // namespace run_end_state

static_assert(std::is_trivially_copyable_v<TrialRow>);
static_assert(std::is_trivially_copyable_v<RunRow>);
static_assert(std::is_trivially_copyable_v<SampleRow>);
static_assert(std::is_trivially_copyable_v<EpochRow>);
static_assert(std::is_trivially_copyable_v<MessageRow>);
static_assert(std::is_trivially_copyable_v<MetricRow>);

// ---- messages -------------------------------------------------------------

// A trial attempt's row and its whole message: what a TrialRunner returns, a
// worker sends to rank 0, and the results file stores (/trials, /messages).
struct TrialRecord {
  TrialRow row;
  std::string message;  // any length; row.message holds its first bytes (set_message)
};

// Sets the record's whole message and the row's cut copy of it.
void set_message(TrialRecord& record, std::string_view message);

// `text` as valid UTF-8: each invalid sequence (a stray continuation byte, a
// truncated or overlong sequence, a surrogate, a code point past U+10FFFF)
// replaced by U+FFFD, one per maximal invalid subpart (as Unicode advises),
// and so is NUL, which the file's NUL-padded text columns cannot hold.
// Program output can hold any bytes; the results file holds text.
std::string valid_utf8(std::string_view text);

// The message for one console line: valid UTF-8, line breaks and other
// control characters as spaces, and at most `max_bytes` bytes, cut on a
// character and ending in "…" when shortened.
std::string one_line_message(std::string_view message, std::size_t max_bytes);

// The /messages rows of `row`'s whole `message` (valid UTF-8): none for an
// empty message.
std::vector<MessageRow> message_rows(const TrialRow& row, std::string_view message);

// Which trial attempt a message belongs to.
struct MessageKey {
  std::string trial_id;
  std::int32_t attempt = 0;
  std::int32_t run = 0;
  auto operator<=>(const MessageKey&) const = default;
};
using TrialMessages = std::map<MessageKey, std::string>;

// The whole messages that /messages' rows hold, pieces joined in piece order.
TrialMessages join_message_rows(std::span<const MessageRow> rows);

// `row`'s whole message: from `messages` when there (schema 5), otherwise
// the row's own message column (older files: cut at kMessageChars bytes).
std::string whole_message(const TrialRow& row, const TrialMessages& messages);

// Whether `later`, a row of the same trial, stands for the trial in place of
// `standing`: the trial's result is its latest attempt with a final status
// (a retried `failed` gives way to the retry's `ok`), else its latest
// attempt. summary and watch show that row.
bool stands_for_trial(const TrialRow& later, const TrialRow& standing);

// The row that stands for each trial (stands_for_trial) among a file's trial
// rows, and how many rows (attempts) each trial has. Rows are added one at a
// time in file order, so that watch, which reads a file a block at a time,
// keeps it as it reads rather than working it out again at each refresh.
class StandingRows {
 public:
  struct Trial {
    std::size_t row = 0;  // index of the row that stands for the trial
    int attempts = 0;     // the trial's rows
  };

  // Adds `rows[index]`, the next row in file order; every row before it was
  // added already, and the indices are kept into `rows`.
  void add(std::span<const TrialRow> rows, std::size_t index);

  // The trial's, nullptr when it has no row.
  const Trial* find(const std::string& trial_id) const;
  // Every trial with a row, by id.
  const std::map<std::string, Trial>& by_id() const { return trials_; }
  // The trial ids in the order their first rows come.
  const std::vector<std::string>& order() const { return order_; }

 private:
  std::map<std::string, Trial> trials_;
  std::vector<std::string> order_;
};

// StandingRows of all of `rows`.
StandingRows standing_rows(std::span<const TrialRow> rows);

// A row with the trial's identity and hyperparameters filled in, and
// everything else at its "not measured" value.
TrialRow trial_row_for(const TrialSpec& trial, int attempt);

// For each of the file's counter `columns`, the slot of the sampler's
// counters (`sampler_counters`) that fills it, or -1: worked out once per
// sampler, not per sample.
std::vector<int> counter_slots(std::span<const std::string> sampler_counters, std::span<const std::string> columns);

// A sampler sample as a row, its counters moved to the file's columns by
// `sources` (counter_slots()); a column without a source gets -1.
SampleRow sample_row(const Sample& sample, std::span<const int> sources);

// The same, matching the names for this one sample.
SampleRow sample_row(const Sample& sample, std::span<const std::string> sampler_counters,
                     std::span<const std::string> columns);

// ---- the sweep's identity -----------------------------------------------

// A hash of what makes two runs the same sweep: its definition
// (SweepSpec::definition: the sections' values in a canonical spelling, so
// comments, spacing, key order and limits such as timeout do not change
// it), the part it is of a split sweep, and the sampler's interval and
// requested events (they decide the samples table's columns). Made from the
// file, not from its trials: the same in a second for 10^7 of them. A sweep
// not read from a file (no definition) is hashed by its trial ids. 16 hex
// digits.
std::string sweep_hash(const SweepSpec& sweep);

// An id as trial_id() writes it (12 lowercase hex digits) as a number, whose
// order is the text's; nullopt for any other text.
std::optional<std::uint64_t> trial_id_number(std::string_view id);

// The hash results files written before issue 29 hold: the set of trial ids
// (of the part), the interval and the events. Every trial is made: for the
// sweeps of at most 10^6 trials that such files come from.
std::string legacy_sweep_hash(const SweepSpec& sweep);

// ---- resume ---------------------------------------------------------------

// What the samples table says about one attempt (store.hpp scans it).
struct SeriesSummary {
  std::string trial_id;
  std::int32_t attempt = 0;
  std::int32_t rank = -1;
  std::uint64_t samples = 0;
  std::int64_t first_rss = -1;  // the first sample follows the baseline closely
  std::int64_t peak_rss = -1;   // the largest sample
  double mean_rss = -1.0;
  double sys_used_mean = -1.0;
  double last_t = 0.0;
  std::int32_t last_epoch = 0;
};

// An attempt's SeriesSummary, its samples added one at a time in the order
// they were taken: the store's scan of /samples, and rank 0 for the attempt
// of a worker that went silent.
struct SampleChunkSeries;  // sample_chunk.hpp
class SeriesAccumulator {
 public:
  SeriesAccumulator(std::string trial_id, std::int32_t attempt);
  void add(std::int32_t rank, std::int32_t epoch, double t, std::int64_t rss, std::int64_t sys_used);
  // A compressed chunk's rows, the next of the attempt's samples.
  void add(const SampleChunkSeries& chunk);
  SeriesSummary summary() const;

 private:
  SeriesSummary summary_;
  double rss_sum_ = 0.0;
  std::uint64_t rss_count_ = 0;
  double sys_used_sum_ = 0.0;
  std::uint64_t sys_used_count_ = 0;
};

// "its last sample was at 3.200 s in epoch 1, 160 samples, peak RSS 52.1 MiB"
std::string series_text(const SeriesSummary& series);

// The row of an attempt whose result never came, from its samples alone
// (the first follows the baseline closely; the trial ran at least until the
// last): `status`, `cause` (end_cause::kRankLost, kNodeLost or kSilent), `message`.
TrialRecord row_from_series(const TrialSpec& trial, const SeriesSummary& series, int run, TrialStatus status,
                            std::string_view cause, std::string_view message);

// One attempt to run: trials[index], as attempt number `attempt`.
struct PendingTrial {
  std::size_t index = 0;
  std::int32_t attempt = 0;
  auto operator<=>(const PendingTrial&) const = default;
};

// The attempts a run makes, in the sweep's order, without a list of 10^7
// of them: every position of the sweep's trials but those of trials a
// resume runs no more, each at its next attempt (by trial id). Or exactly
// the attempts listed (tests, benchmarks).
class PendingTrials {
 public:
  PendingTrials() = default;                        // every trial, attempt 0
  PendingTrials(std::vector<PendingTrial> listed);  // NOLINT(google-explicit-constructor): exactly these
  // A resume's: trials whose id is in `done` are skipped, the others run
  // at next_attempt[id], 0 when absent; `count` of them.
  PendingTrials(std::unordered_set<std::string> done, std::unordered_map<std::string, std::int32_t> next_attempt,
                std::size_t count);

  const std::optional<std::vector<PendingTrial>>& listed() const { return listed_; }
  bool runs(const std::string& id) const { return !done_.contains(id); }
  std::int32_t attempt(const std::string& id) const;
  // How many attempts, out of `sweep_trials`: where duplicates among a large
  // sweep's trials are not known (SweepTrials::duplicates_known()), an
  // upper bound.
  std::size_t count(std::size_t sweep_trials) const;
  // Each attempt, for a sweep of this size, by making every trial: for
  // tests and small sweeps.
  std::vector<PendingTrial> expand(const SweepTrials& trials) const;

 private:
  std::optional<std::vector<PendingTrial>> listed_;
  std::unordered_set<std::string> done_;
  std::unordered_map<std::string, std::int32_t> next_attempt_;
  std::optional<std::size_t> count_;
};

struct ResumePlan {
  // Rows to append before running anything, one per attempt that streamed
  // samples but has no trial row, with the peak and mean its samples
  // reached: `killed` when its rank died (the trial's process with it),
  // `interrupted` when rank 0 died while the attempt's process was healthy
  // (it runs again like any interrupted trial).
  std::vector<TrialRecord> lost_rows;
  PendingTrials pending;                       // in the sweep's order
  std::size_t already_final = 0;               // trials with a final status in the file
  std::size_t killed_not_retried = 0;          // killed more than retry_killed times: not run again
  std::size_t unknown_rows = 0;                // rows whose trial id is not in this sweep (kept, ignored)
  std::map<std::string, std::size_t> retried;  // by status: trials run again because of RetryPolicy::statuses
};

// Which ended trials a resume runs again. `killed`: a trial killed (the OOM
// killer, a signal, its rank dying) at most that many times runs again by
// itself (--retry-killed N). `statuses`: a trial whose latest attempt ended
// with one of these runs once more, final or not (--retry, --retry-failed).
struct RetryPolicy {
  RetryPolicy(int killed_limit = 0, std::set<TrialStatus> retried_statuses = {})  // NOLINT: an int is --retry-killed
      : killed(killed_limit), statuses(std::move(retried_statuses)) {}
  int killed = 0;
  std::set<TrialStatus> statuses;
};

// "failed,killed" (--retry's value) as statuses; nullopt for a name that is
// not one, or `interrupted` (always run again anyway).
std::optional<std::set<TrialStatus>> parse_retry_statuses(std::string_view list);
inline constexpr std::string_view kRetryStatusNames = "failed, killed, diverged, over_budget, timeout";

// Who died when the last run left attempts without rows. Rank 0 marks its
// run when it sees a stop begin (a signal; under mpirun, the one every rank
// gets when another rank dies): a run with that mark lost its attempts to
// the ranks that died under them, a run without it lost them with rank 0.
enum class LostAttempts { rank_died, writer_died };

// Which trials still need to run. A trial is done when one of its rows has a
// final status, or when it was killed more than `retry.killed` times, unless
// its latest attempt's status is one `retry` runs again; its next attempt
// number is one past the largest attempt seen in rows or series. `run` is
// written into the lost attempts' rows.
//
// An attempt lost with its rank (samples, no row) is `interrupted` with
// `lost_cause` (end_cause::kRankLost or kNodeLost) and runs again: a lost
// rank, node or link is no result. The one bound: when the attempt before
// it was lost with its rank too, the trial itself is the likely cause (it
// kills its rank, e.g. through the node's own OOM killer), and it is
// `killed`, which runs again only under --retry-killed.
ResumePlan plan_resume(const SweepTrials& trials, const std::vector<TrialRow>& rows,
                       const std::vector<SeriesSummary>& series, const RetryPolicy& retry, int run, LostAttempts lost,
                       std::string_view lost_cause = end_cause::kRankLost);

// Whether a row records an attempt lost with its rank, node or link
// (interrupted, end cause rank_lost, node_lost or silent).
bool lost_with_its_rank(std::string_view status, std::string_view cause);

// ---- template definitions ---------------------------------------------------

namespace results::detail {
std::size_t utf8_cut(std::string_view text, std::size_t max_bytes);
}  // namespace results::detail

template <std::size_t N>
void set_fixed(FixedString<N>& out, std::string_view text) {
  out.fill('\0');
  const std::size_t length = results::detail::utf8_cut(text, N);
  for (std::size_t i = 0; i < length; ++i) out[i] = text[i];
}

template <std::size_t N>
std::string get_fixed(const FixedString<N>& field) {
  std::size_t length = 0;
  while (length < N && field[length] != '\0') ++length;
  return std::string(field.data(), length);
}

}  // namespace memsweep
