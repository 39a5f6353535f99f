#pragma once
// Ranks as threads of the test process: each rank's Communicator sends into
// the receiver's queue, and the collectives meet at a barrier. So the
// scheduler's and the session's exchanges between ranks, their protocol
// errors included, are unit-tested without mpirun, and a test can play one
// side of the protocol by hand.
//
// What MPI does not give memsweep but a test needs: a rank whose body has
// returned has left, and a receive from it (or from any rank, once one has
// left, as an MPI job ends when one of its processes does) throws RankLeft
// when no message is queued, instead of waiting for ever. abort()
// ends every rank's waiting with RankAborted.

#include "memsweep/sweep.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace memsweep::testing {

// Thrown in every rank that waits, once one rank has called abort().
struct RankAborted : std::runtime_error {
  RankAborted(int aborting_rank, int exit_status);
  int rank;
  int status;
};

// Thrown by receive() when the only ranks that could answer have left.
struct RankLeft : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  ~ThreadGroup();
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  int size() const;
  // Runs `bodies[r]` on rank r's thread, every rank at once, and returns
  // when all have ended: each rank's exception, or null.
  std::vector<std::exception_ptr> run(const std::vector<std::function<void(Communicator&)>>& bodies);
  // The same body on every rank.
  std::vector<std::exception_ptr> run_on_every_rank(const std::function<void(Communicator&)>& body);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// The message of `error` (an exception_ptr from ThreadGroup::run), or "" for none.
std::string message_of(const std::exception_ptr& error);

}  // namespace memsweep::testing
