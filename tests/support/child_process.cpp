#include "support/child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace memsweep::testing {
namespace {

void write_byte(int fd, char byte) {
  if (::write(fd, &byte, 1) != 1) throw std::runtime_error("cannot write to the pipe");
}

char read_byte(int fd) {
  char byte = 0;
  if (::read(fd, &byte, 1) != 1) throw std::runtime_error("the other process closed the pipe");
  return byte;
}

}  // namespace

void ChildProcess::Channel::send(char byte) const { write_byte(write_fd_, byte); }
char ChildProcess::Channel::receive() const { return read_byte(read_fd_); }

ChildProcess::ChildProcess(std::function<void(const Channel&)> body) {
  int down[2];
  int up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::close(down[1]);
    ::close(up[0]);
    Channel channel;
    channel.read_fd_ = down[0];
    channel.write_fd_ = up[1];
    int status = 0;
    try {
      body(channel);
    } catch (const std::exception& error) {
      const std::string text = std::string("child: ") + error.what() + "\n";
      (void)!::write(STDERR_FILENO, text.data(), text.size());
      status = 2;
    }
    ::_exit(status);
  }
  ::close(down[0]);
  ::close(up[1]);
  to_child_ = down[1];
  from_child_ = up[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) kill_hard();
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
}

void ChildProcess::send(char byte) const { write_byte(to_child_, byte); }

char ChildProcess::receive(std::chrono::seconds timeout) const {
  pollfd ready{from_child_, POLLIN, 0};
  const int polled = ::poll(&ready, 1, static_cast<int>(timeout.count() * 1000));
  if (polled <= 0) throw std::runtime_error("the child process did not answer in time");
  return read_byte(from_child_);
}

void ChildProcess::kill_hard() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

int ChildProcess::wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace memsweep::testing
