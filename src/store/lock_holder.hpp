#pragma once
// Which process holds a write lock on a file, for the message that refuses
// a second writer. The kernel does not say: F_OFD_GETLK and /proc/locks give
// -1 as the pid of an open-file-description lock. Each process's
// /proc/PID/fdinfo does list the locks of its open files, so the holder is
// found by looking through the open files of every process this one may
// inspect (its own user's; all of them as root). Only on that error path:
// it reads one /proc entry per open file on the machine.

#include <sys/types.h>

#include <optional>

namespace memsweep::store {

// The process, other than this one, with a write lock (memsweep's, or
// HDF5's flock) on the file `device`/`inode`; nullopt when none can be seen.
// With several (a process and a child forked with the file open), the lowest
// pid: the parent, in practice.
std::optional<pid_t> process_holding_write_lock(dev_t device, ino_t inode);

}  // namespace memsweep::store
