// The Communicator of a process without MPI: one rank, nobody to talk to.

#include "memsweep/sweep.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace memsweep {
namespace {

class SerialCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  void send(int destination, int /*tag*/, std::span<const std::byte> /*bytes*/) override {
    throw std::logic_error("the serial communicator has no rank " + std::to_string(destination) + " to send to");
  }

  std::optional<Message> receive(int /*source*/, std::chrono::milliseconds /*timeout*/) override {
    throw std::logic_error("the serial communicator has no other rank to receive from");
  }

  std::vector<std::string> all_gather(const std::string& value) override { return {value}; }
  void broadcast(std::string& /*value*/) override {}

  std::string host_name() const override {
    std::array<char, 256> name{};
    if (::gethostname(name.data(), name.size() - 1) != 0) return "unknown";
    return name.data();
  }

  std::string library_version() const override { return "none (serial)"; }

  // No other rank to take along. _Exit, not exit: a trial's thread may
  // still be running, and static destructors would run under it.
  [[noreturn]] void abort(int status) override {
    std::fflush(nullptr);
    std::_Exit(status);
  }
};

}  // namespace

std::unique_ptr<Communicator> make_serial_communicator() { return std::make_unique<SerialCommunicator>(); }

}  // namespace memsweep
