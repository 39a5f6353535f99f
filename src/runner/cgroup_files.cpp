#include "runner/cgroup_files.hpp"

#include <algorithm>
#include <charconv>

namespace memsweep::runner::detail {
namespace {

constexpr std::string_view kBlanks = " \t\r\n";

// Calls `each` with every line of `text`, without its newline.
template <typename Each>
void for_each_line(std::string_view text, Each&& each) {
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    each(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// Calls `each` with every word of `text` split at any of `separators`,
// skipping empty words; stops early when `each` returns false.
template <typename Each>
void for_each_word(std::string_view text, std::string_view separators, Each&& each) {
  std::size_t at = 0;
  while ((at = text.find_first_not_of(separators, at)) != std::string_view::npos) {
    const std::size_t end = std::min(text.find_first_of(separators, at), text.size());
    if (!each(text.substr(at, end - at))) return;
    at = end;
  }
}

std::string_view trim(std::string_view text) {
  const std::size_t start = text.find_first_not_of(kBlanks);
  if (start == std::string_view::npos) return {};
  return text.substr(start, text.find_last_not_of(kBlanks) - start + 1);
}

template <typename Number>
std::optional<Number> whole_number(std::string_view text) {
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool is_octal_digit(char c) { return c >= '0' && c <= '7'; }

// mountinfo writes space, tab, newline and backslash in paths as \ooo.
std::string decode_mountinfo_escapes(std::string_view field) {
  std::string decoded;
  decoded.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && is_octal_digit(field[i + 1]) && is_octal_digit(field[i + 2]) &&
        is_octal_digit(field[i + 3])) {
      decoded += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
      i += 3;
    } else {
      decoded += field[i];
    }
  }
  return decoded;
}

bool names_word(std::string_view list, std::string_view separators, std::string_view word) {
  bool found = false;
  for_each_word(list, separators, [&](std::string_view each) {
    found = each == word;
    return !found;
  });
  return found;
}

// "/a/b/" as "/a/b", so that it compares equal; "/" stays.
std::filesystem::path without_trailing_slash(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return std::filesystem::path{path};
}

bool climbs(const std::filesystem::path& path) {
  return std::any_of(path.begin(), path.end(), [](const std::filesystem::path& part) { return part == ".."; });
}

}  // namespace

ProcCgroupPaths parse_proc_cgroup(std::string_view text) {
  ProcCgroupPaths paths;
  for_each_line(text, [&](std::string_view line) {
    // "hierarchy-id:controllers:path"; the path may itself hold colons.
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) return;
    const std::string_view id = line.substr(0, first);
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string path{line.substr(second + 1)};
    if (path.empty() || path.front() != '/') return;
    if (id == "0" && controllers.empty()) {
      if (!paths.unified) paths.unified = path;
    } else if (names_word(controllers, ",", kMemoryController)) {
      if (!paths.memory_v1) paths.memory_v1 = path;
    }
  });
  return paths;
}

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
  // "id parent major:minor root mount-point options [optional fields…] - fstype source super-options"
  constexpr std::size_t kRootField = 3;
  constexpr std::size_t kMountPointField = 4;
  constexpr std::size_t kFieldsBeforeOptional = 6;
  std::vector<CgroupMount> mounts;
  for_each_line(mountinfo, [&](std::string_view line) {
    std::vector<std::string_view> fields;
    for_each_word(line, " ", [&](std::string_view word) {
      fields.push_back(word);
      return true;
    });
    const auto separator = std::find(fields.begin(), fields.end(), "-");
    if (separator == fields.end() || separator - fields.begin() < static_cast<long>(kFieldsBeforeOptional) ||
        fields.end() - separator < 4)
      return;
    const std::string_view fstype = separator[1];
    const std::string_view super_options = separator[3];
    CgroupMount mount;
    if (fstype == "cgroup2") {
      mount.version = CgroupVersion::v2;
    } else if (fstype == "cgroup" && names_word(super_options, ",", kMemoryController)) {
      mount.version = CgroupVersion::v1;
    } else {
      return;
    }
    mount.root = decode_mountinfo_escapes(fields[kRootField]);
    mount.mount_point = decode_mountinfo_escapes(fields[kMountPointField]);
    mounts.push_back(std::move(mount));
  });
  return mounts;
}

std::optional<std::filesystem::path> group_dir(const CgroupMount& mount, std::string_view own_path) {
  const std::filesystem::path own = without_trailing_slash(own_path);
  const std::filesystem::path root = without_trailing_slash(mount.root);
  if (!own.is_absolute() || !root.is_absolute() || climbs(own) || climbs(root)) return std::nullopt;
  const std::filesystem::path relative = own.lexically_relative(root);
  if (relative.empty() || climbs(relative)) return std::nullopt;
  if (relative == ".") return mount.mount_point;
  return mount.mount_point / relative;
}

std::optional<std::uint64_t> find_keyed_count(std::string_view text, std::string_view key) {
  std::optional<std::uint64_t> value;
  for_each_line(text, [&](std::string_view line) {
    if (value || !line.starts_with(key) || line.size() == key.size() || line[key.size()] != ' ') return;
    value = whole_number<std::uint64_t>(trim(line.substr(key.size())));
  });
  return value;
}

std::optional<std::uint64_t> parse_single_count(std::string_view text) {
  return whole_number<std::uint64_t>(trim(text));
}

bool lists_controller(std::string_view list, std::string_view controller) {
  return names_word(list, kBlanks, controller);
}

std::optional<std::vector<pid_t>> parse_pid_list(std::string_view text) {
  std::vector<pid_t> pids;
  bool malformed = false;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    if (line.empty()) return;
    const auto pid = whole_number<pid_t>(line);
    if (pid && *pid > 0)
      pids.push_back(*pid);
    else
      malformed = true;
  });
  if (malformed) return std::nullopt;
  return pids;
}

Cgroup2Step plan_cgroup2(std::string_view subtree_control, const std::vector<pid_t>& procs, pid_t self) {
  if (lists_controller(subtree_control, kMemoryController)) return Cgroup2Step::use_own_group;
  const bool holds_self = std::find(procs.begin(), procs.end(), self) != procs.end();
  const auto others =
      static_cast<std::size_t>(std::count_if(procs.begin(), procs.end(), [&](pid_t pid) { return pid != self; }));
  if (others > 0) return Cgroup2Step::other_processes;
  return holds_self ? Cgroup2Step::move_to_leaf_and_enable : Cgroup2Step::enable_memory;
}

std::optional<pid_t> memsweep_group_owner(std::string_view name) {
  constexpr std::string_view kPrefix = "memsweep-";
  constexpr std::string_view kProbe = "probe-";
  constexpr std::string_view kTrial = "-trial-";
  const auto positive = [](std::optional<pid_t> pid) { return pid && *pid > 0 ? pid : std::nullopt; };
  if (!name.starts_with(kPrefix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  if (name.starts_with(kProbe)) return positive(whole_number<pid_t>(name.substr(kProbe.size())));
  const std::size_t trial = name.find(kTrial);
  if (trial == std::string_view::npos) return std::nullopt;
  // What follows "-trial-": the trial's number, maybe "-<k>"; digits only.
  const std::string_view number = name.substr(trial + kTrial.size());
  const std::size_t dash = number.find('-');
  if (!whole_number<std::uint64_t>(number.substr(0, dash)) ||
      (dash != std::string_view::npos && !whole_number<std::uint64_t>(number.substr(dash + 1))))
    return std::nullopt;
  return positive(whole_number<pid_t>(name.substr(0, trial)));
}

}  // namespace memsweep::runner::detail
