#pragma once
// A forked child that runs a function and talks with the test over two
// pipes, one byte at a time: the writer that gets killed, or that appends
// while the test reads. The child never returns into GoogleTest: it ends
// with _exit (0 when the function returned, 2 when it threw).

#include <sys/types.h>

#include <chrono>
#include <functional>

namespace memsweep::testing {

class ChildProcess {
 public:
  class Channel {
   public:
    void send(char byte) const;
    char receive() const;  // blocks until the parent sends

   private:
    friend class ChildProcess;
    int read_fd_ = -1;
    int write_fd_ = -1;
  };

  explicit ChildProcess(std::function<void(const Channel&)> body);
  ~ChildProcess();  // SIGKILLs a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  void send(char byte) const;
  // Throws std::runtime_error after `timeout`, or when the child ended.
  char receive(std::chrono::seconds timeout = std::chrono::seconds(60)) const;
  void kill_hard();  // SIGKILL and reap: the child gets no chance to clean up
  int wait();        // the exit status; -1 if it did not exit normally

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
};

}  // namespace memsweep::testing
