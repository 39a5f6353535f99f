#include "sweep/streamed_trial.hpp"

#include "sweep/protocol.hpp"

#include "memsweep/sample_chunk.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

namespace memsweep::sweep::detail {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The TrialSink the runner sees: rows wait here, under a mutex, for the
// calling thread. The runner's threads call it one at a time, but the
// calling thread takes from it at the same time.
class StreamQueue final : public TrialSink {
 public:
  // `full_rows`: the samples that make a delivery (a message, or a chunk).
  explicit StreamQueue(std::size_t full_rows) : full_rows_(full_rows) {}

  void samples(std::span<const SampleRow> rows) override {
    const std::lock_guard lock(mutex_);
    if (dropping_) return;
    queued_.samples.insert(queued_.samples.end(), rows.begin(), rows.end());
    if (queued_.samples.size() >= full_rows_) ready_.notify_one();
  }

  void epoch(const EpochRow& row) override {
    const std::lock_guard lock(mutex_);
    if (!dropping_) queued_.epochs.push_back(row);
  }

  void metric(const MetricRow& row) override {
    const std::lock_guard lock(mutex_);
    if (!dropping_) queued_.metrics.push_back(row);
  }

  void trial_ended() {
    const std::lock_guard lock(mutex_);
    ended_ = true;
    ready_.notify_one();
  }

  // Waits up to `timeout` for the trial to end or a message's worth of
  // samples; returns whether it has ended (every row is queued by then).
  bool wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return ended_ || queued_.samples.size() >= full_rows_; });
    return ended_;
  }

  bool full() {
    const std::lock_guard lock(mutex_);
    return queued_.samples.size() >= full_rows_;
  }

  StreamedRows take() {
    const std::lock_guard lock(mutex_);
    StreamedRows taken;
    std::swap(taken, queued_);
    return taken;
  }

  // Samples taken but not sent yet go back in front of the queue.
  void put_back(std::vector<SampleRow>& rows) {
    if (rows.empty()) return;
    const std::lock_guard lock(mutex_);
    if (dropping_) return;
    queued_.samples.insert(queued_.samples.begin(), rows.begin(), rows.end());
  }

  void drop_from_now_on() {
    const std::lock_guard lock(mutex_);
    dropping_ = true;
    queued_ = StreamedRows{};
  }

 private:
  std::size_t full_rows_;
  std::mutex mutex_;
  std::condition_variable ready_;
  StreamedRows queued_;
  bool ended_ = false;
  bool dropping_ = false;
};

TrialRecord run_guarded(TrialRunner& runner, const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  const double start = unix_seconds();
  try {
    return runner.run(trial, context, sink);
  } catch (const std::bad_alloc& error) {
    return failed_row(trial, context.attempt, std::string("out of memory: ") + error.what(), start, unix_seconds());
  } catch (const std::exception& error) {
    return failed_row(trial, context.attempt, error.what(), start, unix_seconds());
  } catch (...) {
    return failed_row(trial, context.attempt, "the trial runner threw an exception that is not a std::exception", start,
                      unix_seconds());
  }
}

// The whole chunks at the front of `rows.samples`, compressed into
// rows.chunks; the rest stay in rows.samples.
void compress_whole_chunks(StreamedRows& rows, const SampleChunkFormat& format) {
  const std::size_t chunk = format.chunk_rows;
  std::size_t first = 0;
  for (; rows.samples.size() - first >= chunk; first += chunk)
    rows.chunks.push_back(compress_sample_chunk(std::span(rows.samples).subspan(first, chunk), format));
  rows.samples.erase(rows.samples.begin(), rows.samples.begin() + static_cast<std::ptrdiff_t>(first));
}

}  // namespace

TrialRecord failed_row(const TrialSpec& trial, int attempt, const std::string& message, double start_time,
                       double end_time) {
  TrialRecord record{trial_row_for(trial, attempt), {}};
  TrialRow& row = record.row;
  set_fixed(row.status, status_name(TrialStatus::failed));
  set_message(record, message);
  row.start_time = start_time;
  row.end_time = end_time;
  row.wall_seconds = end_time - start_time;
  return record;
}

TrialThread::TrialThread() : thread_([this] { loop(); }) {}

TrialThread::~TrialThread() {
  {
    const std::lock_guard lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void TrialThread::run(std::function<void()> job) {
  {
    const std::lock_guard lock(mutex_);
    job_ = std::move(job);
    busy_ = true;
  }
  changed_.notify_all();
}

void TrialThread::wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !busy_; });
}

void TrialThread::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return quit_ || busy_; });
    if (quit_) return;
    std::function<void()> job = std::move(job_);
    lock.unlock();
    job();  // run_guarded: never throws
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

TrialRecord run_streamed_trial(TrialThread& thread, TrialRunner& runner, const TrialSpec& trial, TrialContext context,
                               std::chrono::milliseconds flush_interval, const StreamHooks& hooks) {
  std::atomic<bool> stop{false};
  context.stop = &stop;
  StreamQueue queue(hooks.chunks ? hooks.chunks->chunk_rows : kRowsPerMessage);
  TrialRecord record;
  thread.run([&] {
    record = run_guarded(runner, trial, context, queue);
    queue.trial_ended();
  });

  std::exception_ptr failure;
  try {
    auto last_delivery = std::chrono::steady_clock::now();
    auto last_sent = last_delivery;
    for (;;) {
      const bool ended = queue.wait(kWakeInterval);
      if (!stop.load() && hooks.should_stop()) stop.store(true);
      const auto now = std::chrono::steady_clock::now();
      const bool due = ended || now - last_delivery >= flush_interval;
      if (due || queue.full()) {
        StreamedRows rows = queue.take();
        if (hooks.chunks) {
          compress_whole_chunks(rows, *hooks.chunks);
          // Short of a chunk: the rows wait for more, until they are due.
          if (!due) {
            queue.put_back(rows.samples);
            rows.samples.clear();
          }
        }
        if (!rows.empty()) {
          hooks.deliver(rows);
          last_sent = now;
        }
        last_delivery = now;
      }
      if (ended) break;
      if (hooks.alive && now - last_sent >= kAliveInterval) {
        hooks.alive();
        last_sent = now;
      }
    }
  } catch (...) {
    failure = std::current_exception();
    queue.drop_from_now_on();
    stop.store(true);
  }
  thread.wait();
  if (failure) std::rethrow_exception(failure);

  // Rank 0 matches the row to the trial it handed out; a runner's slip must
  // not end the sweep, so it becomes this trial's failure.
  if (get_fixed(record.row.trial_id) != trial.id) {
    const std::string message = "the trial runner returned a row for trial \"" + get_fixed(record.row.trial_id) + "\"";
    record = failed_row(trial, context.attempt, message, record.row.start_time, record.row.end_time);
  }

  TrialRow& row = record.row;
  row.attempt = context.attempt;
  row.run = context.run;
  row.rank = context.rank;
  set_fixed(row.host, context.host);
  return record;
}

}  // namespace memsweep::sweep::detail
