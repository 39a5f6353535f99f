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

#include "sweep/protocol.hpp"
#include "sweep/roles.hpp"

#include <deque>
#include <exception>
#include <stdexcept>
#include <string>

namespace memsweep::detail {
namespace {

// How long one receive waits before the coordinator looks at the stop flag
// again: bounds how late a signal on rank 0 reaches the workers.
constexpr std::chrono::milliseconds kStopCheckInterval{100};

class Coordinator {
 public:
  Coordinator(Communicator& comm, std::span<const TrialSpec> trials, std::span<const PendingTrial> pending,
              ResultSink& sink, const SweepOptions& options)
      : comm_(comm),
        trials_(trials),
        sink_(sink),
        options_(options),
        workers_(comm.size() - 1),
        busy_(static_cast<std::size_t>(comm.size())) {
    // Dynamic: one queue that every worker draws from. Static round-robin:
    // trial k goes to worker 1 + k mod workers, however busy that one is.
    queues_.resize(options.dispatch == Dispatch::dynamic ? 1 : static_cast<std::size_t>(workers_));
    for (std::size_t k = 0; k < pending.size(); ++k) {
      check_pending_index(pending[k], trials.size());
      queues_[k % queues_.size()].push_back(pending[k]);
    }
  }

  SweepResult run() {
    while (waiting_.size() < static_cast<std::size_t>(workers_)) {
      if (!stopping_ && stop_requested(options_)) {
        result_.stopped = true;
        begin_stop();
      }
      if (std::optional<Message> message = comm_.receive(kAnySource, kStopCheckInterval)) handle(*message);
      tick();
    }
    for (const int worker : waiting_) send_empty(comm_, worker, tag::kFinish);
    for (const auto& queue : queues_) result_.not_started += queue.size();
    // Every worker has its FINISH: now the sink's failure can end rank 0.
    if (sink_failure_) throw SinkFailure(sink_failure_);
    return result_;
  }

 private:
  void handle(const Message& message) {
    const int worker = message.source;
    switch (message.tag) {
      case tag::kRequest: answer_request(worker); break;
      case tag::kSamples:
        payload_rows(message, samples_);
        write([&] { sink_.samples(samples_); });
        break;
      case tag::kEpochs:
        payload_rows(message, epochs_);
        write([&] {
          for (const EpochRow& epoch : epochs_) sink_.epoch(epoch);
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

  void answer_request(int worker) {
    std::deque<PendingTrial>& queue = queues_[queues_.size() == 1 ? 0 : static_cast<std::size_t>(worker - 1)];
    if (stopping_ || queue.empty()) {
      waiting_.push_back(worker);
      return;
    }
    const PendingTrial job = queue.front();
    queue.pop_front();
    busy_[static_cast<std::size_t>(worker)] = job;
    const Assignment assignment{.index = job.index, .attempt = job.attempt};
    comm_.send(worker, tag::kAssign, payload_of(assignment));
    if (options_.progress != nullptr) options_.progress->trial_started(trials_[job.index], job.attempt, worker);
  }

  void record(int worker, const TrialRecord& record) {
    const TrialRow& row = record.row;
    std::optional<PendingTrial>& job = busy_[static_cast<std::size_t>(worker)];
    if (!job || get_fixed(row.trial_id) != trials_[job->index].id) {
      throw std::runtime_error("sweep protocol: rank " + std::to_string(worker) + " sent a row for trial " +
                               get_fixed(row.trial_id) + ", but it was running " +
                               (job ? "trial " + trials_[job->index].id : std::string("none")));
    }
    job.reset();
    write([&] { sink_.trial(row, record.message); });
    if (sink_failure_) return;
    count_row(result_, row);
    if (options_.progress != nullptr) options_.progress->trial_finished(row);
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
    last_tick_ = now;
    write([&] { sink_.tick(); });
  }

  void begin_stop() {
    if (stopping_) return;
    stopping_ = true;
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
  std::span<const TrialSpec> trials_;
  ResultSink& sink_;
  const SweepOptions& options_;
  int workers_;
  std::vector<int> waiting_;  // workers that have asked and will get nothing more but FINISH
  bool stopping_ = false;
  std::vector<std::deque<PendingTrial>> queues_;
  std::vector<std::optional<PendingTrial>> busy_;  // by rank: the trial it runs
  std::vector<SampleRow> samples_;                 // reused between messages
  std::vector<EpochRow> epochs_;
  std::exception_ptr sink_failure_;
  std::chrono::steady_clock::time_point last_tick_ = std::chrono::steady_clock::now();
  SweepResult result_;
};

}  // namespace

SweepResult run_coordinator(Communicator& comm, std::span<const TrialSpec> trials,
                            std::span<const PendingTrial> pending, ResultSink& sink, const SweepOptions& options) {
  return Coordinator(comm, trials, pending, sink, options).run();
}

}  // namespace memsweep::detail
