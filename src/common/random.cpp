#include "memsweep/random.hpp"

#include <cmath>
#include <numbers>

namespace memsweep {

double Rng::normal() {
  const double u1 = 1.0 - uniform01();  // in (0, 1]: log(u1) is finite
  const double u2 = uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace memsweep
