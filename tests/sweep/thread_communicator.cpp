#include "sweep/thread_communicator.hpp"

#include <algorithm>
#include <optional>
#include <thread>

namespace memsweep::testing {

RankAborted::RankAborted(int aborting_rank, int exit_status)
    : std::runtime_error("rank " + std::to_string(aborting_rank) + " aborted the job with status " +
                         std::to_string(exit_status)),
      rank(aborting_rank),
      status(exit_status) {}

struct ThreadGroup::State {
  explicit State(int ranks) : inboxes(static_cast<std::size_t>(ranks)), left(static_cast<std::size_t>(ranks)) {}

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::deque<Message>> inboxes;  // by receiver, in arrival order
  std::vector<bool> left;                    // by rank: its body has ended
  std::optional<RankAborted> aborted;
  // The collective in progress: each rank's value, how many have arrived,
  // and a generation that changes when the last one arrives.
  std::vector<std::string> values;
  std::vector<std::string> gathered;
  int arrived = 0;
  std::uint64_t generation = 0;

  int size() const { return static_cast<int>(inboxes.size()); }
  void throw_if_aborted() const {
    if (aborted) throw *aborted;
  }
};

namespace {

using State = ThreadGroup::State;

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<State> state, int rank) : state_(std::move(state)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return state_->size(); }

  void send(int destination, int tag, std::span<const std::byte> bytes) override {
    if (destination < 0 || destination >= size() || destination == rank_)
      throw std::logic_error("thread communicator: rank " + std::to_string(rank_) + " cannot send to rank " +
                             std::to_string(destination));
    const std::lock_guard lock(state_->mutex);
    state_->throw_if_aborted();
    state_->inboxes[static_cast<std::size_t>(destination)].push_back(
        Message{.source = rank_, .tag = tag, .bytes = {bytes.begin(), bytes.end()}});
    state_->changed.notify_all();
  }

  std::optional<Message> receive(int source, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->mutex);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::deque<Message>& inbox = state_->inboxes[static_cast<std::size_t>(rank_)];
    for (;;) {
      state_->throw_if_aborted();
      const auto found = std::find_if(inbox.begin(), inbox.end(),
                                      [&](const Message& m) { return source == kAnySource || m.source == source; });
      if (found != inbox.end()) {
        Message message = std::move(*found);
        inbox.erase(found);
        return message;
      }
      if (const std::optional<int> gone = departed(source)) throw RankLeft(left_text(*gone));
      if (state_->changed.wait_until(lock, deadline) == std::cv_status::timeout) {
        state_->throw_if_aborted();
        return std::nullopt;
      }
    }
  }

  std::vector<std::string> all_gather(const std::string& value) override {
    std::unique_lock lock(state_->mutex);
    state_->throw_if_aborted();
    if (state_->values.empty()) state_->values.resize(static_cast<std::size_t>(size()));
    state_->values[static_cast<std::size_t>(rank_)] = value;
    const std::uint64_t generation = state_->generation;
    if (++state_->arrived == size()) {
      state_->gathered = std::move(state_->values);
      state_->values.clear();
      state_->arrived = 0;
      ++state_->generation;
      state_->changed.notify_all();
    } else {
      state_->changed.wait(lock, [&] { return state_->generation != generation || state_->aborted; });
      if (state_->generation == generation) state_->throw_if_aborted();
    }
    return state_->gathered;
  }

  void broadcast(std::string& value) override { value = all_gather(value)[0]; }

  std::string host_name() const override { return "thread-host"; }
  std::string library_version() const override { return "none (threads)"; }

  [[noreturn]] void abort(int status) override {
    {
      const std::lock_guard lock(state_->mutex);
      if (!state_->aborted) state_->aborted.emplace(rank_, status);
      state_->changed.notify_all();
    }
    throw RankAborted(rank_, status);
  }

 private:
  // The rank this receive waits for in vain: the source, once it has left;
  // with kAnySource, any other rank that has left, as an MPI job ends when
  // one of its processes does (messages already queued come first).
  std::optional<int> departed(int source) const {
    for (int r = 0; r < size(); ++r)
      if (r != rank_ && (source == kAnySource || source == r) && state_->left[static_cast<std::size_t>(r)]) return r;
    return std::nullopt;
  }

  std::string left_text(int gone) const {
    return "thread communicator: rank " + std::to_string(rank_) + " waits for rank " + std::to_string(gone) +
           ", which has left";
  }

  std::shared_ptr<State> state_;
  int rank_;
};

}  // namespace

ThreadGroup::ThreadGroup(int size) : state_(std::make_shared<State>(size)) {}
ThreadGroup::~ThreadGroup() = default;

int ThreadGroup::size() const { return state_->size(); }

std::vector<std::exception_ptr> ThreadGroup::run(const std::vector<std::function<void(Communicator&)>>& bodies) {
  if (static_cast<int>(bodies.size()) != size()) throw std::invalid_argument("ThreadGroup::run: one body per rank");
  std::vector<std::exception_ptr> errors(bodies.size());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size(); ++rank) {
    threads.emplace_back([this, &bodies, &errors, rank] {
      ThreadCommunicator comm(state_, rank);
      try {
        bodies[static_cast<std::size_t>(rank)](comm);
      } catch (...) {
        errors[static_cast<std::size_t>(rank)] = std::current_exception();
      }
      const std::lock_guard lock(state_->mutex);
      state_->left[static_cast<std::size_t>(rank)] = true;
      state_->changed.notify_all();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

std::vector<std::exception_ptr> ThreadGroup::run_on_every_rank(const std::function<void(Communicator&)>& body) {
  return run(std::vector<std::function<void(Communicator&)>>(static_cast<std::size_t>(size()), body));
}

std::string message_of(const std::exception_ptr& error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& thrown) {
    return thrown.what();
  }
  return "";
}

}  // namespace memsweep::testing
