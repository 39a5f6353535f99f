#include "runner/program_events.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>

namespace memsweep::runner::detail {
namespace {

constexpr std::size_t kBadLineShown = 120;

std::optional<std::int64_t> whole(const nlohmann::json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return std::nullopt;
}

// {"device": D, "allocated_peak": N, "reserved_peak": N}: the event, or
// what is wrong with it.
std::optional<ProgramEvent> parse_gpu(const nlohmann::json& gpu, std::string& problem) {
  if (!gpu.is_object()) {
    problem = "gpu: expected an object {\"device\": D, \"allocated_peak\": N, \"reserved_peak\": N}";
    return std::nullopt;
  }
  ProgramEvent event;
  event.kind = ProgramEvent::Kind::gpu;
  const auto field = [&](const char* key, std::int64_t limit, std::int64_t& out) {
    const auto it = gpu.find(key);
    if (it == gpu.end()) {
      problem = fmt::format("gpu: {} is missing", key);
      return false;
    }
    const auto value = whole(*it);
    if (!value || *value < 0 || *value > limit) {
      problem = fmt::format("gpu: {} must be a whole number {}from 0, not {}", key,
                            limit == INT32_MAX ? "(a device index) " : "of bytes ", it->dump());
      return false;
    }
    out = *value;
    return true;
  };
  std::int64_t device = 0;
  if (!field("device", INT32_MAX, device) || !field("allocated_peak", INT64_MAX, event.allocated_peak) ||
      !field("reserved_peak", INT64_MAX, event.reserved_peak))
    return std::nullopt;
  event.device = static_cast<std::int32_t>(device);
  return event;
}

}  // namespace

std::string gpu_event_problem(std::string_view line) {
  const nlohmann::json object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) return {};
  const auto it = object.find("gpu");
  if (it == object.end()) return {};
  std::string problem;
  parse_gpu(*it, problem);
  return problem;
}

std::optional<ProgramEvent> parse_event_line(std::string_view line) {
  const nlohmann::json object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) return std::nullopt;
  ProgramEvent event;
  const auto member = [&](const char* key) -> const nlohmann::json* {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  };
  if (const auto* what = member("out_of_memory")) {
    if (!what->is_string()) return std::nullopt;
    event.kind = ProgramEvent::Kind::out_of_memory;
    event.what = what->get<std::string>();
    return event;
  }
  if (const auto* gpu = member("gpu")) {
    std::string problem;
    return parse_gpu(*gpu, problem);
  }
  if (const auto* parameters = member("parameters")) {
    const auto count = whole(*parameters);
    if (!count || *count < 0) return std::nullopt;
    event.kind = ProgramEvent::Kind::model_size;
    event.parameters = *count;
    if (const auto* activations = member("activations_per_example")) {
      const auto per_example = whole(*activations);
      if (!per_example || *per_example < 0) return std::nullopt;
      event.activations_per_example = *per_example;
    }
    return event;
  }
  const auto* epoch = member("epoch");
  if (epoch != nullptr) {
    const auto number = whole(*epoch);
    if (!number || *number < 1 || *number > INT32_MAX) return std::nullopt;
    event.epoch = static_cast<std::int32_t>(*number);
  }
  if (const auto* loss = member("loss")) {
    if (epoch == nullptr || !loss->is_number()) return std::nullopt;
    event.kind = ProgramEvent::Kind::epoch_end;
    event.loss = loss->get<double>();
    if (const auto* accuracy = member("accuracy")) {
      if (!accuracy->is_number()) return std::nullopt;
      event.accuracy = accuracy->get<double>();
      if (!(event.accuracy >= 0.0 && event.accuracy <= 1.0)) return std::nullopt;
    }
    return event;
  }
  const auto* phase = member("phase");
  if (phase == nullptr || !phase->is_string()) return std::nullopt;
  const std::string& name = phase->get_ref<const std::string&>();
  if (name == "train" && epoch != nullptr) {
    event.kind = ProgramEvent::Kind::train;
    return event;
  }
  if (name == "eval") {
    event.kind = ProgramEvent::Kind::eval;
    return event;
  }
  return std::nullopt;
}

std::optional<Frame> EventLineReader::next() {
  for (;;) {
    if (!pending_.empty()) {
      Frame frame = std::move(pending_.front());
      pending_.pop_front();
      return frame;
    }
    if (at_end_) return std::nullopt;
    char chunk[4096];
    const ssize_t got = ::read(fd_, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
    if (got <= 0) {
      at_end_ = true;
      lines_.finish([this](std::string_view line) { take_line(line); });
      continue;
    }
    lines_.feed(
        std::string_view(chunk, static_cast<std::size_t>(got)), [this](std::string_view line) { take_line(line); },
        [this](std::string_view kept) { note_bad_line(kept); });
  }
}

void EventLineReader::take_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank lines are not events
  const std::optional<ProgramEvent> event = parse_event_line(line);
  if (!event) return note_bad_line(line);
  const auto now = std::chrono::steady_clock::now();
  switch (event->kind) {
    case ProgramEvent::Kind::train:
      epoch_ = event->epoch;
      epoch_start_ = now;
      pending_.push_back(encode(PhaseReport{false, epoch_}));
      return;
    case ProgramEvent::Kind::eval: pending_.push_back(encode(PhaseReport{true, epoch_})); return;
    case ProgramEvent::Kind::epoch_end: {
      EpochReport epoch;
      epoch.epoch = event->epoch;
      epoch.train_loss = event->loss;
      epoch.test_accuracy = event->accuracy;
      epoch.seconds = std::chrono::duration<double>(now - epoch_start_).count();
      progress_.epochs_done = std::max(progress_.epochs_done, event->epoch);
      progress_.last_loss = event->loss;
      progress_.last_accuracy = event->accuracy;
      pending_.push_back(encode(epoch));
      return;
    }
    case ProgramEvent::Kind::model_size: progress_.model_size = event; return;
    case ProgramEvent::Kind::out_of_memory: progress_.out_of_memory = event->what; return;
    case ProgramEvent::Kind::gpu:
      progress_.gpu.allocated_peak = std::max(progress_.gpu.allocated_peak, event->allocated_peak);
      progress_.gpu.reserved_peak = std::max(progress_.gpu.reserved_peak, event->reserved_peak);
      return;
  }
}

void EventLineReader::note_bad_line(std::string_view line) {
  if (progress_.bad_lines++ != 0) return;
  progress_.first_bad_line = std::string(line.substr(0, kBadLineShown));
  // A wrong {"gpu": ...} line says what is wrong with it.
  if (const std::string problem = gpu_event_problem(line); !problem.empty())
    progress_.first_bad_line += fmt::format(" ({})", problem);
}

}  // namespace memsweep::runner::detail
