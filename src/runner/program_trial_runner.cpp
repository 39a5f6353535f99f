#include "runner/program_trial_runner.hpp"

#include "common/unique_fd.hpp"
#include "dataset/locate.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/model_spec.hpp"
#include "memsweep/program.hpp"
#include "memsweep/trainer.hpp"
#include "runner/program_events.hpp"
#include "runner/program_launch.hpp"
#include "runner/trial_messages.hpp"
#include "sampler/process_tree.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace memsweep::runner_detail {
namespace {

// How much of a failed program's stderr its message keeps: the message is
// stored whole (/messages), so this bounds only what a console line or a
// table cell has to hold of a long traceback.
constexpr int kTailLines = 3;
constexpr std::size_t kTailBytes = 1000;
constexpr std::size_t kTailReadBytes = 8192;

// The program's output files: kept in the log folder, or (no folder) an
// unnamed file for stderr alone, read for a failure's message.
struct ProgramOutput {
  UniqueFd out;
  UniqueFd err;
};

ProgramOutput open_program_output(const std::filesystem::path& log_dir, const TrialSpec& trial, int attempt) {
  constexpr int kFlags = O_CREAT | O_TRUNC | O_CLOEXEC;
  if (log_dir.empty()) {
    return {UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC)),
            UniqueFd(::open(std::filesystem::temp_directory_path().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600))};
  }
  std::filesystem::create_directories(log_dir);
  const std::string stem = (log_dir / fmt::format("{}-{}", trial.id, attempt)).string();
  // stderr is read back for a failure's message.
  ProgramOutput output{UniqueFd(::open((stem + ".out").c_str(), O_WRONLY | kFlags, 0644)),
                       UniqueFd(::open((stem + ".err").c_str(), O_RDWR | kFlags, 0644))};
  if (!output.out || !output.err)
    throw std::system_error(errno, std::generic_category(),
                            "cannot open the program's log files " + stem + ".out/.err");
  return output;
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
  using namespace dataset_detail;
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
    ++runner_.trials_started;
    attempt_.oom_before = read_oom_counters(runner_.cgroups);
    if (!prepare(context)) return;
    if (!spawn_program()) return;
    limit_cgroup_to_budget(attempt_);
    hold_at_gate();
    if (!open_gate()) return;
    runner_.sampler->release();
    watch(context, sink);
  }

 private:
  bool prepare(const TrialContext& context);
  bool spawn_program();
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
  values.threads = options.threads > 0 ? options.threads : default_thread_count();
  values.max_train_examples = options.max_train_examples;
  values.max_test_examples = options.max_test_examples;
  values.attempt = context.attempt;
  try {
    // Only a program that names {data_dir} reads the files; others' dataset is a label.
    if (trial_.program->uses_data_dir) values.data_dir = program_data_dir(options, trial_);
    ProgramInvocation& invocation = program_.invocation = program_invocation(trial_, values);
    invocation.env.emplace_back(kEventsFdVariable, std::to_string(kEventsFd));
    invocation.env.emplace_back("MEMSWEEP_TRIAL_ID", trial_.id);
    program_.environment = merged_environment(current_environment(), invocation.env);
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
  request.stdout_fd = program_.output.out.get();
  request.stderr_fd = program_.output.err.get();
  request.start_gate_fd = gate_.read_end.get();
  if (!spawn(runner_, attempt_, request)) return false;
  events_.write_end.reset();
  gate_.read_end.reset();
  ::fcntl(events_.read_end.get(), F_SETFL, O_NONBLOCK);
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
  attempt_.row.start_seconds = seconds_between(attempt_.spawned, Clock::now());
  runner_.timings.start_seconds = attempt_.row.start_seconds;
  return true;
}

// The watch until the program exits, the last look at its tree, whatever
// of the tree is left killed, and the row.
void ProgramTrial::watch(const TrialContext& context, TrialSink& sink) {
  TrialRow& row = attempt_.row;
  ChildProcess& process = *attempt_.process;
  ProcessTreeProbe& tree = *tree_;
  EventLineReader reports(events_.read_end.get());
  TrialWatch watch(watch_settings(runner_, attempt_, trial_, context), process, reports, *runner_.sampler, tree, sink);
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
  seen.outcome.output_tail =
      output_tail(read_file_end(program_.output.err.get(), kTailReadBytes), kTailLines, kTailBytes);
  record_end(runner_, attempt_, std::move(seen.outcome));
  const bool ok = get_fixed(row.status) == status_name(TrialStatus::ok);
  if (progress.out_of_memory) {
    // Caught by the program itself (a GPU's OOM in PyTorch): not the
    // kernel's, so only the program can say it; a search counts it as not fitting.
    row.reported_oom = 1;
    attempt_.set_message(
        fmt::format("out of memory, the program says ({}); {}", *progress.out_of_memory, attempt_.message));
  }
  if (progress.bad_lines > 0 && ok)
    attempt_.set_message(fmt::format("{} events line{} not understood; the first: {}", progress.bad_lines,
                                     progress.bad_lines == 1 ? "" : "s", progress.first_bad_line));
  if (!region.gpu_warning.empty() && ok)
    attempt_.set_message(attempt_.message.empty() ? region.gpu_warning
                                                  : fmt::format("{}; {}", attempt_.message, region.gpu_warning));
  runner_.timings.teardown_seconds = seconds_between(training_end, Clock::now());
}

}  // namespace

void run_program_trial(RunnerState& runner, Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                       TrialSink& sink) {
  ProgramTrial(runner, attempt, trial).run(context, sink);
}

}  // namespace memsweep::runner_detail
