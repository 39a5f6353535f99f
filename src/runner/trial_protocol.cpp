#include "runner/trial_protocol.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace memsweep::runner_detail {
namespace {

struct FrameHeader {
  std::uint32_t magic = kFrameMagic;
  std::uint16_t version = kProtocolVersion;
  std::uint16_t type = 0;
  std::uint32_t length = 0;
};
static_assert(sizeof(FrameHeader) == 12 && std::is_trivially_copyable_v<FrameHeader>);

// Fields one after the other, each as its bytes.
class PayloadWriter {
 public:
  template <typename T>
  PayloadWriter& value(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* bytes = reinterpret_cast<const std::byte*>(&v);
    out_.insert(out_.end(), bytes, bytes + sizeof(T));
    return *this;
  }
  PayloadWriter& text(std::string_view s) {
    value(static_cast<std::uint32_t>(s.size()));
    const auto* bytes = reinterpret_cast<const std::byte*>(s.data());
    out_.insert(out_.end(), bytes, bytes + s.size());
    return *this;
  }
  PayloadWriter& ints(const std::vector<int>& list) {
    value(static_cast<std::uint32_t>(list.size()));
    for (const int item : list) value(static_cast<std::int32_t>(item));
    return *this;
  }
  Frame frame(FrameType type) && { return Frame{type, std::move(out_)}; }

 private:
  std::vector<std::byte> out_;
};

class PayloadReader {
 public:
  PayloadReader(const Frame& frame, FrameType expected) : frame_(frame) {
    if (frame.type != expected)
      throw ProtocolError(
          fmt::format("expected a {} frame, got a {} frame", frame_type_name(expected), frame_type_name(frame.type)));
  }
  template <typename T>
  T value() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string text() {
    const auto length = value<std::uint32_t>();
    const std::byte* bytes = take(length);
    return std::string(reinterpret_cast<const char*>(bytes), length);
  }
  std::vector<int> ints() {
    const auto count = value<std::uint32_t>();
    if (count > remaining() / sizeof(std::int32_t)) fail("a list longer than its frame");
    std::vector<int> list(count);
    for (int& item : list) item = value<std::int32_t>();
    return list;
  }
  // Every byte must have been read: a longer payload is another message.
  void finish() const {
    if (at_ != frame_.payload.size())
      throw ProtocolError(fmt::format("{} frame: {} bytes left over", frame_type_name(frame_.type), remaining()));
  }

 private:
  std::size_t remaining() const { return frame_.payload.size() - at_; }
  const std::byte* take(std::size_t bytes) {
    if (bytes > remaining()) fail("cut short");
    const std::byte* start = frame_.payload.data() + at_;
    at_ += bytes;
    return start;
  }
  [[noreturn]] void fail(const char* what) const {
    throw ProtocolError(
        fmt::format("{} frame of {} bytes: {}", frame_type_name(frame_.type), frame_.payload.size(), what));
  }

  const Frame& frame_;
  std::size_t at_ = 0;
};

template <typename Enum>
Enum checked_enum(std::int32_t value, std::int32_t last, const char* what) {
  if (value < 0 || value > last) throw ProtocolError(fmt::format("unknown {} {}", what, value));
  return static_cast<Enum>(value);
}

bool known_type(std::uint16_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::job:
    case FrameType::go:
    case FrameType::exit:
    case FrameType::ready:
    case FrameType::phase:
    case FrameType::epoch:
    case FrameType::result:
    case FrameType::failure: return true;
  }
  return false;
}

}  // namespace

std::string_view frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::job: return "job";
    case FrameType::go: return "go";
    case FrameType::exit: return "exit";
    case FrameType::ready: return "ready";
    case FrameType::phase: return "phase";
    case FrameType::epoch: return "epoch";
    case FrameType::result: return "result";
    case FrameType::failure: return "failure";
  }
  return "unknown";
}

// ---- messages -------------------------------------------------------------------

Frame encode(const TrialJob& job) {
  const TrialSpec& t = job.trial;
  const SyntheticSpec& s = t.dataset.synthetic;
  PayloadWriter out;
  out.text(t.id).value<std::int32_t>(t.repeat);
  out.value<std::int32_t>(static_cast<std::int32_t>(t.dataset.kind));
  out.value<std::int32_t>(s.shape.channels).value<std::int32_t>(s.shape.height).value<std::int32_t>(s.shape.width);
  out.value<std::int32_t>(s.classes).value<std::int32_t>(s.train_size).value<std::int32_t>(s.test_size);
  out.value(s.noise).value(s.seed);
  out.value<std::int32_t>(static_cast<std::int32_t>(t.model)).ints(t.channels);
  out.value<std::int32_t>(static_cast<std::int32_t>(t.optimizer.kind));
  out.value(t.optimizer.momentum).value(t.optimizer.beta1).value(t.optimizer.beta2).value(t.optimizer.epsilon);
  out.value(t.learning_rate).value<std::int32_t>(t.epochs).value<std::int32_t>(t.batch_size).ints(t.hidden);
  out.value(t.seed);
  out.value<std::int32_t>(static_cast<std::int32_t>(t.memory_plan)).value<std::int32_t>(t.recompute_every);
  // A search's probe: its limit is part of its id.
  const SearchPoint point = t.search.value_or(SearchPoint{.search = -1});
  out.value<std::int32_t>(point.search).value<std::int32_t>(point.probe).value<std::int64_t>(point.value);
  out.value<std::uint64_t>(point.limit_bytes).value<std::int32_t>(point.full ? 1 : 0);
  out.value(job.threads).value(job.predicted_bytes);
  return std::move(out).frame(FrameType::job);
}

TrialJob decode_job(const Frame& frame) {
  PayloadReader in(frame, FrameType::job);
  TrialJob job;
  TrialSpec& t = job.trial;
  SyntheticSpec& s = t.dataset.synthetic;
  t.id = in.text();
  t.repeat = in.value<std::int32_t>();
  t.dataset.kind =
      checked_enum<DatasetKind>(in.value<std::int32_t>(), static_cast<int>(DatasetKind::synthetic), "dataset kind");
  s.shape.channels = in.value<std::int32_t>();
  s.shape.height = in.value<std::int32_t>();
  s.shape.width = in.value<std::int32_t>();
  s.classes = in.value<std::int32_t>();
  s.train_size = in.value<std::int32_t>();
  s.test_size = in.value<std::int32_t>();
  s.noise = in.value<double>();
  s.seed = in.value<std::uint64_t>();
  t.model = checked_enum<ModelKind>(in.value<std::int32_t>(), static_cast<int>(ModelKind::alexnet), "model kind");
  t.channels = in.ints();
  t.optimizer.kind =
      checked_enum<OptimizerKind>(in.value<std::int32_t>(), static_cast<int>(OptimizerKind::adam), "optimizer kind");
  t.optimizer.momentum = in.value<double>();
  t.optimizer.beta1 = in.value<double>();
  t.optimizer.beta2 = in.value<double>();
  t.optimizer.epsilon = in.value<double>();
  t.learning_rate = in.value<double>();
  t.epochs = in.value<std::int32_t>();
  t.batch_size = in.value<std::int32_t>();
  t.hidden = in.ints();
  t.seed = in.value<std::uint64_t>();
  t.memory_plan =
      checked_enum<MemoryPlan>(in.value<std::int32_t>(), static_cast<int>(MemoryPlan::recompute), "memory plan");
  t.recompute_every = in.value<std::int32_t>();
  SearchPoint point;
  point.search = in.value<std::int32_t>();
  point.probe = in.value<std::int32_t>();
  point.value = in.value<std::int64_t>();
  point.limit_bytes = in.value<std::uint64_t>();
  point.full = in.value<std::int32_t>() != 0;
  if (point.search >= 0) t.search = point;
  job.threads = in.value<std::int32_t>();
  job.predicted_bytes = in.value<std::int64_t>();
  in.finish();
  // The id is a hash of the fields: a mismatch means the two ends disagree
  // on what a trial is, and the process would train something else.
  if (trial_id(t) != t.id)
    throw ProtocolError(fmt::format("job frame: trial {} arrived with fields whose id is {}", t.id, trial_id(t)));
  return job;
}

Frame encode(const ReadyReport& report) {
  PayloadWriter out;
  out.value(report.pid).value(report.train_examples).value(report.test_examples).value(report.dataset_bytes);
  return std::move(out).frame(FrameType::ready);
}

ReadyReport decode_ready(const Frame& frame) {
  PayloadReader in(frame, FrameType::ready);
  ReadyReport report;
  report.pid = in.value<std::int32_t>();
  report.train_examples = in.value<std::uint64_t>();
  report.test_examples = in.value<std::uint64_t>();
  report.dataset_bytes = in.value<std::uint64_t>();
  in.finish();
  return report;
}

Frame encode(const PhaseReport& report) {
  PayloadWriter out;
  out.value<std::uint8_t>(report.evaluating ? 1 : 0).value(report.epoch);
  return std::move(out).frame(FrameType::phase);
}

PhaseReport decode_phase(const Frame& frame) {
  PayloadReader in(frame, FrameType::phase);
  PhaseReport report;
  const auto evaluating = in.value<std::uint8_t>();
  if (evaluating > 1)
    throw ProtocolError(fmt::format("phase frame: phase {} is neither training nor evaluating", evaluating));
  report.evaluating = evaluating == 1;
  report.epoch = in.value<std::int32_t>();
  in.finish();
  return report;
}

Frame encode(const EpochReport& report) {
  PayloadWriter out;
  out.value(report.epoch).value(report.train_loss).value(report.test_accuracy).value(report.seconds);
  return std::move(out).frame(FrameType::epoch);
}

EpochReport decode_epoch(const Frame& frame) {
  PayloadReader in(frame, FrameType::epoch);
  EpochReport report;
  report.epoch = in.value<std::int32_t>();
  report.train_loss = in.value<double>();
  report.test_accuracy = in.value<double>();
  report.seconds = in.value<double>();
  in.finish();
  return report;
}

Frame encode(const ResultReport& report) {
  PayloadWriter out;
  out.value(static_cast<std::uint8_t>(report.outcome)).text(report.message).value(report.epochs_done);
  out.value(report.final_train_loss).value(report.test_accuracy);
  return std::move(out).frame(FrameType::result);
}

ResultReport decode_result(const Frame& frame) {
  PayloadReader in(frame, FrameType::result);
  ResultReport report;
  report.outcome =
      checked_enum<ResultOutcome>(in.value<std::uint8_t>(), static_cast<int>(ResultOutcome::stopped), "result outcome");
  report.message = in.text();
  report.epochs_done = in.value<std::int32_t>();
  report.final_train_loss = in.value<double>();
  report.test_accuracy = in.value<double>();
  in.finish();
  return report;
}

Frame encode(const FailureReport& report) {
  PayloadWriter out;
  out.text(report.message);
  return std::move(out).frame(FrameType::failure);
}

FailureReport decode_failure(const Frame& frame) {
  PayloadReader in(frame, FrameType::failure);
  FailureReport report;
  report.message = in.text();
  in.finish();
  return report;
}

Frame empty_frame(FrameType type) { return Frame{type, {}}; }

// ---- on a descriptor ---------------------------------------------------------------

std::vector<std::byte> frame_bytes(const Frame& frame) {
  if (frame.payload.size() > kMaxPayloadBytes)
    throw ProtocolError(fmt::format("a {} frame of {} bytes is longer than the {} a frame may hold",
                                    frame_type_name(frame.type), frame.payload.size(), kMaxPayloadBytes));
  FrameHeader header;
  header.type = static_cast<std::uint16_t>(frame.type);
  header.length = static_cast<std::uint32_t>(frame.payload.size());
  std::vector<std::byte> bytes(sizeof(header) + frame.payload.size());
  std::memcpy(bytes.data(), &header, sizeof(header));
  if (!frame.payload.empty()) std::memcpy(bytes.data() + sizeof(header), frame.payload.data(), frame.payload.size());
  return bytes;
}

namespace {

// A write to a pipe whose reader is gone raises SIGPIPE, whose default
// action ends the writer: a rank must outlive a trial process that died,
// whatever the rest of the rank did with SIGPIPE. So the signal is blocked
// on this thread for the write, and one it raised is taken off before the
// mask is restored (the usual way for a library to write to a pipe).
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigset_t sigpipe;
    ::sigemptyset(&sigpipe);
    ::sigaddset(&sigpipe, SIGPIPE);
    ::sigpending(&pending_before_);
    ::pthread_sigmask(SIG_BLOCK, &sigpipe, &previous_);
  }
  ~SigpipeBlocked() {
    if (raised_ && !::sigismember(&pending_before_, SIGPIPE)) {
      sigset_t sigpipe;
      ::sigemptyset(&sigpipe);
      ::sigaddset(&sigpipe, SIGPIPE);
      const timespec no_wait{0, 0};
      while (::sigtimedwait(&sigpipe, nullptr, &no_wait) < 0 && errno == EINTR) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;
  void raised() { raised_ = true; }

 private:
  sigset_t previous_{};
  sigset_t pending_before_{};
  bool raised_ = false;
};

}  // namespace

bool write_frame(int fd, const Frame& frame) {
  const std::vector<std::byte> bytes = frame_bytes(frame);
  SigpipeBlocked blocked;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0 && errno == EPIPE) blocked.raised();
    if (wrote <= 0) return false;
    done += static_cast<std::size_t>(wrote);
  }
  return true;
}

std::optional<Frame> FrameReader::take_buffered() {
  if (buffer_.size() < sizeof(FrameHeader)) return std::nullopt;
  FrameHeader header;
  std::memcpy(&header, buffer_.data(), sizeof(header));
  if (header.magic != kFrameMagic)
    throw ProtocolError(fmt::format("not a memsweep trial frame (magic {:#010x})", header.magic));
  if (header.version != kProtocolVersion)
    throw ProtocolError(fmt::format("a frame of protocol version {}, this memsweep speaks version {}", header.version,
                                    kProtocolVersion));
  if (!known_type(header.type)) throw ProtocolError(fmt::format("a frame of unknown type {}", header.type));
  if (header.length > kMaxPayloadBytes)
    throw ProtocolError(fmt::format("a {} frame announcing {} bytes, more than the {} a frame may hold",
                                    frame_type_name(static_cast<FrameType>(header.type)), header.length,
                                    kMaxPayloadBytes));
  const std::size_t total = sizeof(header) + header.length;
  if (buffer_.size() < total) return std::nullopt;
  Frame frame{
      static_cast<FrameType>(header.type),
      std::vector<std::byte>(buffer_.begin() + sizeof(header), buffer_.begin() + static_cast<std::ptrdiff_t>(total))};
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(total));
  return frame;
}

std::optional<Frame> FrameReader::next() {
  for (;;) {
    if (std::optional<Frame> frame = take_buffered()) return frame;
    if (at_end_) {
      if (!buffer_.empty())
        throw ProtocolError(
            fmt::format("the writer closed the pipe in the middle of a frame ({} bytes of it came)", buffer_.size()));
      return std::nullopt;
    }
    std::byte chunk[4096];
    const ssize_t got = ::read(fd_, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
    if (got <= 0) {
      at_end_ = true;  // EOF, or the descriptor failed: nothing more will come either way
      continue;
    }
    buffer_.insert(buffer_.end(), chunk, chunk + got);
  }
}

}  // namespace memsweep::runner_detail
