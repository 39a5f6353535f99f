#include "store/lock_holder.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>

namespace memsweep::store {
namespace {

std::optional<pid_t> parse_pid(const char* name) {
  if (name[0] == '\0' || !std::isdigit(static_cast<unsigned char>(name[0]))) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(name, &end, 10);
  if (*end != '\0' || value <= 0) return std::nullopt;
  return static_cast<pid_t>(value);
}

// fdinfo lists one "lock:" line per lock on the file, e.g.
// "lock:\t1: OFDLCK ADVISORY  WRITE -1 fe:00:5391506 1099511627776 1099511627776".
bool fdinfo_shows_write_lock(const std::string& fdinfo_path) {
  std::ifstream fdinfo(fdinfo_path);
  std::string line;
  while (std::getline(fdinfo, line))
    if (line.rfind("lock:", 0) == 0 && line.find(" WRITE ") != std::string::npos) return true;
  return false;
}

bool holds_write_lock(const std::string& process_dir, dev_t device, ino_t inode) {
  const std::string fd_dir = process_dir + "/fd";
  DIR* fds = ::opendir(fd_dir.c_str());
  if (fds == nullptr) return false;  // gone, or another user's
  bool found = false;
  while (!found) {
    const dirent* entry = ::readdir(fds);
    if (entry == nullptr) break;
    if (!parse_pid(entry->d_name)) continue;  // "." and ".."
    struct stat target {};
    // stat() follows the fd's link to the open file itself, even when unlinked.
    if (::stat((fd_dir + "/" + entry->d_name).c_str(), &target) != 0) continue;
    if (target.st_dev != device || target.st_ino != inode) continue;
    found = fdinfo_shows_write_lock(process_dir + "/fdinfo/" + entry->d_name);
  }
  ::closedir(fds);
  return found;
}

}  // namespace

std::optional<pid_t> process_holding_write_lock(dev_t device, ino_t inode) {
  DIR* processes = ::opendir("/proc");
  if (processes == nullptr) return std::nullopt;
  const pid_t self = ::getpid();
  std::optional<pid_t> holder;
  while (const dirent* entry = ::readdir(processes)) {
    const std::optional<pid_t> pid = parse_pid(entry->d_name);
    if (!pid || *pid == self || (holder && *pid > *holder)) continue;
    if (holds_write_lock(std::string("/proc/") + entry->d_name, device, inode)) holder = pid;
  }
  ::closedir(processes);
  return holder;
}

}  // namespace memsweep::store
