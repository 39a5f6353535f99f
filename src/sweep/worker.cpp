// A worker (rank >= 1): asks rank 0 for a trial, runs it while streaming
// its rows to rank 0, sends its row, asks again, until rank 0 says FINISH.
// The trial runs on its own thread; this thread does all the MPI.

#include "sweep/protocol.hpp"
#include "sweep/roles.hpp"
#include "sweep/streamed_trial.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace memsweep::sweep::detail {
namespace {

// One receive call's wait for rank 0's answer (ASSIGN comes at once; FINISH
// only when the whole sweep is over, which may be hours): the loop just
// waits again, asleep between polls.
constexpr std::chrono::milliseconds kReplyWait{1000};

[[noreturn]] void unexpected(const Message& message, const char* when) {
  throw std::runtime_error("sweep protocol: worker got " + tag_name(message.tag) + " from rank " +
                           std::to_string(message.source) + " " + when);
}

// Rank 0's answer to REQUEST or LEAVING: ASSIGN or FINISH. A STOP meant for
// a trial that has already ended arrives here first and means nothing now.
Message wait_for_answer(Communicator& comm) {
  for (;;) {
    std::optional<Message> message = comm.receive(0, kReplyWait);
    if (!message || message->tag == tag::kStop) continue;
    if (message->tag == tag::kAssign || message->tag == tag::kFinish) return std::move(*message);
    unexpected(*message, "while waiting for a trial");
  }
}

void send_rows(Communicator& comm, StreamedRows& rows) {
  for (const CompressedSampleChunk& chunk : rows.chunks)  // older than rows.samples
    comm.send(0, tag::kCompressedSamples, compressed_chunk_payload(chunk));
  const std::span<const SampleRow> samples(rows.samples);
  for (std::size_t first = 0; first < samples.size(); first += kRowsPerMessage) {
    const std::size_t count = std::min(kRowsPerMessage, samples.size() - first);
    comm.send(0, tag::kSamples, payload_of(samples.subspan(first, count)));
  }
  if (!rows.epochs.empty()) comm.send(0, tag::kEpochs, payload_of(std::span<const EpochRow>(rows.epochs)));
  if (!rows.metrics.empty()) comm.send(0, tag::kMetrics, payload_of(std::span<const MetricRow>(rows.metrics)));
}

}  // namespace

SweepResult run_worker(Communicator& comm, const SweepTrials& trials, TrialRunner& runner,
                       const SweepOptions& options) {
  SweepResult result;
  const std::string host = comm.host_name();
  bool signalled = false;     // this rank's own stop flag (a signal)
  bool told_to_stop = false;  // rank 0's STOP
  const StreamHooks hooks{
      .deliver = [&](StreamedRows& rows) { send_rows(comm, rows); },
      .should_stop =
          [&] {
            // Receiving from rank 0 only: the only message it can send a
            // busy worker is STOP.
            if (std::optional<Message> message = comm.receive(0, std::chrono::milliseconds(0))) {
              if (message->tag != tag::kStop) unexpected(*message, "during a trial");
              told_to_stop = true;
            }
            signalled = signalled || stop_requested(options);
            return told_to_stop || signalled;
          },
      .alive = [&] { send_empty(comm, 0, tag::kAlive); },
      .chunks = options.sample_chunks,
  };

  TrialThread trial_thread;
  for (;;) {
    signalled = signalled || stop_requested(options);
    if (signalled) {
      // Rank 0 stops the others, and sends FINISH once every worker is
      // done; waiting for it also takes any STOP still on its way, so
      // nothing is left unread.
      send_empty(comm, 0, tag::kLeaving);
      wait_for_answer(comm);
      result.stopped = true;
      return result;
    }
    send_empty(comm, 0, tag::kRequest);
    const Message answer = wait_for_answer(comm);
    if (answer.tag == tag::kFinish) {
      result.stopped = told_to_stop;
      return result;
    }
    const Assignment job =
        decode_assignment(std::string_view(reinterpret_cast<const char*>(answer.bytes.data()), answer.bytes.size()));
    const TrialSpec trial = assigned_trial(job, trials, options.search);
    const TrialRecord record = run_streamed_trial(
        trial_thread, runner, trial, trial_context(comm, host, job.attempt, options), options.flush_interval, hooks);
    comm.send(0, tag::kRecord, record_payload(record));
    count_row(result, record.row);
  }
}

}  // namespace memsweep::sweep::detail
