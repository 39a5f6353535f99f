// The Communicator over MPI. Every MPI call of memsweep is here, each checked:
// a failure becomes an MpiError that says which call failed and why.
//
// Waiting never blocks inside MPI: Open MPI's blocking calls (MPI_Recv,
// MPI_Wait, a rendezvous MPI_Send) poll its progress engine in a loop and
// keep a core at 100%, which rank 0 (waiting for workers most of a sweep)
// and a worker (beside its trial) must not do. So receive() probes with
// MPI_Improbe and sleeps between probes, and send() starts an MPI_Isend and
// tests it the same way: the sleep starts at kFirstPause, so a reply that
// is already there costs nothing, and doubles up to kLongestPause, which
// bounds both the latency a waiting rank adds and its idle wake-ups
// (docs/sweep.md measures rank 0's CPU).

#include "memsweep/mpi_communicator.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace memsweep {
namespace {

// Open MPI keeps some of what MPI_Init allocates until the process ends
// (its components, hwloc's topology, strings it formats), and LeakSanitizer
// would report those at every rank's exit of an ASan build. Allocations
// made on this thread while one of these exists are not reported; memsweep
// allocates nothing of its own inside MPI_Init or MPI_Finalize. Nothing in
// a build without AddressSanitizer. (docs/reliability.md, Sanitizers.)
class OpenMpiAllocationsNotLeaks {
 public:
  OpenMpiAllocationsNotLeaks() {
#if defined(__SANITIZE_ADDRESS__)
    __lsan_disable();
#endif
  }
  ~OpenMpiAllocationsNotLeaks() {
#if defined(__SANITIZE_ADDRESS__)
    __lsan_enable();
#endif
  }
  OpenMpiAllocationsNotLeaks(const OpenMpiAllocationsNotLeaks&) = delete;
  OpenMpiAllocationsNotLeaks& operator=(const OpenMpiAllocationsNotLeaks&) = delete;
};

constexpr std::chrono::microseconds kFirstPause{50};
constexpr std::chrono::microseconds kLongestPause{2000};

class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string error_text(int code) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  if (MPI_Error_string(code, text.data(), &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text.data(), static_cast<std::size_t>(length));
}

// `what` says what was being done: a string, or a function making one (for
// calls made many times a second, whose message is only needed on failure).
template <typename What>
std::string text_of(const What& what) {
  if constexpr (std::is_invocable_v<What>) {
    return what();
  } else {
    return what;
  }
}

template <typename What>
void check(int code, const char* call, const What& what) {
  if (code != MPI_SUCCESS)
    throw MpiError(std::string(call) + " failed while " + text_of(what) + ": " + error_text(code));
}

// Sleeps between polls, doubling the pause up to kLongestPause.
class Backoff {
 public:
  void pause() {
    std::this_thread::sleep_for(pause_);
    pause_ = std::min(pause_ * 2, kLongestPause);
  }

 private:
  std::chrono::microseconds pause_ = kFirstPause;
};

template <typename What>
int checked_count(std::size_t size, const What& what) {
  if (size <= static_cast<std::size_t>(std::numeric_limits<int>::max())) return static_cast<int>(size);
  throw MpiError(text_of(what) + ": " + std::to_string(size) + " bytes is more than one MPI message can hold");
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) {
    check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup", "creating memsweep's communicator");
    // Errors come back as codes (and so as exceptions) instead of aborting
    // the job from inside MPI with a message that does not say what failed.
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "setting error handling");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", "asking this process's rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", "asking the number of ranks");
  }

  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void send(int destination, int tag, std::span<const std::byte> bytes) override {
    const auto what = [&] {
      return "sending a message (tag " + std::to_string(tag) + ", " + std::to_string(bytes.size()) +
             " bytes) to rank " + std::to_string(destination);
    };
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(bytes.data(), checked_count(bytes.size(), what), MPI_BYTE, destination, tag, comm_, &request),
          "MPI_Isend", what);
    Backoff backoff;
    for (;;) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", what);
      if (done) return;
      backoff.pause();
    }
  }

  std::optional<Message> receive(int source, std::chrono::milliseconds timeout) override {
    const int mpi_source = source == kAnySource ? MPI_ANY_SOURCE : source;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Backoff backoff;
    for (;;) {
      // A matched probe: the message it found is the one received, even if
      // another probe ran in between (there is none: FUNNELED, one thread).
      int found = 0;
      MPI_Message handle = MPI_MESSAGE_NULL;
      MPI_Status status;
      check(MPI_Improbe(mpi_source, MPI_ANY_TAG, comm_, &found, &handle, &status), "MPI_Improbe",
            [&] { return "waiting for a message from " + describe(source); });
      if (found) return take(handle, status);
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      backoff.pause();
    }
  }

  std::vector<std::string> all_gather(const std::string& value) override {
    const std::string what = "gathering a value from every rank";
    const int length = checked_count(value.size(), what);
    std::vector<int> lengths(static_cast<std::size_t>(size_));
    check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_), "MPI_Allgather", what);
    std::vector<int> offsets(lengths.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = checked_count(total, what);
      total += static_cast<std::size_t>(lengths[r]);
    }
    std::string all(total, '\0');
    check(MPI_Allgatherv(value.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm_),
          "MPI_Allgatherv", what);
    std::vector<std::string> values;
    values.reserve(lengths.size());
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      values.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    }
    return values;
  }

  void broadcast(std::string& value) override {
    const std::string what = "broadcasting a value from rank 0";
    int length = rank_ == 0 ? checked_count(value.size(), what) : 0;
    check(MPI_Bcast(&length, 1, MPI_INT, 0, comm_), "MPI_Bcast", what);
    value.resize(static_cast<std::size_t>(length));
    check(MPI_Bcast(value.data(), length, MPI_CHAR, 0, comm_), "MPI_Bcast", what);
  }

  std::string host_name() const override {
    std::array<char, MPI_MAX_PROCESSOR_NAME> name{};
    int length = 0;
    check(MPI_Get_processor_name(name.data(), &length), "MPI_Get_processor_name", "asking the host name");
    return std::string(name.data(), static_cast<std::size_t>(length));
  }

  std::string library_version() const override {
    std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
    int length = 0;
    check(MPI_Get_library_version(text.data(), &length), "MPI_Get_library_version", "asking the MPI version");
    std::string version(text.data(), static_cast<std::size_t>(length));
    // Open MPI's text goes on for several lines (repository, release date).
    version = version.substr(0, version.find('\n'));
    while (!version.empty() && (version.back() == '\0' || version.back() == ' ')) version.pop_back();
    return version;
  }

  // MPI_Abort on memsweep's communicator (a duplicate of the job's) ends
  // every process of the job; mpirun then exits with `status`.
  [[noreturn]] void abort(int status) override {
    std::fflush(nullptr);
    MPI_Abort(comm_, status);
    std::_Exit(status);  // MPI_Abort does not return; this keeps [[noreturn]] true if it did
  }

 private:
  static std::string describe(int source) {
    return source == kAnySource ? std::string("any rank") : "rank " + std::to_string(source);
  }

  Message take(MPI_Message& handle, MPI_Status& status) {
    const std::string what = "receiving a message from rank " + std::to_string(status.MPI_SOURCE);
    int count = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count", what);
    Message message;
    message.source = status.MPI_SOURCE;
    message.tag = status.MPI_TAG;
    message.bytes.resize(static_cast<std::size_t>(count));
    check(MPI_Mrecv(message.bytes.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE), "MPI_Mrecv", what);
    return message;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized", "starting MPI");
  if (initialized) return;
  // Open MPI's shared-memory transport copies large messages straight out of
  // the sender's memory (CMA, process_vm_readv); when the sender dies mid-
  // message (a rank killed as the OOM killer would) the read fails and Open
  // MPI ends this rank too, before rank 0 can record why its trials were
  // lost. memsweep's messages are tens of KiB: copying them through the
  // shared buffers costs nothing measurable. A user's own setting wins.
  ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  int provided = 0;
  {
    const OpenMpiAllocationsNotLeaks open_mpi;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", "starting MPI");
  }
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw MpiError(
        "MPI_Init_thread: this MPI library does not support MPI_THREAD_FUNNELED (memsweep runs trials on threads "
        "beside the one that calls MPI)");
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  const OpenMpiAllocationsNotLeaks open_mpi;
  if (!finalized) MPI_Finalize();
}

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm) { return std::make_unique<MpiCommunicator>(comm); }

}  // namespace memsweep
