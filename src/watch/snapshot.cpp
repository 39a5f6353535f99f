#include "watch/snapshot.hpp"

namespace memsweep::watch {

std::optional<double> NodeMemory::used_percent() const {
  if (total <= 0 || available < 0) return std::nullopt;
  return 100.0 * static_cast<double>(total - available) / static_cast<double>(total);
}

}  // namespace memsweep::watch
