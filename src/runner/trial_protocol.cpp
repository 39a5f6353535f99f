#include "runner/trial_protocol.hpp"

#include "common/field_codec.hpp"
#include "config/search_point_fields.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace memsweep::runner::detail {
namespace {

struct FrameHeader {
  std::uint32_t magic = kFrameMagic;
  std::uint16_t version = kProtocolVersion;
  std::uint16_t type = 0;
  std::uint32_t length = 0;
};
static_assert(sizeof(FrameHeader) == 12 && std::is_trivially_copyable_v<FrameHeader>);

// Every message's fields, each struct's listed once: encode() and the
// decode_*() functions walk the same lists (common/field_codec.hpp), so a
// field added to TrialSpec is added here, once, and travels both ways. A
// member added there without a line here fails to compile (the
// static_asserts below).
struct TrialFields : config::SearchPointFields {
  using config::SearchPointFields::operator();
  constexpr void operator()(FieldsOf<ImageShape> auto& shape, auto&& each) const {
    each("channels", shape.channels);
    each("height", shape.height);
    each("width", shape.width);
  }
  constexpr void operator()(FieldsOf<SyntheticSpec> auto& synthetic, auto&& each) const {
    each("shape", synthetic.shape);
    each("classes", synthetic.classes);
    each("train_size", synthetic.train_size);
    each("test_size", synthetic.test_size);
    each("noise", synthetic.noise);
    each("seed", synthetic.seed);
  }
  constexpr void operator()(FieldsOf<DatasetSpec> auto& dataset, auto&& each) const {
    each("kind", dataset.kind);
    each("synthetic", dataset.synthetic);
  }
  constexpr void operator()(FieldsOf<OptimizerSpec> auto& optimizer, auto&& each) const {
    each("kind", optimizer.kind);
    each("momentum", optimizer.momentum);
    each("beta1", optimizer.beta1);
    each("beta2", optimizer.beta2);
    each("epsilon", optimizer.epsilon);
  }
  constexpr void operator()(FieldsOf<ProgramSpec> auto& program, auto&& each) const {
    each("name", program.name);
    each("command", program.command);
    each("env", program.env);
    each("workdir", program.workdir);
    each("place", program.place);
    each("fields", program.fields);
    each("uses_data_dir", program.uses_data_dir);
    each("metrics", program.metrics);
    each("uses_trial_dir", program.uses_trial_dir);
    each("uses_gpu", program.uses_gpu);
    each("keep_trial_dir", program.keep_trial_dir);
    each("log_limit_bytes", program.log_limit_bytes);
  }
  constexpr void operator()(FieldsOf<ProgramMetric> auto& metric, auto&& each) const {
    each("name", metric.name);
    each("pattern", metric.pattern);
    each("place", metric.place);
  }
  constexpr void operator()(FieldsOf<ParamValue> auto& param, auto&& each) const {
    each("text", param.text);
    each("json", param.json);
  }
  constexpr void operator()(FieldsOf<TrialSpec> auto& trial, auto&& each) const {
    each("id", trial.id);
    each("repeat", trial.repeat);
    each("plan_index", trial.plan_index);
    each("dataset", trial.dataset);
    each("model", trial.model);
    each("channels", trial.channels);
    each("optimizer", trial.optimizer);
    each("learning_rate", trial.learning_rate);
    each("epochs", trial.epochs);
    each("batch_size", trial.batch_size);
    each("hidden", trial.hidden);
    each("seed", trial.seed);
    each("memory_plan", trial.memory_plan);
    each("recompute_every", trial.recompute_every);
    each("mem_budget_bytes", trial.mem_budget_bytes);
    each("timeout_seconds", trial.timeout_seconds);
    each("gpus_per_trial", trial.gpus_per_trial);
    each("gpu_limit_bytes", trial.gpu_limit_bytes);
    each("origin", trial.origin);
    each("program", trial.program);
    each("params", trial.params);
    each("search", trial.search);
  }
  constexpr void operator()(FieldsOf<TrialJob> auto& job, auto&& each) const {
    each("trial", job.trial);
    each("threads", job.threads);
    each("predicted_bytes", job.predicted_bytes);
  }
  constexpr void operator()(FieldsOf<ReadyReport> auto& report, auto&& each) const {
    each("pid", report.pid);
    each("train_examples", report.train_examples);
    each("test_examples", report.test_examples);
    each("dataset_bytes", report.dataset_bytes);
  }
  constexpr void operator()(FieldsOf<PhaseReport> auto& report, auto&& each) const {
    each("evaluating", report.evaluating);
    each("epoch", report.epoch);
  }
  constexpr void operator()(FieldsOf<EpochReport> auto& report, auto&& each) const {
    each("epoch", report.epoch);
    each("train_loss", report.train_loss);
    each("test_accuracy", report.test_accuracy);
    each("seconds", report.seconds);
  }
  constexpr void operator()(FieldsOf<ResultReport> auto& report, auto&& each) const {
    each("outcome", report.outcome);
    each("message", report.message);
    each("epochs_done", report.epochs_done);
    each("final_train_loss", report.final_train_loss);
    each("test_accuracy", report.test_accuracy);
  }
  constexpr void operator()(FieldsOf<FailureReport> auto& report, auto&& each) const {
    each("message", report.message);
  }

  // An enum value this build has no name for is refused, never trained as another.
  bool known(DatasetKind kind) const { return kind >= DatasetKind::mnist && kind <= DatasetKind::synthetic; }
  bool known(ModelKind kind) const { return kind >= ModelKind::mlp && kind <= ModelKind::alexnet; }
  bool known(OptimizerKind kind) const { return kind >= OptimizerKind::sgd && kind <= OptimizerKind::adam; }
  bool known(MemoryPlan plan) const { return plan >= MemoryPlan::keep && plan <= MemoryPlan::recompute; }
  bool known(KeepTrialDir keep) const { return keep <= KeepTrialDir::never; }
  bool known(ResultOutcome outcome) const { return outcome <= ResultOutcome::stopped; }
};

static_assert(lists_every_member<TrialSpec>(TrialFields{}));
static_assert(lists_every_member<ProgramSpec>(TrialFields{}));
static_assert(lists_every_member<ProgramMetric>(TrialFields{}));
static_assert(lists_every_member<ParamValue>(TrialFields{}));
static_assert(lists_every_member<SearchPoint>(TrialFields{}));
static_assert(lists_every_member<DatasetSpec>(TrialFields{}));
static_assert(lists_every_member<SyntheticSpec>(TrialFields{}));
static_assert(lists_every_member<ImageShape>(TrialFields{}));
static_assert(lists_every_member<OptimizerSpec>(TrialFields{}));
static_assert(lists_every_member<TrialJob>(TrialFields{}));
static_assert(lists_every_member<ReadyReport>(TrialFields{}));
static_assert(lists_every_member<PhaseReport>(TrialFields{}));
static_assert(lists_every_member<EpochReport>(TrialFields{}));
static_assert(lists_every_member<ResultReport>(TrialFields{}));
static_assert(lists_every_member<FailureReport>(TrialFields{}));

template <typename Message>
Frame encode_frame(const Message& message, FrameType type) {
  return Frame{type, encode_fields(message, TrialFields{})};
}

// The codec's errors become the pipe's own, which the rank and the trial
// process catch; their message already names the frame and the field.
template <typename Message>
Message decode_frame(const Frame& frame, FrameType expected) {
  if (frame.type != expected)
    throw ProtocolError(
        fmt::format("expected a {} frame, got a {} frame", frame_type_name(expected), frame_type_name(frame.type)));
  const std::string name = fmt::format("{} frame", frame_type_name(expected));
  try {
    return decode_fields<Message>(frame.payload, name, TrialFields{});
  } catch (const FieldCodecError& error) {
    throw ProtocolError(error.what());
  }
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

Frame encode(const TrialJob& job) { return encode_frame(job, FrameType::job); }

TrialJob decode_job(const Frame& frame) {
  TrialJob job = decode_frame<TrialJob>(frame, FrameType::job);
  // The id is a hash of the fields: a mismatch means the two ends disagree
  // on what a trial is, and the process would train something else.
  const TrialSpec& t = job.trial;
  if (trial_id(t) != t.id)
    throw ProtocolError(fmt::format("job frame: trial {} arrived with fields whose id is {}", t.id, trial_id(t)));
  return job;
}

Frame encode(const ReadyReport& report) { return encode_frame(report, FrameType::ready); }
ReadyReport decode_ready(const Frame& frame) { return decode_frame<ReadyReport>(frame, FrameType::ready); }

Frame encode(const PhaseReport& report) { return encode_frame(report, FrameType::phase); }
PhaseReport decode_phase(const Frame& frame) { return decode_frame<PhaseReport>(frame, FrameType::phase); }

Frame encode(const EpochReport& report) { return encode_frame(report, FrameType::epoch); }
EpochReport decode_epoch(const Frame& frame) { return decode_frame<EpochReport>(frame, FrameType::epoch); }

Frame encode(const ResultReport& report) { return encode_frame(report, FrameType::result); }
ResultReport decode_result(const Frame& frame) { return decode_frame<ResultReport>(frame, FrameType::result); }

Frame encode(const FailureReport& report) { return encode_frame(report, FrameType::failure); }
FailureReport decode_failure(const Frame& frame) { return decode_frame<FailureReport>(frame, FrameType::failure); }

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

}  // namespace memsweep::runner::detail
