#pragma once
// A trial's optimizer and its settings: pure description shared by the
// sweep file (config.hpp), the trainer and the memory estimate, so that the
// trainer needs nothing of the sweep file.

#include <string_view>

namespace memsweep {

enum class OptimizerKind { sgd, momentum, adam };

std::string_view optimizer_name(OptimizerKind kind);

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::sgd;
  double momentum = 0.9;  // used by `momentum`
  double beta1 = 0.9;     // used by `adam`
  double beta2 = 0.999;   // used by `adam`
  double epsilon = 1e-8;  // used by `adam`
};

}  // namespace memsweep
