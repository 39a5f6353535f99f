#pragma once
// A program trial's progress, optionally: it may write one JSON object per
// line to MEMSWEEP_EVENTS_FD (docs/runner.md, "Programs"). The lines become
// the same phase and epoch reports memsweep's own trial process sends; a
// line not understood is counted, never fatal.

#include "runner/line_splitter.hpp"
#include "runner/trial_protocol.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::runner::detail {

// Longer lines are not events of this protocol (they are counted as bad,
// and the reader does not grow without bound for a program that writes
// something else to the descriptor).
inline constexpr std::size_t kMaxEventLineBytes = 64 * 1024;

// The environment variable naming the events descriptor, and where it sits.
inline constexpr std::string_view kEventsFdVariable = "MEMSWEEP_EVENTS_FD";
inline constexpr int kEventsFd = 3;

// One understood line.
struct ProgramEvent {
  enum class Kind { train, eval, epoch_end, model_size, out_of_memory, gpu };
  Kind kind = Kind::train;
  std::int32_t epoch = 0;                    // train, epoch_end
  double loss = 0.0;                         // epoch_end
  double accuracy = -1.0;                    // epoch_end; -1: not given
  std::int64_t parameters = 0;               // model_size
  std::int64_t activations_per_example = 0;  // model_size; 0: not given
  std::string what;                          // out_of_memory: what ran out ("cuda", any text)
  std::int32_t device = -1;                  // gpu: the CUDA device index
  std::int64_t allocated_peak = -1;          // gpu: torch.cuda.max_memory_allocated(), bytes
  std::int64_t reserved_peak = -1;           // gpu: torch.cuda.max_memory_reserved(), bytes
};

// The program's own view of its GPU memory, from its {"gpu": ...} lines:
// the largest peaks it reported, over its devices.
struct ProgramGpuPeaks {
  std::int64_t allocated_peak = -1;
  std::int64_t reserved_peak = -1;
};

// Pure. {"epoch": E, "phase": "train"}, {"phase": "eval"}, {"epoch": E,
// "loss": L, "accuracy": A} (accuracy optional, in [0, 1]), {"parameters":
// N, "activations_per_example": M} (M optional), {"out_of_memory": WHAT}
// (a string: the program caught its own out-of-memory error, a GPU's
// included, which a search counts as not fitting), {"gpu": {"device": D,
// "allocated_peak": N, "reserved_peak": N}} (bytes, whole, not negative;
// a device its peaks: PyTorch's max_memory_allocated/reserved). Other keys
// are ignored;
// nullopt for anything else (not JSON, not an object, a wrong type, an
// epoch below 1, a negative count).
std::optional<ProgramEvent> parse_event_line(std::string_view line);
// Why parse_event_line rejected `line` when it is a {"gpu": ...} line that
// is wrong ("gpu: reserved_peak must be a whole number of bytes, not
// -5"); empty for any other line.
std::string gpu_event_problem(std::string_view line);

// What the program said over the whole trial.
struct ProgramProgress {
  std::int32_t epochs_done = 0;
  double last_loss = -1.0;
  double last_accuracy = -1.0;
  std::optional<ProgramEvent> model_size;
  std::optional<std::string> out_of_memory;  // what the program said ran out
  ProgramGpuPeaks gpu;                       // -1: no {"gpu": ...} line
  std::int32_t bad_lines = 0;
  std::string first_bad_line;  // cut, for the one report of them
};

class EventLineReader final : public ReportSource {
 public:
  explicit EventLineReader(int fd) : fd_(fd) {}
  std::optional<Frame> next() override;
  bool at_end() const override { return at_end_ && pending_.empty(); }
  int fd() const override { return fd_; }
  const ProgramProgress& progress() const { return progress_; }
  // The epoch of the last train phase reported (0: none yet).
  std::int32_t current_epoch() const { return epoch_; }

 private:
  void take_line(std::string_view line);
  void note_bad_line(std::string_view line);
  int fd_;
  LineSplitter lines_{kMaxEventLineBytes};
  bool at_end_ = false;
  std::deque<Frame> pending_;
  ProgramProgress progress_;
  std::int32_t epoch_ = 0;
  std::chrono::steady_clock::time_point epoch_start_ = std::chrono::steady_clock::now();
};

}  // namespace memsweep::runner::detail
