#pragma once
// What a fresh trial process takes beyond the buffers the estimate counts
// (docs/estimate.md, "The trial process"): oneDNN's generated kernels and
// the library code they fault in, OpenMP's team, first-use pages. It does
// not grow with the batch; it depends on the machine (the CPU's kernels)
// and, a little, on the shape: a network with convolutions pays their
// kernels, each layer and each prepared batch size a few of its own.
//
//   cost = base + per_layer x (layers - 2) + per_batch_size x (batch sizes - 2)
//          + per_layer_batch_size x (layers - 2) x (batch sizes - 2)
//          + convolutions x [the network has any]
//
// base is a 2-layer MLP with one batch size for training and one for
// evaluation. The coefficients are measured on the machine by
// `memsweep estimate --calibrate` (calibration_trials(): fresh trial
// processes, their footprint less their estimate) and kept in a
// calibration file; built-in ones stand in where there is none.

#include "memsweep/config.hpp"
#include "memsweep/estimate.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace memsweep {

struct TrialProcessCost {
  double base_bytes = 0.0;
  double per_layer_bytes = 0.0;
  double per_batch_size_bytes = 0.0;
  double per_layer_batch_size_bytes = 0.0;  // each layer's primitives for each batch size
  double convolution_bytes = 0.0;
  std::string cpu;     // the CPU model it was measured on (/proc/cpuinfo's "model name")
  int threads = 1;     // the OpenMP threads of the trials measured
  std::string source;  // "built in (...)" or "calibrated on HOST, DATE"
};

// What the cost depends on, from the trainer a trial builds.
struct TrialProcessShape {
  int layers = 0;       // weighted layers: convolutions, hidden and output layers
  int batch_sizes = 0;  // batch sizes prepared: training ones and evaluation ones
  bool convolutions = false;
  bool operator==(const TrialProcessShape&) const = default;
};

TrialProcessShape trial_process_shape(const TrialSpec& trial, ExampleCounts counts);

// The cost of `shape`, never below 0.
std::uint64_t trial_process_bytes(const TrialProcessCost& cost, const TrialProcessShape& shape);

// "4.56 MiB + 120.6 KiB a layer + ... with convolutions; SOURCE": the
// coefficients and where they came from, for /runs.
std::string describe_trial_process_cost(const TrialProcessCost& cost);

// The estimate's part "trial process" (estimate_part::kTrialProcess), its
// note naming the cost's source.
EstimatePart trial_process_part(const TrialProcessCost& cost, const TrialSpec& trial, ExampleCounts counts);

// Measured on a 2-vCPU AMD EPYC (Zen 5) VM, oneDNN 2.6, one thread
// (docs/estimate.md): for a machine that has no calibration file.
TrialProcessCost builtin_trial_process_cost();

// ---- calibration --------------------------------------------------------------

// The trials measured: five small networks on a small synthetic dataset,
// each varying the cost's terms from the first.
std::vector<TrialSpec> calibration_trials();

// One calibration trial measured: its shape and its footprint less its
// estimate (what the trial process took beyond its buffers).
struct CalibrationMeasure {
  TrialProcessShape shape;
  double beyond_estimate_bytes = 0.0;
};

// The coefficients that fit the measures best (least squares; negative
// ones, which noise can give, become 0). Throws std::invalid_argument when
// the measures do not determine all five (calibration_trials() do).
TrialProcessCost fit_trial_process_cost(const std::vector<CalibrationMeasure>& measures);

// ---- the calibration file ---------------------------------------------------------

// $MEMSWEEP_CALIBRATION when set; else $XDG_CACHE_HOME/memsweep/trial-process.toml,
// else ~/.cache/memsweep/trial-process.toml.
std::filesystem::path calibration_file_path();

// Writes `cost` to `path` (its folder made), through a temporary file
// renamed into place. Throws std::runtime_error naming the file.
void write_calibration_file(const std::filesystem::path& path, const TrialProcessCost& cost);

// Reads a calibration file; nullopt when there is none. Throws InputError
// naming the file and the field for a file that is not one.
std::optional<TrialProcessCost> read_calibration_file(const std::filesystem::path& path);

// This machine's CPU model, as calibration files record it ("" if unknown).
std::string this_cpu_model();

// The cost for this machine: the calibration file's when there is one
// measured on this CPU model, else the built-in one (its source says why).
// Throws InputError for a file that is not a calibration file.
TrialProcessCost machine_trial_process_cost();

}  // namespace memsweep
