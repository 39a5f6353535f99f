// Trial cgroups: the parsers on strings, detect() and create() on fake
// trees of files for both cgroup versions, and this machine's real memory
// controller (as root): a limit that OOM-kills, the peak, the counters.

#include "runner/cgroup_files.hpp"
#include "runner/fake_cgroup_tree.hpp"
#include "runner/trial_cgroup.hpp"
#include "support/skip_or_fail.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace memsweep::runner::detail {
namespace {

namespace fs = std::filesystem;
using memsweep::testing::fake_v2;
using memsweep::testing::FakeTree;
using memsweep::testing::kV2Mountinfo;
using memsweep::testing::self_pid;
using memsweep::testing::TempDir;

constexpr std::uint64_t kMiB = 1024 * 1024;

std::string file_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- /proc/self/cgroup ----

TEST(ParseProcCgroup, HybridLayoutHasBothPaths) {
  const auto paths =
      parse_proc_cgroup("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/cfeac9c9\n3:cpuset:/\n1:cpu:/\n0::/\n");
  EXPECT_EQ(paths.unified, "/");
  EXPECT_EQ(paths.memory_v1, "/process_api/cfeac9c9");
}

TEST(ParseProcCgroup, CgroupV2OnlyHasTheUnifiedPath) {
  const auto paths = parse_proc_cgroup("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n");
  EXPECT_EQ(paths.unified, "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0");
  EXPECT_FALSE(paths.memory_v1);
}

TEST(ParseProcCgroup, CgroupV1MemoryMaySharesALineWithOtherControllers) {
  const auto paths = parse_proc_cgroup("11:pids:/slurm/uid_1/job_2\n5:cpuacct,memory,cpu:/slurm/uid_1/job_2/step_0\n");
  EXPECT_FALSE(paths.unified);
  EXPECT_EQ(paths.memory_v1, "/slurm/uid_1/job_2/step_0");
}

TEST(ParseProcCgroup, OnlyTheWholeWordMemoryNamesTheController) {
  const auto paths = parse_proc_cgroup("2:name=memory:/a\n3:memory_x:/b\n4:net_cls,net_prio:/c\n");
  EXPECT_FALSE(paths.memory_v1);
  EXPECT_FALSE(paths.unified);
}

TEST(ParseProcCgroup, PathsKeepTheirColonsAndBadLinesAreSkipped) {
  const auto paths = parse_proc_cgroup("garbage\n7:memory\n0::/a:b/c\n6:memory:relative\n");
  EXPECT_EQ(paths.unified, "/a:b/c");
  EXPECT_FALSE(paths.memory_v1);
}

// ---- /proc/self/mountinfo ----

TEST(ParseCgroupMounts, KeepsCgroup2AndTheV1MemoryHierarchyOnly) {
  const auto mounts = parse_cgroup_mounts(
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 master:2 - cgroup2 cgroup2 rw,nsdelegate\n");
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].version, CgroupVersion::v1);
  EXPECT_EQ(mounts[0].root, "/");
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ(mounts[1].version, CgroupVersion::v2);
  EXPECT_EQ(mounts[1].mount_point, "/sys/fs/cgroup/unified");
}

TEST(ParseCgroupMounts, ReadsTheRootOfAMountInsideAContainer) {
  const auto mounts = parse_cgroup_mounts(
      "1210 1203 0:30 /docker/4f1c /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,cpuset,memory\n"
      "1211 1203 0:26 /.. /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n");
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].root, "/docker/4f1c");
  EXPECT_EQ(mounts[1].root, "/..");
}

TEST(ParseCgroupMounts, DecodesEscapesAndSkipsShortLines) {
  const auto mounts = parse_cgroup_mounts(
      "50 1 0:40 /my\\040jobs /mnt/cg\\040two rw - cgroup2 none rw\n"
      "51 1 0:41 / /mnt/short - cgroup2\n"
      "52 1 0:42 / - cgroup2 none rw\n");
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].root, "/my jobs");
  EXPECT_EQ(mounts[0].mount_point, "/mnt/cg two");
}

struct GroupDirCase {
  std::string root;
  std::string own_path;
  std::optional<std::string> expected;
};

void PrintTo(const GroupDirCase& c, std::ostream* out) { *out << "root " << c.root << ", group " << c.own_path; }

class GroupDir : public ::testing::TestWithParam<GroupDirCase> {};

TEST_P(GroupDir, JoinsTheMountPointAndThePathBelowTheRoot) {
  const CgroupMount mount{CgroupVersion::v2, GetParam().root, "/sys/fs/cgroup"};
  const auto dir = group_dir(mount, GetParam().own_path);
  if (GetParam().expected)
    EXPECT_EQ(dir, fs::path(*GetParam().expected));
  else
    EXPECT_FALSE(dir) << *dir;
}

INSTANTIATE_TEST_SUITE_P(Cases, GroupDir,
                         ::testing::Values(GroupDirCase{"/", "/", "/sys/fs/cgroup"},
                                           GroupDirCase{"/", "/user.slice/job_1", "/sys/fs/cgroup/user.slice/job_1"},
                                           GroupDirCase{"/docker/4f1c", "/docker/4f1c", "/sys/fs/cgroup"},
                                           GroupDirCase{"/docker/4f1c", "/docker/4f1c/rank", "/sys/fs/cgroup/rank"},
                                           GroupDirCase{"/docker/4f1c/", "/docker/4f1c/rank/", "/sys/fs/cgroup/rank"},
                                           GroupDirCase{"/docker/4f1c", "/docker/4f1cd", std::nullopt},
                                           GroupDirCase{"/docker/4f1c", "/other", std::nullopt},
                                           GroupDirCase{"/..", "/", std::nullopt},
                                           GroupDirCase{"/", "/../sibling", std::nullopt},
                                           GroupDirCase{"/", "relative", std::nullopt}));

// ---- the memory controller's files ----

TEST(FindKeyedCount, ReadsMemoryEvents) {
  constexpr std::string_view events = "low 0\nhigh 0\nmax 1843\noom 2\noom_kill 2\noom_group_kill 0\n";
  EXPECT_EQ(find_keyed_count(events, "oom_kill"), 2u);
  EXPECT_EQ(find_keyed_count(events, "max"), 1843u);
  EXPECT_EQ(find_keyed_count(events, "oom_group_kill"), 0u);
}

TEST(FindKeyedCount, OomKillIsNotOomKillDisable) {
  constexpr std::string_view oom_control = "oom_kill_disable 1\nunder_oom 0\noom_kill 5\n";
  EXPECT_EQ(find_keyed_count(oom_control, "oom_kill"), 5u);
  EXPECT_EQ(find_keyed_count("oom_kill_disable 0\nunder_oom 0\n", "oom_kill"), std::nullopt);
}

TEST(FindKeyedCount, MissingOrMalformedValuesAreEmpty) {
  EXPECT_EQ(find_keyed_count("oom_kill\n", "oom_kill"), std::nullopt);
  EXPECT_EQ(find_keyed_count("oom_kill many\n", "oom_kill"), std::nullopt);
  EXPECT_EQ(find_keyed_count("oom_kill -1\n", "oom_kill"), std::nullopt);
  EXPECT_EQ(find_keyed_count("", "oom_kill"), std::nullopt);
}

TEST(ParseVmstatOomKills, FindsTheLineAmongTheOthers) {
  EXPECT_EQ(parse_vmstat_oom_kills("pgfault 123456\npgmajfault 12\noom_kill 7\nnuma_hit 9\n"), 7u);
  EXPECT_EQ(parse_vmstat_oom_kills("pgfault 123456\n"), std::nullopt);  // kernels before 4.13
}

TEST(ParseSingleCount, ReadsANumberButNotMax) {
  EXPECT_EQ(parse_single_count("67108864\n"), 67108864u);
  EXPECT_EQ(parse_single_count("0"), 0u);
  EXPECT_EQ(parse_single_count("max\n"), std::nullopt);
  EXPECT_EQ(parse_single_count("12 13\n"), std::nullopt);
  EXPECT_EQ(parse_single_count(""), std::nullopt);
}

TEST(ListsController, MatchesWholeNames) {
  EXPECT_TRUE(lists_controller("cpuset cpu io memory hugetlb pids\n", "memory"));
  EXPECT_FALSE(lists_controller("hugetlb\n", "memory"));
  EXPECT_FALSE(lists_controller("memory_x cpu", "memory"));
  EXPECT_FALSE(lists_controller("", "memory"));
}

TEST(ParsePidList, OnePidALine) {
  EXPECT_EQ(parse_pid_list("12\n3456\n"), (std::vector<pid_t>{12, 3456}));
  EXPECT_EQ(parse_pid_list(""), std::vector<pid_t>{});
  EXPECT_EQ(parse_pid_list("12\nabc\n"), std::nullopt);
  EXPECT_EQ(parse_pid_list("0\n"), std::nullopt);
}

struct PlanCase {
  std::string subtree_control;
  std::vector<pid_t> procs;
  Cgroup2Step expected;
};

void PrintTo(const PlanCase& c, std::ostream* out) {
  *out << "subtree_control \"" << c.subtree_control << "\", " << c.procs.size() << " processes";
}

class PlanCgroup2 : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanCgroup2, FollowsTheNoInternalProcessRule) {
  constexpr pid_t self = 100;
  EXPECT_EQ(plan_cgroup2(GetParam().subtree_control, GetParam().procs, self), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Cases, PlanCgroup2,
                         ::testing::Values(PlanCase{"cpu memory\n", {}, Cgroup2Step::use_own_group},
                                           PlanCase{"memory", {100, 7}, Cgroup2Step::use_own_group},
                                           PlanCase{"", {}, Cgroup2Step::enable_memory},
                                           PlanCase{"pids\n", {100}, Cgroup2Step::move_to_leaf_and_enable},
                                           PlanCase{"", {100, 7}, Cgroup2Step::other_processes},
                                           PlanCase{"", {7}, Cgroup2Step::other_processes}));

// ---- detect() and create() on fake trees ----

TEST(DetectFake, CgroupV2WithMemoryEnabledUsesTheOwnGroup) {
  const FakeTree tree = fake_v2("memory pids\n", "1\n" + self_pid() + "\n");
  const TrialCgroups cgroups = tree.detect();
  EXPECT_EQ(cgroups.isolation(), Isolation::cgroup2) << cgroups.problem();
  EXPECT_EQ(cgroups.problem(), "");
  EXPECT_EQ(cgroups.parent(), tree.own_dir);
  EXPECT_EQ(cgroups.own_oom_kills(), 3u);
  EXPECT_FALSE(fs::exists(tree.own_dir / ("memsweep-probe-" + self_pid()))) << "the probe group is removed";
}

TEST(DetectFake, CgroupV2WithOnlyThisProcessMovesItToALeaf) {
  const FakeTree tree = fake_v2("", self_pid() + "\n");
  const fs::path leaf = tree.own_dir / ("memsweep-rank-" + self_pid());
  std::optional<TrialCgroups> copy;
  {
    const TrialCgroups cgroups = tree.detect();
    EXPECT_EQ(cgroups.isolation(), Isolation::cgroup2) << cgroups.problem();
    EXPECT_EQ(cgroups.parent(), tree.own_dir) << "trial groups are the leaf's siblings";
    EXPECT_EQ(file_text(leaf / "cgroup.procs"), self_pid());
    EXPECT_EQ(file_text(tree.own_dir / "cgroup.subtree_control"), "+memory");
    copy = cgroups;
  }
  EXPECT_EQ(file_text(tree.own_dir / "cgroup.subtree_control"), "+memory") << "a copy keeps the leaf";
  copy.reset();
  // The last copy undid the move: memory off, the process back.
  EXPECT_EQ(file_text(tree.own_dir / "cgroup.subtree_control"), "-memory");
  EXPECT_EQ(file_text(tree.own_dir / "cgroup.procs"), self_pid());
}

TEST(DetectFake, CgroupV2LeafMoveThatFailsMovesBackAndFallsBack) {
  const FakeTree tree = fake_v2("", self_pid() + "\n");
  // A subtree_control the kernel reads but refuses to write: /proc/version
  // stands in (no write method there).
  fs::remove(tree.own_dir / "cgroup.subtree_control");
  fs::create_symlink("/proc/version", tree.own_dir / "cgroup.subtree_control");
  const TrialCgroups cgroups = tree.detect();
  EXPECT_EQ(cgroups.isolation(), Isolation::proc);
  EXPECT_NE(cgroups.problem().find("cannot write \"+memory\" to"), std::string::npos) << cgroups.problem();
  EXPECT_NE(cgroups.problem().find("cgroup.subtree_control"), std::string::npos) << cgroups.problem();
  EXPECT_EQ(file_text(tree.own_dir / "cgroup.procs"), self_pid()) << "moved back to the own group";
  EXPECT_EQ(cgroups.own_oom_kills(), 3u) << "the own group's counter is still there";
}

TEST(DetectFake, CgroupV2LeafThatCannotBeMadeFallsBack) {
  const FakeTree tree = fake_v2("", self_pid() + "\n");
  tree.write_own("memsweep-rank-" + self_pid(), "a file where the leaf would go");
  const TrialCgroups cgroups = tree.detect();
  EXPECT_EQ(cgroups.isolation(), Isolation::proc);
  EXPECT_NE(cgroups.problem().find("memsweep-rank-" + self_pid() + "/cgroup.procs"), std::string::npos)
      << cgroups.problem();
  EXPECT_EQ(file_text(tree.own_dir / "cgroup.subtree_control"), "") << "memory was not enabled";
}

TEST(DetectFake, CgroupV2WithOtherProcessesFallsBackButCountsOomKills) {
  const FakeTree tree = fake_v2("pids\n", "1\n" + self_pid() + "\n2\n");
  const TrialCgroups cgroups = tree.detect();
  EXPECT_EQ(cgroups.isolation(), Isolation::proc);
  EXPECT_EQ(cgroups.problem(), "the cgroup2 group /job_7/task_0 holds other processes (2 besides this one in " +
                                   (tree.own_dir / "cgroup.procs").string() +
                                   "), so it cannot enable memory for groups under it");
  EXPECT_EQ(cgroups.own_oom_kills(), 3u);
  EXPECT_EQ(cgroups.create("memsweep-1-trial-0", 64 * kMiB), nullptr);
  EXPECT_EQ(file_text(tree.own_dir / "cgroup.subtree_control"), "pids\n") << "nothing was written";
}

TEST(DetectFake, CgroupV1UnderAContainersRootUsesTheMemoryGroup) {
  const FakeTree tree("0::/\n4:memory:/docker/4f1c/rank\n",
                      "35 31 0:32 /docker/4f1c /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                      "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
                      "sys/fs/cgroup/memory/rank");
  fs::create_directories(tree.root() / "sys/fs/cgroup/unified");
  tree.write_own("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  const TrialCgroups cgroups = tree.detect();
  EXPECT_EQ(cgroups.isolation(), Isolation::cgroup1) << cgroups.problem();
  EXPECT_EQ(cgroups.parent(), tree.own_dir);
  EXPECT_EQ(cgroups.own_oom_kills(), 2u);
}

// This machine's layout: cgroup2 mounted without the memory controller.
struct GroupName {
  std::string name;
  std::optional<pid_t> owner;
};

class MemsweepGroupOwner : public ::testing::TestWithParam<GroupName> {};

// Only names memsweep gives its groups name an owner whose death lets a later
// run remove them: anything else in a shared cgroup is never touched.
TEST_P(MemsweepGroupOwner, IsTheRankPidOfMemsweepsOwnNamesOnly) {
  EXPECT_EQ(memsweep_group_owner(GetParam().name), GetParam().owner) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(
    Names, MemsweepGroupOwner,
    ::testing::Values(GroupName{"memsweep-4242-trial-3", 4242}, GroupName{"memsweep-4242-trial-3-2", 4242},
                      GroupName{"memsweep-probe-17", 17}, GroupName{"memsweep-rank-17", {}},
                      GroupName{"memsweep-4242-trial-", {}}, GroupName{"memsweep-4242-trial-x", {}},
                      GroupName{"memsweep-4242-trial-3-", {}}, GroupName{"memsweep--4-trial-3", {}},
                      GroupName{"memsweep-0-trial-3", {}}, GroupName{"user-4242-trial-3", {}},
                      GroupName{"memsweep-probe-", {}}, GroupName{"memsweep-99999999999999-trial-1", {}}));

TEST(DetectFake, HybridWithoutV2MemoryUsesV1) {
  const FakeTree tree("4:memory:/process_api/abc\n0::/\n",
                      "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                      "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
                      "sys/fs/cgroup/memory/process_api/abc");
  tree.write(tree.root() / "sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
  const TrialCgroups cgroups = tree.detect();
  EXPECT_EQ(cgroups.isolation(), Isolation::cgroup1) << cgroups.problem();
  EXPECT_EQ(cgroups.parent(), tree.own_dir);
}

TEST(DetectFake, NoMemoryControllerAnywhereSaysWhy) {
  const FakeTree tree("0::/\n", kV2Mountinfo, "sys/fs/cgroup");
  tree.write_own("cgroup.controllers", "cpu pids\n");
  const TrialCgroups cgroups = tree.detect();
  EXPECT_EQ(cgroups.isolation(), Isolation::proc);
  EXPECT_NE(cgroups.problem().find("the cgroup2 group / has no memory controller"), std::string::npos)
      << cgroups.problem();
  EXPECT_NE(cgroups.problem().find("has no cgroup v1 memory line"), std::string::npos) << cgroups.problem();
  EXPECT_EQ(cgroups.problem().find('\n'), std::string::npos) << "one line";
  EXPECT_EQ(cgroups.own_oom_kills(), std::nullopt);
}

TEST(DetectFake, AMissingFileIsNamed) {
  const TempDir dir;
  const TrialCgroups cgroups = TrialCgroups::detect(dir.path() / "no-cgroup", dir.path() / "no-mountinfo", dir.path());
  EXPECT_EQ(cgroups.isolation(), Isolation::proc);
  EXPECT_EQ(cgroups.problem(), "cannot read " + (dir.path() / "no-cgroup").string() + ": No such file or directory");
}

TEST(CreateFake, WritesTheV2LimitAndReadsTheV2Report) {
  const FakeTree tree = fake_v2("memory\n", "");
  const TrialCgroups cgroups = tree.detect();
  ASSERT_EQ(cgroups.isolation(), Isolation::cgroup2) << cgroups.problem();
  const auto group = cgroups.create("memsweep-1-trial-0", 64 * kMiB);
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->path(), tree.own_dir / "memsweep-1-trial-0");
  EXPECT_EQ(group->procs_file(), (tree.own_dir / "memsweep-1-trial-0/cgroup.procs").string());
  EXPECT_EQ(file_text(group->path() / "memory.max"), "67108864");
  EXPECT_EQ(file_text(group->path() / "memory.oom.group"), "1");

  EXPECT_EQ(group->report().peak_bytes, -1) << "no memory.peak before Linux 5.19";
  tree.write(group->path() / "memory.peak", "67100000\n");
  tree.write(group->path() / "memory.events", "low 0\nhigh 0\nmax 812\noom 1\noom_kill 1\noom_group_kill 1\n");
  const CgroupReport report = group->report();
  EXPECT_EQ(report.peak_bytes, 67100000);
  EXPECT_EQ(report.oom_kills, 1u);
  EXPECT_EQ(report.limit_hits, 812u);
}

TEST(CreateFake, WritesTheV1LimitAndReadsTheV1Report) {
  const FakeTree tree("4:memory:/rank\n", "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
                      "sys/fs/cgroup/memory/rank");
  const TrialCgroups cgroups = tree.detect();
  ASSERT_EQ(cgroups.isolation(), Isolation::cgroup1) << cgroups.problem();
  const auto group = cgroups.create("memsweep-1-trial-0", std::nullopt);
  ASSERT_NE(group, nullptr);
  EXPECT_FALSE(fs::exists(group->path() / "memory.limit_in_bytes")) << "no limit asked for, none written";
  const auto limited = cgroups.create("memsweep-1-trial-1", 3 * kMiB);
  EXPECT_EQ(file_text(limited->path() / "memory.limit_in_bytes"), "3145728");

  const auto write_in_group = [&](std::string_view name, std::string_view text) {
    tree.write(group->path() / name, text);
  };
  write_in_group("memory.max_usage_in_bytes", "4096000\n");
  write_in_group("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
  write_in_group("memory.failcnt", "77\n");
  const CgroupReport report = group->report();
  EXPECT_EQ(report.peak_bytes, 4096000);
  EXPECT_EQ(report.oom_kills, 4u);
  EXPECT_EQ(report.limit_hits, 77u);
}

TEST(CreateFake, AStaleGroupIsReusedWhenEmptyElseAnotherNameIsTaken) {
  const FakeTree tree = fake_v2("memory\n", "");
  const TrialCgroups cgroups = tree.detect();
  ASSERT_EQ(cgroups.isolation(), Isolation::cgroup2) << cgroups.problem();
  fs::create_directories(tree.own_dir / "memsweep-9-trial-0");  // empty: a crashed run's
  tree.write_own("memsweep-9-trial-1/cgroup.procs", "4242\n");  // not empty: still busy
  const auto reused = cgroups.create("memsweep-9-trial-0", std::nullopt);
  EXPECT_EQ(reused->path(), tree.own_dir / "memsweep-9-trial-0");
  const auto renamed = cgroups.create("memsweep-9-trial-1", std::nullopt);
  EXPECT_EQ(renamed->path(), tree.own_dir / "memsweep-9-trial-1-2");
}

TEST(CreateFake, AGroupThatCannotBeMadeThrowsNamingIt) {
  const FakeTree tree = fake_v2("memory\n", "");
  const TrialCgroups cgroups = tree.detect();
  ASSERT_EQ(cgroups.isolation(), Isolation::cgroup2) << cgroups.problem();
  try {
    cgroups.create("no/such/folder", std::nullopt);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot create the cgroup " + (tree.own_dir / "no/such/folder").string() + ": No such file or directory");
  }
}

TEST(CreateFake, AddWritesThePidToTheGroupsProcs) {
  const FakeTree tree = fake_v2("memory\n", "");
  const auto group = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  ASSERT_NE(group, nullptr);
  group->add(4242);
  EXPECT_EQ(file_text(group->path() / "cgroup.procs"), "4242");
}

TEST(CreateFake, AddThatIsRefusedThrowsNamingTheFile) {
  const FakeTree tree = fake_v2("memory\n", "");
  const auto group = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  fs::create_directories(group->path() / "cgroup.procs");  // a write to it fails (EISDIR)
  try {
    group->add(4242);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "cannot write \"4242\" to " + group->procs_file() + ": Is a directory");
  }
}

// A group of a process tree can hold more pids than one read gives (the
// runner once read a fixed 64 KiB): every line is a member.
TEST(CreateFake, MembersReadsTheWholeProcsFileHoweverLong) {
  const FakeTree tree = fake_v2("memory\n", "");
  const auto group = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  constexpr pid_t kFirst = 1000000;
  constexpr int kPids = 20000;  // 8 bytes a line: 160 000 bytes
  std::string procs;
  for (int i = 0; i < kPids; ++i) procs += std::to_string(kFirst + i) + "\n";
  ASSERT_GT(procs.size(), 65536u);
  tree.write(group->path() / "cgroup.procs", procs);
  const std::vector<pid_t> members = group->members();
  ASSERT_EQ(members.size(), static_cast<std::size_t>(kPids));
  EXPECT_EQ(members.front(), kFirst);
  EXPECT_EQ(members.back(), kFirst + kPids - 1);
  EXPECT_EQ(cgroup_members(group->path()), members);
}

TEST(CreateFake, MembersThatCannotBeReadThrowNamingTheFile) {
  const FakeTree tree = fake_v2("memory\n", "");
  const auto group = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  fs::create_directories(group->path() / "cgroup.procs");  // opens, but a read fails (EISDIR)
  try {
    group->kill_members();
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "cannot read " + group->procs_file() + ": Is a directory");
  }
}

TEST(CreateFake, MembersThatAreNotPidsThrow) {
  const FakeTree tree = fake_v2("memory\n", "");
  const auto group = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  tree.write(group->path() / "cgroup.procs", "12\nnot a pid\n");
  EXPECT_THROW(group->members(), std::runtime_error);
}

// kill_members() on a real process: a child of this test, listed in a fake
// group's procs, is killed by SIGKILL.
TEST(CreateFake, KillMembersKillsEveryListedProcess) {
  const FakeTree tree = fake_v2("memory\n", "");
  const auto group = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  const pid_t child = ::fork();
  if (child == 0) {
    for (;;) ::pause();
  }
  ASSERT_GT(child, 0);
  tree.write(group->path() / "cgroup.procs", std::to_string(child) + "\n");
  group->kill_members();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "wait status " << status;
}

// ---- this machine's memory controller ----

// Binds `var` to this machine's TrialCgroups, or ends the test
// (MEMSWEEP_SKIP_OR_FAIL_IN_CI).
#define REAL_CGROUPS_OR_SKIP(var)                                                               \
  const TrialCgroups var = TrialCgroups::detect();                                              \
  if (var.isolation() == Isolation::proc)                                                       \
    MEMSWEEP_SKIP_OR_FAIL_IN_CI("no memory cgroup can be made on this node: " + var.problem()); \
  std::cout << "[ cgroups  ] " << isolation_name(var.isolation()) << " under " << var.parent() << std::endl

constexpr int kChildCouldNotJoin = 90;
constexpr int kChildCouldNotMap = 91;

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Forks a child that joins a group by writing "0" to `procs_file` (as the
// runner's child does before it execs), then touches `bytes` of fresh
// memory and exits 0. Returns its wait status.
int run_child_touching(const std::string& procs_file, std::uint64_t bytes) {
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(procs_file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(kChildCouldNotJoin);
    ::close(fd);
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) ::_exit(kChildCouldNotMap);
    auto* touched = static_cast<volatile char*>(memory);
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    for (std::uint64_t at = 0; at < bytes; at += page) touched[at] = 1;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::optional<std::uint64_t> node_oom_kills() { return parse_vmstat_oom_kills(file_text("/proc/vmstat")); }

std::string trial_name(int n) { return "memsweep-" + self_pid() + "-trial-" + std::to_string(n); }

TEST(RealCgroup, ATrialOverItsLimitIsOomKilledAndTheGroupSaysSo) {
  REAL_CGROUPS_OR_SKIP(cgroups);
  constexpr std::uint64_t limit = 64 * kMiB;
  const auto node_kills_before = node_oom_kills();

  auto start = std::chrono::steady_clock::now();
  auto group = cgroups.create(trial_name(0), limit);
  const double create_ms = milliseconds_since(start);
  ASSERT_NE(group, nullptr);
  EXPECT_TRUE(fs::is_directory(group->path()));

  start = std::chrono::steady_clock::now();
  const int status = run_child_touching(group->procs_file(), 256 * kMiB);
  const double child_ms = milliseconds_since(start);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describe(status);

  const CgroupReport report = group->report();
  EXPECT_GE(report.oom_kills, 1u);
  EXPECT_GT(report.limit_hits, 0u);
  EXPECT_GE(report.peak_bytes, static_cast<std::int64_t>(limit * 9 / 10));
  EXPECT_LE(report.peak_bytes, static_cast<std::int64_t>(limit + kMiB));
  if (node_kills_before) {
    EXPECT_GT(node_oom_kills().value_or(0), *node_kills_before) << "/proc/vmstat oom_kill";
  }

  const fs::path path = group->path();
  start = std::chrono::steady_clock::now();
  group.reset();
  const double remove_ms = milliseconds_since(start);
  EXPECT_FALSE(fs::exists(path)) << "the group is removed with its TrialCgroup";
  std::cout << "[ figures  ] limit " << limit << " B, peak " << report.peak_bytes << " B, oom_kills "
            << report.oom_kills << ", limit_hits " << report.limit_hits << "; create " << create_ms
            << " ms, child until killed " << child_ms << " ms, remove " << remove_ms << " ms" << std::endl;
}

TEST(RealCgroup, ATrialUnderItsLimitExitsNormally) {
  REAL_CGROUPS_OR_SKIP(cgroups);
  constexpr std::uint64_t touched = 20 * kMiB;
  auto group = cgroups.create(trial_name(1), 64 * kMiB);
  ASSERT_NE(group, nullptr);
  const int status = run_child_touching(group->procs_file(), touched);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status);

  const CgroupReport report = group->report();
  EXPECT_EQ(report.oom_kills, 0u);
  EXPECT_EQ(report.limit_hits, 0u);
  EXPECT_GE(report.peak_bytes, static_cast<std::int64_t>(touched));
  EXPECT_LT(report.peak_bytes, static_cast<std::int64_t>(64 * kMiB));

  const fs::path path = group->path();
  const auto start = std::chrono::steady_clock::now();
  group.reset();
  const double remove_ms = milliseconds_since(start);
  EXPECT_FALSE(fs::exists(path));
  std::cout << "[ figures  ] touched " << touched << " B, peak " << report.peak_bytes << " B, remove " << remove_ms
            << " ms" << std::endl;
}

// The rank's own group counts an OOM kill of a process in it (cgroup v1)
// or below it (v2): the test makes a group with a limit, and detect() is
// told (by a fake /proc/self/cgroup) that it is the rank's.
TEST(RealCgroup, TheOwnGroupCountsAnOomKillInIt) {
  REAL_CGROUPS_OR_SKIP(cgroups);
  const auto rank_group = cgroups.create("memsweep-" + self_pid() + "-rank", 64 * kMiB);
  ASSERT_NE(rank_group, nullptr);

  // The rank group's path in its hierarchy, through the mount it lies under.
  const CgroupVersion version = cgroups.isolation() == Isolation::cgroup2 ? CgroupVersion::v2 : CgroupVersion::v1;
  std::optional<std::string> hierarchy_path;
  for (const CgroupMount& mount : parse_cgroup_mounts(file_text("/proc/self/mountinfo"))) {
    const fs::path below = rank_group->path().lexically_relative(mount.mount_point);
    if (mount.version == version && !below.empty() && *below.begin() != "..")
      hierarchy_path = (fs::path(mount.root) / below).lexically_normal().string();
  }
  ASSERT_TRUE(hierarchy_path) << "no mount holds " << rank_group->path();
  const TempDir dir;
  const fs::path fake_cgroup = dir.write(
      "cgroup", version == CgroupVersion::v2 ? "0::" + *hierarchy_path + "\n" : "4:memory:" + *hierarchy_path + "\n");
  const TrialCgroups as_rank = TrialCgroups::detect(fake_cgroup, "/proc/self/mountinfo", "/");
  ASSERT_EQ(as_rank.isolation(), cgroups.isolation()) << as_rank.problem();
  ASSERT_EQ(as_rank.parent(), rank_group->path());
  ASSERT_EQ(as_rank.own_oom_kills(), 0u);

  // v1 counts a kill only in the victim's own group; v2 in every group above it too.
  const auto victim_group = version == CgroupVersion::v2 ? as_rank.create("victim", std::nullopt) : nullptr;
  const std::string procs_file =
      victim_group ? victim_group->procs_file() : (rank_group->path() / "cgroup.procs").string();
  const int status = run_child_touching(procs_file, 256 * kMiB);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describe(status);
  EXPECT_GE(as_rank.own_oom_kills().value_or(0), 1u);
}

}  // namespace
}  // namespace memsweep::runner::detail
