#include "runner/program_trial_runner.hpp"

#include "common/unique_fd.hpp"
#include "dataset/locate.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/model_spec.hpp"
#include "memsweep/program.hpp"
#include "memsweep/trainer.hpp"
#include "runner/capped_log.hpp"
#include "runner/output_metrics.hpp"
#include "runner/program_events.hpp"
#include "runner/program_launch.hpp"
#include "runner/trial_gpus.hpp"
#include "runner/trial_messages.hpp"
#include "sampler/process_tree.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace memsweep::runner::detail {
namespace {

// How much of a failed program's stderr its message keeps: the message is
// stored whole (/messages), so this bounds only what a console line or a
// table cell has to hold of a long traceback.
constexpr int kTailLines = 3;
constexpr std::size_t kTailBytes = 1000;

// The program's output: a pipe for each of stdout and stderr, read into
// its capped log (capped_log.hpp) in the log folder, or (no folder) into
// memory alone, for a failure's message; stdout also into the feed its
// metrics are matched from (output_metrics.hpp), when it has any. Declared
// in this order so that the pump ends before the logs and the feed it writes.
struct ProgramOutput {
  std::unique_ptr<OutputFeed> metrics_feed;
  std::unique_ptr<CappedLog> out_log;
  std::unique_ptr<CappedLog> err_log;
  Pipe out;  // the write ends are the program's stdout and stderr
  Pipe err;
  std::unique_ptr<OutputPump> pump;
};

// "<trial id>-<attempt>": the logs' and the trial folder's name.
std::string attempt_stem(const TrialSpec& trial, int attempt) { return fmt::format("{}-{}", trial.id, attempt); }

ProgramOutput open_program_output(const std::filesystem::path& log_dir, const TrialSpec& trial, int attempt) {
  const std::uint64_t limit = trial.program->log_limit_bytes;
  ProgramOutput output;
  if (log_dir.empty()) {
    output.out_log = std::make_unique<CappedLog>(UniqueFd(), std::filesystem::path(), limit, "stdout");
    output.err_log = std::make_unique<CappedLog>(UniqueFd(), std::filesystem::path(), limit, "stderr");
  } else {
    std::filesystem::create_directories(log_dir);
    const std::string stem = (log_dir / attempt_stem(trial, attempt)).string();
    constexpr int kFlags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC;  // read back to be put in order
    UniqueFd out(::open((stem + ".out").c_str(), kFlags, 0644));
    UniqueFd err(::open((stem + ".err").c_str(), kFlags, 0644));
    if (!out || !err)
      throw std::system_error(errno, std::generic_category(),
                              "cannot open the program's log files " + stem + ".out/.err");
    output.out_log = std::make_unique<CappedLog>(std::move(out), stem + ".out", limit, "stdout");
    output.err_log = std::make_unique<CappedLog>(std::move(err), stem + ".err", limit, "stderr");
  }
  output.out = make_pipe("a program's stdout");
  output.err = make_pipe("a program's stderr");
  OutputPump::Observer on_stdout;
  if (!trial.program->metrics.empty()) {
    output.metrics_feed = std::make_unique<OutputFeed>();
    on_stdout = [feed = output.metrics_feed.get()](std::string_view bytes) { feed->append(bytes); };
  }
  output.pump = std::make_unique<OutputPump>(std::move(output.out.read_end), *output.out_log,
                                             std::move(output.err.read_end), *output.err_log, std::move(on_stdout));
  return output;
}

// {trial_dir}: a folder of the attempt's own, beside its logs (or, with no
// log folder, in the temporary folder), made empty before it starts.
std::filesystem::path make_trial_dir(const std::filesystem::path& log_dir, const TrialSpec& trial, int attempt) {
  const std::filesystem::path dir = log_dir.empty()
                                        ? std::filesystem::temp_directory_path() /
                                              fmt::format("memsweep-{}-{}", ::getpid(), attempt_stem(trial, attempt))
                                        : std::filesystem::absolute(log_dir) / attempt_stem(trial, attempt);
  try {
    // A folder of the same name is an earlier run's (--force): the attempt starts with an empty one.
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  } catch (const std::filesystem::filesystem_error& error) {
    throw std::runtime_error(fmt::format("cannot make the trial folder {} ({})", dir.string(), error.code().message()));
  }
  return dir;
}

// Whatever of the trial's tree is still there: its process group, the
// processes the probe found (a descendant may have left the group), and its
// cgroup's. The problem when the cgroup's could not be listed (then some
// may be left running), nothing otherwise.
std::optional<std::string> kill_tree(pid_t root, const ProcessTreeProbe& probe, const TrialCgroup* cgroup) {
  ::kill(-root, SIGKILL);
  for (const int pid : probe.members())
    if (pid != root) ::kill(pid, SIGKILL);
  if (cgroup == nullptr) return std::nullopt;
  try {
    cgroup->kill_members();
  } catch (const std::exception& error) {
    return fmt::format("its cgroup's processes could not be listed to end them ({})", one_line(error.what()));
  }
  return std::nullopt;
}

// The most the child had of the rank's image before its exec, short of the
// pages it faults in on its way there (kPreExecGrowthBytes): the larger of
// its own VmHWM now, waiting at its start gate or still on its way (read
// through a probe of its own, so that the tree's peaks never include it),
// and the rank's own VmHWM, which bounds what the fork copied (the child's
// RSS at the fork is pages the rank had). -1 if the child's is unreadable.
std::int64_t pre_exec_peak(pid_t pid) {
  std::int64_t child = -1;
  std::int64_t rank = -1;
  if (!make_proc_memory_probe(pid)->read_peak_rss(child)) return -1;
  make_proc_memory_probe()->read_peak_rss(rank);
  return std::max(child, rank);
}

// The row's memory columns from the program's tree: its peak is the
// largest of what the sampler and the watch's tree probe saw, all of it
// read after the exec (the samples from the exec on, each member's VmHWM,
// which a new image starts afresh), and of wait4's ru_maxrss only where it
// cannot be the rank's image from before the exec (program_max_rss()); it
// has no ready point, so its footprint is its whole peak.
void record_program_measures(TrialRow& row, const ProcessTreeStats& stats, const ProcessEnd& end,
                             std::int64_t pre_exec_peak, const RegionSummary& region, const WatchReport& seen) {
  row.process_peak_max =
      std::max({stats.largest_peak, program_max_rss(end.max_rss_bytes, pre_exec_peak), seen.last_peak});
  row.rss_peak = std::max(region.max_sampled_rss_bytes, row.process_peak_max);
  row.rss_peak_hwm_sum = stats.peak_sum >= 0 ? std::max(stats.peak_sum, row.process_peak_max) : row.process_peak_max;
  row.rss_footprint = row.rss_peak;
  record_sampled_means(row, region);
  row.processes = stats.processes_seen;
}

// The row's training columns from what the program reported on its events
// channel, and the Q&A rule's prediction from the model size it gave.
void record_program_progress(TrialRow& row, const ProgramProgress& progress, const TrialSpec& trial) {
  row.epochs_done = progress.epochs_done;
  row.final_train_loss = progress.last_loss;
  row.test_accuracy = progress.last_accuracy;
  row.bad_event_lines = progress.bad_lines;
  row.torch_allocated_peak = progress.gpu.allocated_peak;
  row.torch_reserved_peak = progress.gpu.reserved_peak;
  if (!progress.model_size) return;
  RuleCounts counts;
  counts.parameters = static_cast<std::uint64_t>(progress.model_size->parameters);
  counts.activations_per_example = static_cast<std::uint64_t>(progress.model_size->activations_per_example);
  const ImageShape input = model_spec(trial).input;
  counts.input_per_example = static_cast<std::uint64_t>(input.channels) * input.height * input.width;
  counts.batch = static_cast<std::uint64_t>(trial.batch_size);
  const MemoryEstimate rule = rule_estimate(counts);
  for (const EstimatePart& part : rule.parts) record_estimate_part(row, part.name, part.bytes);
  row.parameters = progress.model_size->parameters;
  row.predicted_bytes = static_cast<std::int64_t>(rule.total());
}

// The folder holding the trial's dataset files, for {data_dir}: where
// memsweep's trainer would read them. Synthetic data has none: the first
// folder on the search list.
std::string program_data_dir(const TrainingRunnerOptions& options, const TrialSpec& trial) {
  using namespace dataset::detail;
  switch (trial.dataset.kind) {
    case DatasetKind::synthetic: return options.data_dirs.empty() ? std::string() : options.data_dirs.front().string();
    case DatasetKind::cifar10: return locate_cifar_files(options.data_dirs).test_batch.parent_path().string();
    default: return locate_idx_files(trial.dataset.kind, options.data_dirs).train_images.parent_path().string();
  }
}

// What starting the program takes, found before its fork.
struct PreparedProgram {
  ProgramInvocation invocation;
  std::string executable;  // absolute: the child enters its workdir before it execs
  std::vector<std::string> environment;
  ProgramOutput output;
  std::filesystem::path trial_dir;  // {trial_dir}; empty: the program names none
};

// One attempt of a program trial, step by step; each step that can end
// the attempt says whether it goes on.
class ProgramTrial {
 public:
  ProgramTrial(RunnerState& runner, Attempt& attempt, const TrialSpec& trial)
      : runner_(runner),
        attempt_(attempt),
        trial_(trial),
        events_(make_pipe("a program's events")),
        gate_(make_pipe("a program's start gate")) {}

  void run(const TrialContext& context, TrialSink& sink) {
    run_steps(context, sink);
    end_output();
    end_trial_dir();
  }

 private:
  void run_steps(const TrialContext& context, TrialSink& sink) {
    if (!prepare(context)) return;
    if (!spawn_program()) return;
    limit_cgroup_to_budget(attempt_);
    hold_at_gate();
    if (!open_gate()) return;
    runner_.sampler->release();
    watch(context, sink);
  }
  bool prepare(const TrialContext& context);
  bool spawn_program();
  void end_output();
  void end_trial_dir();
  void hold_at_gate();
  bool open_gate();
  void watch(const TrialContext& context, TrialSink& sink);

  RunnerState& runner_;
  Attempt& attempt_;
  const TrialSpec& trial_;
  PreparedProgram program_;
  Pipe events_;  // kEventsFd in the program: its events lines
  Pipe gate_;    // a byte (or the end) lets the child exec
  std::unique_ptr<ProcessTreeProbe> tree_;
  // The most the program's child can have had before its exec: the rank's
  // image, which wait4's ru_maxrss may carry (program_max_rss()).
  std::int64_t pre_exec_peak_ = -1;
};

// Its command line, environment, executable and output files.
bool ProgramTrial::prepare(const TrialContext& context) {
  const TrainingRunnerOptions& options = runner_.options;
  ProgramRunValues values;
  values.threads = trial_threads(options);
  values.max_train_examples = options.max_train_examples;
  values.max_test_examples = options.max_test_examples;
  values.attempt = context.attempt;
  values.gpu = gpu_placeholder(attempt_.gpus);
  try {
    // Only a program that names {data_dir} reads the files; others' dataset is a label.
    if (trial_.program->uses_data_dir) values.data_dir = program_data_dir(options, trial_);
    if (trial_.program->uses_trial_dir) {
      program_.trial_dir = make_trial_dir(options.log_dir, trial_, context.attempt);
      values.trial_dir = program_.trial_dir.string();
    }
    ProgramInvocation& invocation = program_.invocation = program_invocation(trial_, values);
    invocation.env.emplace_back(kEventsFdVariable, std::to_string(kEventsFd));
    invocation.env.emplace_back("MEMSWEEP_TRIAL_ID", trial_.id);
    // Its own devices only, by UUID: an index would be CUDA's order, not
    // NVML's. A trial given none sees what the job does (a program's env
    // sets the variable only with gpus_per_trial = 0: trial_fields.cpp).
    if (!attempt_.gpus.empty()) invocation.env.emplace_back("CUDA_VISIBLE_DEVICES", visible_devices(attempt_.gpus));
    program_.environment = merged_environment(current_environment(), invocation.env);
    set_fixed(attempt_.row.cuda_alloc_conf,
              environment_value(program_.environment, "PYTORCH_CUDA_ALLOC_CONF").value_or(""));
    const std::string path_list =
        environment_value(program_.environment, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
    const std::optional<std::string> found = find_executable(invocation.argv.at(0), path_list, invocation.workdir);
    if (!found) {
      finish(attempt_, TrialStatus::failed,
             fmt::format("program \"{}\" not found{} or not executable", invocation.argv.at(0),
                         invocation.argv.at(0).find('/') == std::string::npos ? " on PATH" : ""));
      return false;
    }
    program_.executable = std::filesystem::absolute(*found).string();
    program_.output = open_program_output(options.log_dir, trial_, context.attempt);
  } catch (const std::exception& error) {
    finish(attempt_, TrialStatus::failed, one_line(error.what()));
    return false;
  }
  return true;
}

// The child forked, waiting at its start gate, with the events pipe's
// write end as kEventsFd.
bool ProgramTrial::spawn_program() {
  SpawnRequest request;
  request.executable = program_.executable;
  request.argv = program_.invocation.argv;
  request.program = true;
  request.environment = std::move(program_.environment);
  request.workdir = program_.invocation.workdir;
  request.control_fd = events_.write_end.get();  // kEventsFd: the program's events channel
  request.stdout_fd = program_.output.out.write_end.get();
  request.stderr_fd = program_.output.err.write_end.get();
  request.start_gate_fd = gate_.read_end.get();
  const bool spawned = spawn(runner_, attempt_, request, events_.read_end.get());
  // The program's copies alone: their end is the pipes' end.
  program_.output.out.write_end.reset();
  program_.output.err.write_end.reset();
  if (!spawned) return false;
  events_.write_end.reset();
  gate_.read_end.reset();
  return true;
}

// The sampler's counters on the waiting child, before its exec: the
// program is counted from its first instruction. Its memory is sampled
// only from the exec on (a held region): until then the child is a fork of
// the rank, whose image (10 to 15 MiB) is not the program's. It has no
// ready point, so its baseline is nothing and its footprint is its whole
// peak.
void ProgramTrial::hold_at_gate() {
  const pid_t pid = attempt_.process->pid();
  const std::string procs = attempt_.cgroup ? attempt_.cgroup->procs_file() : std::string();
  tree_ = make_process_tree_probe(pid, procs);
  attempt_.baseline.rss_bytes = 0;
  attempt_.row.rss_baseline = 0;
  // Unknown until the program reports a phase: one that reports none has
  // every sample unknown, not "setup".
  begin_region(runner_, attempt_, sample_phase::kUnknown, make_process_tree_probe(pid, procs), true);
  pre_exec_peak_ = pre_exec_peak(pid);
  if (pre_exec_peak_ < 0)
    attempt_.note(fmt::format("wait4's peak not used (/proc/{} could not be read at its start gate)", pid));
}

// The go-ahead through the start gate, and the child's exec confirmed.
bool ProgramTrial::open_gate() {
  const char go = 1;
  const bool opened = ::write(gate_.write_end.get(), &go, 1) == 1;
  gate_.write_end.reset();
  try {
    if (!opened) throw std::runtime_error("the program's process ended before it could start");
    attempt_.process->confirm_exec();
  } catch (const std::exception& error) {
    runner_.sampler->end_region();
    record_end(runner_, attempt_, {}, one_line(error.what()));
    return false;
  }
  record_started(runner_, attempt_);
  return true;
}

// The watch until the program exits, the last look at its tree, whatever
// of the tree is left killed, and the row.
void ProgramTrial::watch(const TrialContext& context, TrialSink& sink) {
  TrialRow& row = attempt_.row;
  ChildProcess& process = *attempt_.process;
  ProcessTreeProbe& tree = *tree_;
  EventLineReader reports(events_.read_end.get());
  WatchSettings settings = watch_settings(runner_, attempt_, trial_, context);
  std::optional<OutputMetrics> metrics;
  if (program_.output.metrics_feed) {
    metrics.emplace(*program_.output.metrics_feed, trial_.program->metrics, row.trial_id, row.attempt, sink);
    settings.on_check = [&] { metrics->scan(reports.current_epoch()); };
  }
  TrialWatch watch(std::move(settings), process, reports, *runner_.sampler, tree, sink);
  WatchReport seen =
      watch_until_end(runner_, attempt_, watch, [&] { kill_tree(process.pid(), tree, attempt_.cgroup.get()); });
  const Clock::time_point training_end = Clock::now();
  std::int64_t largest = -1;
  tree.read_peak_rss(largest);  // the last look at the descendants still there
  if (std::optional<std::string> left = kill_tree(process.pid(), tree, attempt_.cgroup.get()))
    attempt_.note(std::move(*left));
  const RegionSummary region = runner_.sampler->end_region();
  watch.forward_chunks();

  const ProcessTreeStats stats = tree.stats();
  const ProcessEnd end = process.reap();
  record_program_measures(row, stats, end, pre_exec_peak_, region, seen);
  const ProgramProgress& progress = reports.progress();
  record_program_progress(row, progress, trial_);
  end_output();
  if (metrics) {
    metrics->finish(reports.current_epoch());
    if (std::string problems = metrics->problems(); !problems.empty()) attempt_.note(std::move(problems));
  }
  seen.outcome.output_tail = output_tail(program_.output.err_log->tail(), kTailLines, kTailBytes);
  const std::string seen_tail = seen.outcome.output_tail;
  record_end(runner_, attempt_, std::move(seen.outcome));
  const bool ok = get_fixed(row.status) == status_name(TrialStatus::ok);
  // Caught by the program itself (a GPU's OOM in PyTorch): not the
  // kernel's, so only the program can say it, on its events channel or as
  // PyTorch and CUDA word it on stderr; a search counts it as not fitting.
  std::optional<std::string> out_of_memory = progress.out_of_memory;
  if (!out_of_memory && says_cuda_out_of_memory(seen_tail)) out_of_memory = "cuda, on its stderr";
  if (out_of_memory) {
    row.reported_oom = 1;
    attempt_.set_message(fmt::format("out of memory, the program says ({}); {}", *out_of_memory, attempt_.message));
  }
  if (progress.bad_lines > 0 && ok)
    attempt_.set_message(fmt::format("{} events line{} not understood; the first: {}", progress.bad_lines,
                                     progress.bad_lines == 1 ? "" : "s", progress.first_bad_line));
  if (!region.gpu_warning.empty() && ok)
    attempt_.set_message(attempt_.message.empty() ? region.gpu_warning
                                                  : fmt::format("{}; {}", attempt_.message, region.gpu_warning));
  runner_.timings.teardown_seconds = seconds_between(training_end, Clock::now());
}

// Once the program's tree is gone: what its pipes still hold read into the
// logs, and each log put in order (capped_log.hpp). A log that could not be
// written is a note.
void ProgramTrial::end_output() {
  ProgramOutput& output = program_.output;
  if (!output.pump) return;  // not opened, or ended already
  output.pump->stop();
  output.pump.reset();
  for (CappedLog* log : {output.out_log.get(), output.err_log.get()})
    if (std::optional<std::string> problem = log->finish()) attempt_.note(std::move(*problem));
}

// {trial_dir} kept or removed as [programs.NAME] keep_trial_dir says (by
// default kept only when the attempt did not end ok, to look into); with
// no log folder (a test's runner) always removed.
void ProgramTrial::end_trial_dir() {
  if (program_.trial_dir.empty()) return;
  const bool ok = get_fixed(attempt_.row.status) == status_name(TrialStatus::ok);
  const KeepTrialDir keep = trial_.program->keep_trial_dir;
  const bool kept =
      !runner_.options.log_dir.empty() && (keep == KeepTrialDir::always || (keep == KeepTrialDir::failed && !ok));
  if (kept) return;
  std::error_code error;
  std::filesystem::remove_all(program_.trial_dir, error);
  if (error)
    attempt_.note(
        fmt::format("its trial folder {} could not be removed ({})", program_.trial_dir.string(), error.message()));
}

}  // namespace

void run_program_trial(RunnerState& runner, Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                       TrialSink& sink) {
  ProgramTrial(runner, attempt, trial).run(context, sink);
}

}  // namespace memsweep::runner::detail
