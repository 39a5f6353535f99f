#pragma once
// The trainer: a trial's network on oneDNN 2.6 primitives (inner product,
// convolution, max-pooling, ReLU fused as a post-op, softmax), trained with
// SGD, momentum or Adam on softmax cross-entropy.
//
// Everything a step touches — primitives, their argument lists, activations,
// gradients, optimizer state, scratchpad — is created when the Trainer is
// built, for each batch size it will see (the full batch, the last partial
// batch of the training set, the last partial batch of the test set), and
// reused every step.

#include "memsweep/dataset.hpp"
#include "memsweep/model_spec.hpp"
#include "memsweep/optimizer_spec.hpp"
#include "memsweep/training_spec.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memsweep {

// A oneDNN call failed; the message says what was being built or run.
class TrainerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes of each kind of memory the trainer holds, from oneDNN's own memory
// descriptors (so blocked layouts' padding counts). Under keep, every
// transient buffer is counted in its own field; under reuse and recompute
// they share step_arena (the labels stay in input_batch) and the fields
// activations .. reordered_weights are 0.
struct TrainerMemory {
  std::size_t parameters = 0;       // weights and biases
  std::size_t gradients = 0;        // their gradients
  std::size_t optimizer_state = 0;  // momentum: 1 copy, Adam: 2 copies, SGD: none
  std::size_t activations = 0;      // forward outputs, all plans
  std::size_t workspace = 0;        // max-pooling's workspaces (where each max came from), all plans
  std::size_t activation_gradients = 0;
  std::size_t input_batch = 0;        // the batch buffers (images, labels, reordered input)
  std::size_t reordered_weights = 0;  // conv weights in backward-data's layout
  std::size_t scratchpad = 0;         // one buffer, the largest any primitive asks for
  std::size_t step_arena = 0;         // reuse, recompute: the transient buffers by lifetime
  std::size_t total() const {
    return parameters + gradients + optimizer_state + activations + workspace + activation_gradients + input_batch +
           reordered_weights + scratchpad + step_arena;
  }
};

// How many threads each batch size's steps run with.
enum class StepThreads {
  fit_to_work,  // as many as the step's work keeps busy (trainer/thread_choice.hpp)
  all,          // every thread given, at every batch size (for benchmarks: the old way)
};

struct TrainerConfig {
  ModelSpec model;
  OptimizerSpec optimizer;
  double learning_rate = 0.01;
  std::uint64_t seed = 0;  // weight initialisation
  MemoryPlan memory_plan = MemoryPlan::keep;
  int recompute_every = kRecomputeEveryDefault;
  // The threads given are OpenMP's count when the Trainer is built: its
  // primitives are created for the count they will run with, and some of
  // oneDNN's fix it then.
  StepThreads step_threads = StepThreads::fit_to_work;
  // Row counts to prepare for training (forward and backward) and for
  // evaluation only. The first training size is the main batch: it fixes the
  // parameters' memory layouts. A step with a row count not prepared throws.
  std::vector<std::size_t> train_batch_sizes;
  std::vector<std::size_t> eval_batch_sizes;
};

class Trainer {
 public:
  explicit Trainer(const TrainerConfig& config);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Where the next batch goes: rows × pixels floats (NCHW) and rows labels.
  // Fill them, then call train_step(rows) or evaluate_step(rows). Under
  // reuse and recompute the images share the step's arena: they hold the
  // batch until the step has read them, so fill them before every step.
  std::span<float> batch_images(std::size_t rows);
  std::span<std::int32_t> batch_labels(std::size_t rows);

  // Forward, loss, backward and an optimizer update; returns the mean loss of
  // the batch (NaN or infinite when training diverges).
  double train_step(std::size_t rows);
  // Forward only; returns how many rows the network classifies correctly.
  std::size_t evaluate_step(std::size_t rows);

  TrainerMemory memory() const;
  const TrainerConfig& config() const;
  // Per primitive: what it does and the implementation oneDNN picked
  // (e.g. "fc1 forward: gemm:jit"), to check nothing fell back to a
  // reference implementation.
  std::vector<std::string> implementations() const;
  // The OpenMP threads the steps of `rows` rows run with (and their
  // primitives were created with).
  int step_threads(std::size_t rows) const;

  // ---- for tests: parameters and gradients in plain layouts (oihw, oi, x) --
  std::size_t tensor_count() const;
  std::string tensor_name(std::size_t tensor) const;
  std::vector<float> parameter(std::size_t tensor) const;
  void set_parameter(std::size_t tensor, std::span<const float> values);
  std::vector<float> gradient(std::size_t tensor) const;
  // Forward and backward without an update; returns the mean loss.
  double compute_gradients(std::size_t rows);
  // Forward only; returns the mean loss.
  double loss(std::size_t rows);

 private:
  void bind_arena();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The networks a Trainer built from `config` prepares: each distinct row
// count once (0 skipped), the main training batch first; `true` for a
// network that trains (has a backward pass), `false` for evaluation only.
std::vector<std::pair<std::size_t, bool>> prepared_batch_sizes(const TrainerConfig& config);

// What a Trainer built from `config` would hold, without allocating it or
// generating any kernel: the same layouts and sizes, from oneDNN's own
// primitive descriptors.
TrainerMemory predict_trainer_memory(const TrainerConfig& config);

// ---- training a trial ---------------------------------------------------

enum class TrainingPhase { train, evaluate };

struct EpochResult {
  int epoch = 0;            // from 1
  double train_loss = 0.0;  // mean over the epoch's examples
  double test_accuracy = 0.0;
  double seconds = 0.0;
};

enum class TrainingOutcome { completed, diverged, stopped };

struct TrainingResult {
  TrainingOutcome outcome = TrainingOutcome::completed;
  std::string message;  // why it diverged or stopped
  std::vector<EpochResult> epochs;
  TrainerMemory memory;
};

struct TrainingOptions {
  // Called on the training thread when a phase begins (epoch from 1), so a
  // sampler can mark its samples. Not called inside the step loop.
  std::function<void(TrainingPhase, int epoch)> on_phase;
  std::function<void(const EpochResult&)> on_epoch_end;
  // Checked before every step; when set, training ends as `stopped`.
  const std::atomic<bool>* stop = nullptr;
  // Use only the first N examples of each split (0: all), for quick tests.
  std::size_t max_train_examples = 0;
  std::size_t max_test_examples = 0;
};

// Trains `spec` on `data` for its epochs: one Trainer, one shuffled order
// per epoch (seeded by the spec), test accuracy after every epoch.
TrainingResult train_trial(const TrainingSpec& spec, const DatasetView& data, const TrainingOptions& options = {});
inline TrainingResult train_trial(const TrainingSpec& spec, const Dataset& data, const TrainingOptions& options = {}) {
  return train_trial(spec, view_of(data), options);
}

TrainerConfig trainer_config(const TrainingSpec& spec, std::size_t train_examples, std::size_t test_examples);

// ---- threads --------------------------------------------------------------

// The threads a rank should train with when the user gives none: OMP_NUM_THREADS
// if set, else Slurm's SLURM_CPUS_PER_TASK, else the CPUs this process may run
// on (its affinity mask, which mpirun and srun narrow to the rank's cores).
int default_thread_count();
// Sets oneDNN's (OpenMP's) thread count for work started from this thread.
// A Trainer built afterwards takes it as the most its steps may use.
void set_thread_count(int threads);

// "oneDNN 2.6.3 (git hash ...)": the library loaded at run time.
std::string onednn_version();

}  // namespace memsweep
