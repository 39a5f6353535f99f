// Rank 0 of several: hands out trials on request and writes what the
// workers send. It never trains, so its memory is only the writer's, and it
// spends the sweep waiting in Communicator::receive, which sleeps.
//
// A worker with nothing left to do (its REQUEST found no trial, or it is
// LEAVING) waits, asleep in receive(), for FINISH; FINISH goes to every
// worker at once, when all are waiting. So every worker's last message
// (REQUEST or LEAVING) has been received, and nothing is in flight, when
// run_sweep returns on any rank: a worker cannot race ahead into the next
// run_sweep on the same communicator while rank 0 is still in this one.
//
// A worker that falls silent (SIGSTOP, a hang: nothing from it, not even
// ALIVE, past its trial's time limit and the grace) is given up: its attempt
// is recorded `interrupted` from the samples it sent, the trial goes to
// another worker, and the sweep finishes without it (sweep.hpp,
// SweepOptions::worker_silence). Anything it sends later is ignored: its
// attempt already has its row.

#include "common/duration_text.hpp"
#include "sweep/job_sources.hpp"
#include "sweep/protocol.hpp"
#include "sweep/roles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace memsweep::sweep::detail {
namespace {

// How long one receive waits before the coordinator looks at the stop flag
// again: bounds how late a signal on rank 0 reaches the workers.
constexpr std::chrono::milliseconds kStopCheckInterval{100};

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

// A gap this long between two of rank 0's looks is a stall of its own.
constexpr std::chrono::milliseconds kOwnStall{1000};

// What rank 0 knows of a busy worker's attempt, to judge its silence and,
// should it fall silent, to write the attempt's row.
struct AttemptWatch {
  Clock::time_point assigned;
  Clock::time_point heard;  // its last message
  std::optional<SeriesAccumulator> series;
};

class Coordinator {
 public:
  Coordinator(Communicator& comm, const SweepTrials& trials, const PendingTrials& pending, ResultSink& sink,
              const SweepOptions& options)
      : comm_(comm),
        source_(make_job_source(trials, pending, options, comm.size() - 1)),
        sink_(sink),
        options_(options),
        workers_(comm.size() - 1),
        busy_(static_cast<std::size_t>(comm.size())),
        watches_(static_cast<std::size_t>(comm.size()), AttemptWatch{Clock::now(), Clock::now(), std::nullopt}),
        silent_(static_cast<std::size_t>(comm.size()), false) {
    // Dynamic: one queue that every worker draws from. Static round-robin:
    // trial k goes to worker 1 + k mod workers, however busy that one is.
    // The queues hold attempts given up and run again, and static dealing's
    // trials dealt ahead; the rest are the cursor's, made when handed out.
    queues_.resize(options.dispatch == Dispatch::dynamic ? 1 : static_cast<std::size_t>(workers_));
  }

  SweepResult run() {
    write_ended_searches();  // a resume's searches that its file's rows already end
    while (waiting_.size() + result_.silent_ranks.size() < static_cast<std::size_t>(workers_)) {
      if (!stopping_ && stop_requested(options_)) {
        result_.stopped = true;
        begin_stop();
      }
      if (std::optional<Message> message = comm_.receive(kAnySource, kStopCheckInterval)) handle(*message);
      tick();
    }
    for (const int worker : waiting_) send_empty(comm_, worker, tag::kFinish);
    for (const auto& queue : queues_) result_.not_started += queue.size();
    result_.not_started += source_->left();
    // Every worker has its FINISH: now the sink's failure can end rank 0.
    if (sink_failure_) throw SinkFailure(sink_failure_);
    return result_;
  }

 private:
  void handle(const Message& message) {
    const int worker = message.source;
    if (worker > 0 && worker < comm_.size()) {
      if (silent_[static_cast<std::size_t>(worker)]) return;
      watches_[static_cast<std::size_t>(worker)].heard = Clock::now();
    }
    switch (message.tag) {
      case tag::kRequest: answer_request(worker); break;
      case tag::kAlive: break;
      case tag::kSamples:
        payload_rows(message, samples_);
        follow_series(worker);
        write([&] { sink_.samples(samples_); });
        break;
      case tag::kCompressedSamples: {
        const CompressedSampleChunk chunk = compressed_chunk_from_payload(message);
        follow_series(worker, chunk.info);
        write([&] { sink_.compressed_samples(chunk); });
        break;
      }
      case tag::kEpochs:
        payload_rows(message, epochs_);
        write([&] {
          for (const EpochRow& epoch : epochs_) sink_.epoch(epoch);
        });
        break;
      case tag::kMetrics:
        payload_rows(message, metrics_);
        write([&] {
          for (const MetricRow& metric : metrics_) sink_.metric(metric);
        });
        break;
      case tag::kRecord: record(worker, record_from_payload(message)); break;
      case tag::kLeaving:
        // A signal reached that worker (mpirun forwards SIGUSR1 and SIGTERM
        // to every rank, but maybe not yet this one): the whole sweep stops.
        result_.stopped = true;
        begin_stop();
        waiting_.push_back(worker);
        break;
      default:
        throw std::runtime_error("sweep protocol: rank 0 got " + tag_name(message.tag) + " from rank " +
                                 std::to_string(worker));
    }
  }

  // The worker's next attempt: its queue's first, else the cursor's next
  // (dealt round-robin until one is the worker's, when static).
  std::optional<Job> take(int worker) {
    std::deque<Job>& queue = queue_for(worker);
    if (queue.empty() && queues_.size() == 1) {
      std::optional<Job> job = source_->next();
      report_skipped();
      return job;
    }
    while (queue.empty()) {
      std::optional<Job> job = source_->next();
      report_skipped();
      if (!job) return std::nullopt;
      deal(std::move(*job));
    }
    Job job = std::move(queue.front());
    queue.pop_front();
    return job;
  }

  void deal(Job&& job) {
    for (;;) {
      const int worker = 1 + static_cast<int>(dealt_++ % queues_.size());
      if (silent_[static_cast<std::size_t>(worker)]) continue;
      queue_for(worker).push_back(std::move(job));
      return;
    }
  }

  void report_skipped() { sweep::detail::report_skipped(*source_, options_.progress); }

  void answer_request(int worker) {
    std::optional<Job> job = stopping_ ? std::nullopt : take(worker);
    if (!job) {
      // A search waiting for its running probes may have work for this
      // worker once one of them ends.
      if (!stopping_ && source_->waits())
        idle_.push_back(worker);
      else
        waiting_.push_back(worker);
      return;
    }
    const std::size_t slot = static_cast<std::size_t>(worker);
    AttemptWatch& watch = watches_[slot];
    watch.assigned = watch.heard = Clock::now();
    watch.series.emplace(job->trial.id, job->attempt.attempt);
    const std::string assignment = encode(assignment_of(*job));
    comm_.send(worker, tag::kAssign, std::as_bytes(std::span(assignment.data(), assignment.size())));
    if (options_.progress != nullptr) options_.progress->trial_started(job->trial, job->attempt.attempt, worker);
    busy_[slot] = std::move(job);
  }

  void record(int worker, const TrialRecord& record) {
    const TrialRow& row = record.row;
    std::optional<Job>& job = busy_[static_cast<std::size_t>(worker)];
    if (!job || get_fixed(row.trial_id) != job->trial.id) {
      throw std::runtime_error("sweep protocol: rank " + std::to_string(worker) + " sent a row for trial " +
                               get_fixed(row.trial_id) + ", but it was running " +
                               (job ? "trial " + job->trial.id : std::string("none")));
    }
    job.reset();
    write([&] { sink_.trial(row, record.message); });
    if (sink_failure_) return;
    count_row(result_, row);
    if (options_.progress != nullptr) options_.progress->trial_finished(row);
    source_->finished(row);
    write_ended_searches();
    serve_idle_workers();
  }

  void write_ended_searches() {
    for (const SearchRow& row : source_->take_ended()) {
      write([&] { sink_.search(row); });
      if (options_.progress != nullptr) report_ended_search(*options_.progress, row, options_);
    }
  }

  // Workers that asked while every search waited: a result may have given
  // them work, or ended the sweep.
  void serve_idle_workers() {
    std::vector<int> idle = std::exchange(idle_, {});
    for (const int worker : idle) answer_request(worker);
  }

  // The busy worker's samples of its attempt, summed as the store's scan
  // would (a silent worker's row is made from them).
  void follow_series(int worker) {
    std::optional<SeriesAccumulator>& series = watches_[static_cast<std::size_t>(worker)].series;
    const std::optional<Job>& job = busy_[static_cast<std::size_t>(worker)];
    if (!series || !job) return;
    for (const SampleRow& row : samples_)
      if (row.attempt == job->attempt.attempt && get_fixed(row.trial_id) == job->trial.id)
        series->add(row.rank, row.epoch, row.t, row.rss, row.sys_used);
  }

  void follow_series(int worker, const CompressedChunkInfo& chunk) {
    std::optional<SeriesAccumulator>& series = watches_[static_cast<std::size_t>(worker)].series;
    const std::optional<Job>& job = busy_[static_cast<std::size_t>(worker)];
    if (series && job && chunk.attempt == job->attempt.attempt && get_fixed(chunk.trial_id) == job->trial.id)
      series->add(chunk.series);
  }

  std::optional<std::chrono::milliseconds> time_limit(const TrialSpec& trial) const {
    std::optional<std::chrono::milliseconds> limit = options_.trial_timeout;
    if (trial.timeout_seconds) {
      const auto own = limit_milliseconds(*trial.timeout_seconds);
      limit = limit ? std::min(*limit, own) : own;
    }
    return limit;
  }

  // Silence counts only while rank 0 listened: after a stall of its own (a
  // long write), the workers' messages are queued, not missing, so every
  // busy worker is heard from as of now.
  void give_up_silent_workers(Clock::duration since_last_look) {
    const auto now = Clock::now();
    if (since_last_look > kOwnStall) {
      for (AttemptWatch& watch : watches_) watch.heard = std::max(watch.heard, now);
      return;
    }
    const auto grace = options_.worker_silence;
    for (int worker = 1; worker < comm_.size(); ++worker) {
      const std::size_t slot = static_cast<std::size_t>(worker);
      // A worker waiting for an answer sends nothing, and is not silent.
      if (silent_[slot] || std::find(waiting_.begin(), waiting_.end(), worker) != waiting_.end() ||
          std::find(idle_.begin(), idle_.end(), worker) != idle_.end())
        continue;
      const AttemptWatch& watch = watches_[slot];
      if (now - watch.heard <= grace) continue;
      if (!busy_[slot]) {
        // Stopped between its row and its next REQUEST: nothing to record.
        give_up_idle(worker);
        continue;
      }
      const auto limit = time_limit(busy_[slot]->trial).value_or(std::chrono::milliseconds(0));
      if (now - watch.assigned > limit + grace) give_up(worker, now - watch.heard);
    }
  }

  void give_up_idle(int worker) {
    silent_[static_cast<std::size_t>(worker)] = true;
    result_.silent_ranks.push_back(worker);
    redistribute_queue_of(worker);
    if (options_.progress != nullptr)
      options_.progress->note(
          fmt::format("rank {} went silent between trials; the job will end once the sweep is done", worker));
  }

  // The worker's attempt recorded `interrupted`, its trial queued first
  // for the next worker that asks (or one that waits for FINISH).
  void give_up(int worker, Clock::duration silence) {
    const std::size_t slot = static_cast<std::size_t>(worker);
    Job job = std::move(*busy_[slot]);
    busy_[slot].reset();
    silent_[slot] = true;
    result_.silent_ranks.push_back(worker);
    const TrialSpec& trial = job.trial;
    SeriesSummary series = watches_[slot].series->summary();
    series.rank = worker;
    const TrialRecord record = row_from_series(
        trial, series, options_.run, TrialStatus::interrupted, end_cause::kSilent,
        fmt::format("interrupted: rank {} went silent (stopped or hung): nothing came from it for {:.0f} s, and the "
                    "trial ran {:.0f} s; the trial runs again on another rank; {}",
                    worker, seconds(silence), seconds(Clock::now() - watches_[slot].assigned), series_text(series)));
    write([&] { sink_.trial(record.row, record.message); });
    if (sink_failure_) return;
    count_row(result_, record.row);
    ++result_.silent_attempts;
    // A note, not a finished line: the trial is not done, and its next
    // attempt's line counts it once.
    if (options_.progress != nullptr)
      options_.progress->note(
          fmt::format("trial {} {}; the job will end once the sweep is done", trial.id, record.message));
    std::deque<Job>& queue = queue_for(worker);
    ++job.attempt.attempt;
    queue.push_front(std::move(job));
    redistribute_queue_of(worker);
    // A worker already waiting (for a search's result, or for FINISH) takes it at once.
    if (!stopping_ && !idle_.empty()) {
      serve_idle_workers();
    } else if (!stopping_ && !waiting_.empty()) {
      const int idle = waiting_.back();
      waiting_.pop_back();
      answer_request(idle);
    }
  }

  std::deque<Job>& queue_for(int worker) {
    return queues_[queues_.size() == 1 ? 0 : static_cast<std::size_t>(worker - 1)];
  }

  // Static dispatch (the benchmark's): a silent worker's queue goes to the
  // first worker still in the sweep.
  void redistribute_queue_of(int worker) {
    if (queues_.size() == 1) return;
    for (int other = 1; other < comm_.size(); ++other) {
      if (silent_[static_cast<std::size_t>(other)]) continue;
      std::deque<Job>& from = queue_for(worker);
      std::deque<Job>& to = queue_for(other);
      to.insert(to.begin(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
      from.clear();
      return;
    }
  }

  // After the sink has failed once, nothing more is written: the workers are
  // stopped and drained, and run() rethrows.
  template <typename Write>
  void write(Write&& write_rows) {
    if (sink_failure_) return;
    try {
      write_rows();
    } catch (...) {
      sink_failure_ = std::current_exception();
      begin_stop();
    }
  }

  // A timer of its own, not only the receive timeout: a busy sweep may
  // never leave receive() idle for a whole interval.
  void tick() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_tick_ < kStopCheckInterval) return;
    const auto since_last = now - last_tick_;
    last_tick_ = now;
    write([&] { sink_.tick(); });
    give_up_silent_workers(since_last);
  }

  void begin_stop() {
    if (stopping_) return;
    stopping_ = true;
    waiting_.insert(waiting_.end(), idle_.begin(), idle_.end());
    idle_.clear();
    // The mark first: under mpirun the signal may mean a rank died, and the
    // job may be killed a second later. A send to that dead rank can block
    // or end this one (Open MPI's errors are fatal), and without the mark a
    // resume would blame this rank's death for the lost trials.
    write([&] { sink_.stopping(); });
    for (std::size_t worker = 1; worker < busy_.size(); ++worker) {
      if (busy_[worker]) send_empty(comm_, static_cast<int>(worker), tag::kStop);
    }
  }

  Communicator& comm_;
  std::unique_ptr<JobSource> source_;
  std::size_t dealt_ = 0;  // static dispatch: trials dealt so far
  ResultSink& sink_;
  const SweepOptions& options_;
  int workers_;
  std::vector<int> waiting_;  // workers that have asked and will get nothing more but FINISH
  std::vector<int> idle_;     // workers that have asked while every search waited for results
  bool stopping_ = false;
  std::vector<std::deque<Job>> queues_;
  std::vector<std::optional<Job>> busy_;  // by rank: the trial it runs
  std::vector<AttemptWatch> watches_;     // by rank: while busy
  std::vector<bool> silent_;              // by rank: given up
  std::vector<SampleRow> samples_;        // reused between messages
  std::vector<EpochRow> epochs_;
  std::vector<MetricRow> metrics_;
  std::exception_ptr sink_failure_;
  std::chrono::steady_clock::time_point last_tick_ = std::chrono::steady_clock::now();
  SweepResult result_;
};

}  // namespace

SweepResult run_coordinator(Communicator& comm, const SweepTrials& trials, const PendingTrials& pending,
                            ResultSink& sink, const SweepOptions& options) {
  return Coordinator(comm, trials, pending, sink, options).run();
}

}  // namespace memsweep::sweep::detail
