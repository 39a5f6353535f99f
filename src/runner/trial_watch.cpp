#include "runner/trial_watch.hpp"

#include "memsweep/byte_size.hpp"
#include "runner/budget.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>

namespace memsweep::runner::detail {
namespace {

using Clock = std::chrono::steady_clock;

int milliseconds_until(Clock::time_point now, Clock::time_point then) {
  if (then <= now) return 0;
  // Rounded up, so that a wake-up never comes before the deadline it is for.
  const auto waited = std::chrono::ceil<std::chrono::milliseconds>(then - now).count();
  return static_cast<int>(std::min<long long>(waited, 60'000));
}

}  // namespace

TrialWatch::TrialWatch(WatchSettings settings, ChildProcess& process, ReportSource& reports, Sampler& sampler,
                       MemoryProbe& probe, TrialSink& sink)
    : settings_(std::move(settings)),
      process_(process),
      reports_(reports),
      sampler_(sampler),
      probe_(probe),
      sink_(sink),
      go_(Clock::now()) {
  rows_.reserve(kSamplesPerChunk);
}

double TrialWatch::seconds_since_go(Clock::time_point now) const {
  return std::chrono::duration<double>(now - go_).count();
}

WatchReport TrialWatch::run() {
  go_ = Clock::now();
  Clock::time_point next_check = go_;
  ProcessOutcome& outcome = report_.outcome;
  outcome.program = settings_.program;
  try {
    for (;;) {
      const Clock::time_point now = Clock::now();
      if (now >= next_check) {
        check(now);
        next_check = now + settings_.check_interval;
        // The process may have ended without closing its pipe (a grandchild
        // holding it open): a reaped process is over either way.
        if (process_.try_reap()) break;
      }
      // A closed channel polls as always ready: then only the clock is waited for.
      pollfd reports{reports_.at_end() ? -1 : reports_.fd(), POLLIN, 0};
      const int ready = ::poll(&reports, 1, milliseconds_until(Clock::now(), next_check));
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      while (const std::optional<Frame> frame = reports_.next()) handle(*frame);
      if (settings_.program) continue;  // it ends when it exits
      if (outcome.result || outcome.failure || reports_.at_end()) break;
    }
    // What a program wrote just before it exited.
    if (settings_.program)
      while (const std::optional<Frame> frame = reports_.next()) handle(*frame);
  } catch (...) {
    // A sink that failed, or a frame no memsweep writes: the process is not
    // left running behind the error.
    signal_trial(SIGKILL);
    throw;
  }
  outcome.seconds = seconds_since_go(Clock::now());
  return report_;
}

void TrialWatch::handle(const Frame& frame) {
  ProcessOutcome& outcome = report_.outcome;
  switch (frame.type) {
    case FrameType::phase: {
      const PhaseReport phase = decode_phase(frame);
      outcome.epoch = phase.epoch;
      outcome.evaluating = phase.evaluating;
      sampler_.set_phase(phase.epoch, phase.evaluating ? sample_phase::kEvaluating : sample_phase::kTraining);
      return;
    }
    case FrameType::epoch: {
      const EpochReport reported = decode_epoch(frame);
      EpochRow row{.trial_id = settings_.trial_id,
                   .attempt = settings_.attempt,
                   .epoch = reported.epoch,
                   .train_loss = reported.train_loss,
                   .test_accuracy = reported.test_accuracy,
                   .seconds = reported.seconds};
      ProcessMemory process;
      if (probe_.read_process(process)) row.rss = process.rss_bytes;
      SystemMemory system;
      if (probe_.read_system(system)) row.sys_used = system.used_bytes();
      sink_.epoch(row);
      return;
    }
    case FrameType::result: outcome.result = decode_result(frame); return;
    case FrameType::failure: outcome.failure = decode_failure(frame); return;
    default:
      throw ProtocolError(fmt::format("a trial process sent a {} frame while training", frame_type_name(frame.type)));
  }
}

void TrialWatch::check(Clock::time_point now) {
  forward_chunks();
  if (settings_.on_check) settings_.on_check();
  if (report_.outcome.kill != RankKill::none) return;  // killed: waiting for it to be gone
  const ProcessOutcome& outcome = report_.outcome;
  const double seconds = seconds_since_go(now);

  const PeakAndProcess memory = probe_.read_peak_and_process();
  if (memory.peak_bytes) report_.last_peak = std::max(report_.last_peak, *memory.peak_bytes);
  if (settings_.budget_bytes && memory.process && passes_budget(memory.process->rss_bytes, *settings_.budget_bytes))
    return kill(RankKill::budget,
                over_budget_while_running(memory.process->rss_bytes, *settings_.budget_bytes,
                                          when_text(seconds, outcome.epoch, outcome.evaluating, settings_.program)));
  if (const std::int64_t gpu = sampler_.gpu_tree_bytes(); settings_.gpu_limit_bytes && gpu > *settings_.gpu_limit_bytes)
    return kill(RankKill::gpu_limit,
                fmt::format("stopped: its GPU memory ({}) passed its GPU limit of {}; killed {}",
                            format_byte_size(static_cast<std::uint64_t>(gpu)),
                            format_byte_size(static_cast<std::uint64_t>(*settings_.gpu_limit_bytes)),
                            when_text(seconds, outcome.epoch, outcome.evaluating, settings_.program)));
  if (settings_.time_limit && now - go_ >= *settings_.time_limit)
    return kill(RankKill::timeout,
                fmt::format("stopped: no result within its time limit of {:g} s; killed {}",
                            std::chrono::duration<double>(*settings_.time_limit).count(),
                            when_text(seconds, outcome.epoch, outcome.evaluating, settings_.program)));
  if (!stop_deadline_ && settings_.external_stop != nullptr &&
      settings_.external_stop->load(std::memory_order_relaxed)) {
    signal_trial(settings_.program ? SIGTERM : kTrialStopSignal);
    report_.outcome.stop_requested = true;
    stop_deadline_ = now + settings_.stop_grace;
  }
  if (stop_deadline_ && now >= *stop_deadline_)
    kill(RankKill::stop_unanswered,
         fmt::format("interrupted: the trial process did not stop within {:.1f} s of the request; killed {}",
                     std::chrono::duration<double>(settings_.stop_grace).count(),
                     when_text(seconds, outcome.epoch, outcome.evaluating, settings_.program)));
}

void TrialWatch::kill(RankKill why, std::string message) {
  report_.outcome.kill = why;
  report_.outcome.kill_message = std::move(message);
  signal_trial(SIGKILL);
}

void TrialWatch::signal_trial(int signal_number) {
  // A program's process group is its pid (it made one of its own before its
  // exec); the process itself is signalled too in case it left the group.
  if (settings_.program && !process_.reaped()) ::kill(-process_.pid(), signal_number);
  process_.send_signal(signal_number);
}

void TrialWatch::forward_chunks() {
  sampler_.drain([&](const SampleChunk& chunk) {
    rows_.clear();
    for (const Sample& sample : chunk.view()) {
      SampleRow row = sample_row(sample, settings_.counter_slots);
      row.trial_id = settings_.trial_id;
      row.attempt = settings_.attempt;
      row.rank = settings_.rank;
      rows_.push_back(row);
    }
    sink_.samples(rows_);
  });
}

}  // namespace memsweep::runner::detail
