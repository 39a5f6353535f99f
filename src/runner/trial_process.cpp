// The trial process (`memsweep trial`, started by its rank): it maps the
// shared dataset, raises its own OOM score, says it is ready, waits for the
// go-ahead (the rank reads the baseline and opens the counters meanwhile),
// trains, reports, and waits for the rank to read its peak before it ends.
// docs/runner.md, "A trial, in order".

#include "common/unique_fd.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/shared_dataset.hpp"
#include "memsweep/trainer.hpp"
#include "memsweep/training_runner.hpp"
#include "runner/test_hooks.hpp"
#include "runner/trial_messages.hpp"
#include "runner/trial_protocol.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>

namespace memsweep {
namespace {

using namespace runner::detail;

static_assert(std::atomic<bool>::is_always_lock_free, "the stop flag is set from a signal handler");
std::atomic<bool> g_stop{false};

extern "C" void on_stop_request(int) { g_stop.store(true); }

void listen_for_stop() {
  struct sigaction action {};
  action.sa_handler = on_stop_request;
  ::sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(kTrialStopSignal, &action, nullptr);
}

// Under memory pressure the kernel should take the trial, not its rank or
// another job's process. Raising one's own score needs no privilege.
void volunteer_for_the_oom_killer() {
  const UniqueFd file(::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
  if (!file) return;
  [[maybe_unused]] const ssize_t ignored = ::write(file.get(), "1000", 4);
}

class Trial {
 public:
  Trial() : control_(kControlFd) {}

  int run() {
    std::optional<Frame> frame = control_.next();
    if (!frame) return 0;  // the rank went away before sending the job
    TrialJob job;
    std::optional<TrialHook> hook;
    std::optional<MappedDataset> data;
    try {
      job = decode_job(*frame);
      hook = test_hook_for(job.trial.id);
      data.emplace(kDatasetFd);
    } catch (const std::exception& error) {
      return fail(one_line(error.what()));
    }
    set_thread_count(job.threads);
    const DatasetView& view = data->view();
    report(encode(
        ReadyReport{static_cast<std::int32_t>(::getpid()), view.train.size(), view.test.size(), data->mapped_bytes()}));
    if (!go_ahead()) return 0;
    if (hook) run_test_hook(*hook);

    TrainingOptions options;
    options.stop = &g_stop;
    options.on_phase = [&](TrainingPhase phase, int epoch) {
      report(encode(PhaseReport{phase == TrainingPhase::evaluate, epoch}));
    };
    options.on_epoch_end = [&](const EpochResult& epoch) {
      report(encode(EpochReport{epoch.epoch, epoch.train_loss, epoch.test_accuracy, epoch.seconds}));
    };
    ResultReport result;
    try {
      const TrainingResult trained = train_trial(training_spec(job.trial), view, options);
      result.outcome = trained.outcome == TrainingOutcome::diverged  ? ResultOutcome::diverged
                       : trained.outcome == TrainingOutcome::stopped ? ResultOutcome::stopped
                                                                     : ResultOutcome::completed;
      result.message = trained.message;
      result.epochs_done = static_cast<std::int32_t>(trained.epochs.size());
      if (!trained.epochs.empty()) {
        result.final_train_loss = trained.epochs.back().train_loss;
        result.test_accuracy = trained.epochs.back().test_accuracy;
      }
    } catch (const std::bad_alloc&) {
      return fail(out_of_memory_message(
          job.predicted_bytes >= 0 ? fmt::format("training (predicted {})",
                                                 format_byte_size(static_cast<std::uint64_t>(job.predicted_bytes)))
                                   : "training"));
    } catch (const std::exception& error) {
      return fail(one_line(error.what()));
    }
    report(encode(result));
    wait_for_exit();
    return 0;
  }

 private:
  // A write that fails means the rank is gone: its death signal ends this
  // process too, so there is nobody left to tell.
  void report(const Frame& frame) {
    if (!write_frame(kReportFd, frame)) std::_Exit(1);
  }

  int fail(const std::string& message) {
    report(encode(FailureReport{message}));
    wait_for_exit();
    return 0;
  }

  bool go_ahead() {
    const std::optional<Frame> frame = control_.next();
    return frame && frame->type == FrameType::go;
  }

  // The rank reads the peak (VmHWM) from /proc before it lets the process
  // end: once it has exited, the kernel no longer shows it.
  void wait_for_exit() {
    while (const std::optional<Frame> frame = control_.next())
      if (frame->type == FrameType::exit) return;
  }

  FrameReader control_;
};

}  // namespace

void run_trial_process() {
  // Started by hand, there are no pipes to talk through.
  struct stat control {};
  if (::fstat(kControlFd, &control) != 0 || !S_ISFIFO(control.st_mode)) {
    std::fprintf(stderr,
                 "memsweep: error: `memsweep trial` is how `memsweep run` starts a trial's process; it is not "
                 "run by hand\n");
    std::_Exit(2);
  }
  listen_for_stop();
  volunteer_for_the_oom_killer();
  int status = 1;
  try {
    status = Trial().run();
  } catch (const std::exception& error) {
    // A frame the rank cannot have meant: say so where a person looks.
    std::fprintf(stderr, "memsweep trial: %s\n", error.what());
  }
  // No static destructors (oneDNN's kernel cache, OpenMP's pool): the
  // process's work is reported, and ending at once is its last step.
  std::fflush(nullptr);
  std::_Exit(status);
}

}  // namespace memsweep
