// run_sweep picks this rank's role; check_same_sweep compares the ranks'
// sweep hashes. The roles are in run_alone.cpp, coordinator.cpp, worker.cpp.

#include "memsweep/error.hpp"
#include "memsweep/sweep.hpp"
#include "sweep/roles.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace memsweep {
namespace {

// Enough ranks named for the user to see the pattern, without a
// thousand-rank message.
constexpr std::size_t kMaxRanksNamed = 8;

std::string message_of(const std::exception_ptr& cause) {
  try {
    std::rethrow_exception(cause);
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "an unknown error";
  }
}

}  // namespace

SinkFailure::SinkFailure(std::exception_ptr cause) : std::runtime_error(message_of(cause)), cause_(std::move(cause)) {}

SweepResult run_sweep(Communicator& comm, const SweepTrials& trials, const PendingTrials& pending, TrialRunner* runner,
                      ResultSink* sink, const SweepOptions& options) {
  const bool alone = comm.size() == 1;
  const bool writes = comm.rank() == 0;
  const bool trains = alone || comm.rank() != 0;
  if (writes && sink == nullptr) throw std::invalid_argument("run_sweep: rank 0 needs a result sink");
  if (trains && runner == nullptr) throw std::invalid_argument("run_sweep: a rank that trains needs a trial runner");
  if (alone) return sweep::detail::run_alone(comm, trials, pending, *runner, *sink, options);
  if (writes) return sweep::detail::run_coordinator(comm, trials, pending, *sink, options);
  return sweep::detail::run_worker(comm, trials, *runner, options);
}

void check_same_sweep(Communicator& comm, const std::string& sweep_hash) {
  const std::vector<std::string> hashes = comm.all_gather(sweep_hash);
  std::vector<std::string> differing;
  std::size_t count = 0;
  for (std::size_t rank = 1; rank < hashes.size(); ++rank) {
    if (hashes[rank] == hashes[0]) continue;
    if (++count <= kMaxRanksNamed) differing.push_back(fmt::format("rank {} has {}", rank, hashes[rank]));
  }
  if (count == 0) return;
  if (count > kMaxRanksNamed) differing.push_back(fmt::format("and {} more", count - kMaxRanksNamed));
  throw InputError(fmt::format(
      "the ranks do not agree on the sweep: rank 0 has sweep hash {}, but {} (every rank must read the same sweep "
      "file with the same memsweep build)",
      hashes[0], fmt::join(differing, ", ")));
}

}  // namespace memsweep
