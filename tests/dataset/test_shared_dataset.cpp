// Shared datasets: one decoded copy per node, found, created, checked and
// removed by several processes at once. The processes are forked children
// of the test; the shared folder is a temporary folder, never /dev/shm.

#include "memsweep/shared_dataset.hpp"

#include "dataset/shared_dataset_file.hpp"
#include "support/child_process.hpp"
#include "support/dataset_files.hpp"
#include "support/real_datasets.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using dataset::detail::SharedFileHeader;
using testing::ChildProcess;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using testing::TempDir;

// ---- helpers ----------------------------------------------------------------

SharedDatasetRequest synthetic_request(int train_size = 300, int test_size = 60, std::uint64_t seed = 3) {
  SharedDatasetRequest request;
  request.spec.kind = DatasetKind::synthetic;
  request.spec.synthetic.shape = ImageShape{1, 12, 12};
  request.spec.synthetic.classes = 4;
  request.spec.synthetic.train_size = train_size;
  request.spec.synthetic.test_size = test_size;
  request.spec.synthetic.seed = seed;
  return request;
}

// What the copy must hold: the loader's dataset cut to the request's limits.
struct Expected {
  Dataset dataset;
  DatasetView view;
};

Expected expected_for(const SharedDatasetRequest& request) {
  Expected expected{load_dataset(request.spec, request.search_dirs), {}};
  expected.view = view_of(expected.dataset);
  if (request.max_train_examples != 0) expected.view.train = expected.view.train.head(request.max_train_examples);
  if (request.max_test_examples != 0) expected.view.test = expected.view.test.head(request.max_test_examples);
  return expected;
}

void expect_same_split(const SplitView& actual, const SplitView& expected, std::string_view split) {
  SCOPED_TRACE(split);
  EXPECT_TRUE(actual.shape == expected.shape);
  EXPECT_EQ(actual.classes, expected.classes);
  ASSERT_EQ(actual.size(), expected.size());
  // std::ranges::equal, not EXPECT_EQ on the spans: a failure must not print millions of values.
  EXPECT_TRUE(std::ranges::equal(actual.images, expected.images)) << "the images differ";
  EXPECT_TRUE(std::ranges::equal(actual.labels, expected.labels)) << "the labels differ";
}

void expect_same_data(const DatasetView& actual, const DatasetView& expected) {
  EXPECT_EQ(actual.name, expected.name);
  EXPECT_TRUE(actual.spec == expected.spec);
  expect_same_split(actual.train, expected.train, "train");
  expect_same_split(actual.test, expected.test, "test");
}

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

ino_t inode_of(int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw std::runtime_error("fstat failed");
  return status.st_ino;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void send_u64(const ChildProcess::Channel& channel, std::uint64_t value) {
  for (int byte = 0; byte < 8; ++byte) channel.send(static_cast<char>((value >> (8 * byte)) & 0xFFU));
}

std::uint64_t receive_u64(const ChildProcess& child) {
  std::uint64_t value = 0;
  for (int byte = 0; byte < 8; ++byte)
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(child.receive())) << (8 * byte);
  return value;
}

// The Rss and Pss of the mapping of this process that holds `address`
// (/proc/self/smaps), in bytes.
struct MappingMemory {
  bool found = false;
  std::uint64_t rss = 0;
  std::uint64_t pss = 0;
};

MappingMemory mapping_memory(const void* address) {
  constexpr std::uint64_t kKiB = 1024;
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  MappingMemory memory;
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    // A mapping's first line: "start-end perms offset dev inode path"; the
    // lines that follow are "Field:   value kB".
    const std::string first = line.substr(0, line.find(' '));
    if (first.find(':') == std::string::npos && first.find('-') != std::string::npos) {
      std::istringstream range(first);
      std::uintptr_t start = 0;
      std::uintptr_t end = 0;
      char dash = 0;
      range >> std::hex >> start >> dash >> end;
      inside = start <= target && target < end;
      memory.found = memory.found || inside;
      continue;
    }
    if (!inside) continue;
    std::istringstream field(line);
    std::string name;
    std::uint64_t kib = 0;
    field >> name >> kib;
    if (name == "Rss:") memory.rss = kib * kKiB;
    if (name == "Pss:") memory.pss = kib * kKiB;
  }
  return memory;
}

class EnvironmentVariable {
 public:
  explicit EnvironmentVariable(const char* name) : name_(name) {
    if (const char* value = std::getenv(name)) saved_ = value;
  }
  ~EnvironmentVariable() {
    if (saved_)
      ::setenv(name_, saved_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  EnvironmentVariable(const EnvironmentVariable&) = delete;
  EnvironmentVariable& operator=(const EnvironmentVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

// ---- the folder -----------------------------------------------------------

TEST(SharedDatasetDir, IsMemsweepShmWhenSetAndNotEmptyElseDevShm) {
  const EnvironmentVariable restore("MEMSWEEP_SHM");
  ::setenv("MEMSWEEP_SHM", "/scratch/node-local", 1);
  EXPECT_EQ(shared_dataset_dir_from_environment(), fs::path("/scratch/node-local"));
  ::setenv("MEMSWEEP_SHM", "", 1);
  EXPECT_EQ(shared_dataset_dir_from_environment(), fs::path("/dev/shm"));
  ::unsetenv("MEMSWEEP_SHM");
  EXPECT_EQ(shared_dataset_dir_from_environment(), fs::path("/dev/shm"));
}

TEST(SharedDatasetDir, AMissingFolderOrAFileIsAnErrorNamingItAndTheVariable) {
  const TempDir dir;
  const fs::path missing = dir.path() / "no-such-folder";
  const fs::path file = dir.write("a-file", "x");
  for (const fs::path& folder : {missing, file}) {
    SCOPED_TRACE(folder.string());
    const std::string message =
        testing::thrown_message<SharedDatasetError>([&] { SharedDataset::open(synthetic_request(), folder); });
    EXPECT_THAT(message, HasSubstr(folder.string()));
    EXPECT_THAT(message, HasSubstr("MEMSWEEP_SHM"));
    EXPECT_THAT(message, HasSubstr(folder == missing ? "No such file or directory" : "Not a directory"));
  }
  EXPECT_EQ(files_in(dir.path()), std::set<std::string>{"a-file"});
}

// ---- the key ----------------------------------------------------------------

TEST(SharedDatasetKey, IsSixteenHexDigitsAndStable) {
  const std::string key = shared_dataset_key(synthetic_request());
  EXPECT_THAT(key, MatchesRegex("[0-9a-f]{16}"));
  EXPECT_EQ(shared_dataset_key(synthetic_request()), key);
}

struct KeyChange {
  std::string name;
  std::function<void(SharedDatasetRequest&)> change;
};

void PrintTo(const KeyChange& change, std::ostream* out) { *out << change.name; }

class SharedDatasetKeyChange : public ::testing::TestWithParam<KeyChange> {};

TEST_P(SharedDatasetKeyChange, GivesAnotherKey) {
  SharedDatasetRequest changed = synthetic_request();
  GetParam().change(changed);
  EXPECT_NE(shared_dataset_key(changed), shared_dataset_key(synthetic_request()));
}

INSTANTIATE_TEST_SUITE_P(EveryPartOfTheRequest, SharedDatasetKeyChange,
                         ::testing::Values(KeyChange{"channels", [](auto& r) { r.spec.synthetic.shape.channels = 3; }},
                                           KeyChange{"height", [](auto& r) { r.spec.synthetic.shape.height = 13; }},
                                           KeyChange{"width", [](auto& r) { r.spec.synthetic.shape.width = 13; }},
                                           KeyChange{"classes", [](auto& r) { r.spec.synthetic.classes = 5; }},
                                           KeyChange{"train_size", [](auto& r) { r.spec.synthetic.train_size = 301; }},
                                           KeyChange{"test_size", [](auto& r) { r.spec.synthetic.test_size = 61; }},
                                           KeyChange{"noise", [](auto& r) { r.spec.synthetic.noise = 0.5000001; }},
                                           KeyChange{"seed", [](auto& r) { r.spec.synthetic.seed = 4; }},
                                           KeyChange{"max_train", [](auto& r) { r.max_train_examples = 100; }},
                                           KeyChange{"max_test", [](auto& r) { r.max_test_examples = 10; }}),
                         [](const auto& test_case) { return test_case.param.name; });

// Small IDX files under root/mnist/, as the loader reads them.
void write_small_mnist(const TempDir& root, std::uint32_t train_count = 6, std::uint32_t test_count = 4) {
  const auto labels = [](std::uint32_t count) {
    std::vector<std::uint8_t> values;
    for (std::uint32_t i = 0; i < count; ++i) values.push_back(static_cast<std::uint8_t>(i % 10));
    return values;
  };
  root.write("mnist/train-images-idx3-ubyte", testing::idx_images(train_count, 28, 28));
  root.write("mnist/train-labels-idx1-ubyte", testing::idx_labels(labels(train_count)));
  root.write("mnist/t10k-images-idx3-ubyte.gz", testing::gzip(testing::idx_images(test_count, 28, 28)));
  root.write("mnist/t10k-labels-idx1-ubyte", testing::idx_labels(labels(test_count)));
}

TEST(SharedDatasetKey, ChangesWhenASourceFileIsTouchedOrReplaced) {
  const TempDir data;
  write_small_mnist(data);
  const SharedDatasetRequest request{{DatasetKind::mnist, {}}, {data.path()}, 0, 0};
  const std::string original = shared_dataset_key(request);
  EXPECT_EQ(shared_dataset_key(request), original);

  const fs::path labels = data.path() / "mnist/t10k-labels-idx1-ubyte";
  fs::last_write_time(labels, fs::last_write_time(labels) + std::chrono::seconds(1));
  const std::string touched = shared_dataset_key(request);
  EXPECT_NE(touched, original);

  // Same bytes and time, another inode: a file replaced by a copy of itself.
  const auto time = fs::last_write_time(labels);
  fs::copy_file(labels, data.path() / "copy");
  fs::rename(data.path() / "copy", labels);
  fs::last_write_time(labels, time);
  EXPECT_NE(shared_dataset_key(request), touched);
}

TEST(SharedDatasetKey, MissingFilesAreTheLoadersError) {
  const TempDir data;
  const SharedDatasetRequest request{{DatasetKind::fashion_mnist, {}}, {data.path()}, 0, 0};
  const std::string message = testing::thrown_message<DatasetNotFoundError>([&] { shared_dataset_key(request); });
  EXPECT_THAT(message, HasSubstr("fashion-mnist not found"));
  EXPECT_THAT(message, HasSubstr(data.path().string()));
}

// ---- creating and finding ---------------------------------------------------

TEST(SharedDataset, IsCreatedOnceThenFoundWithTheLoadersData) {
  const TempDir shm;
  SharedDatasetRequest request = synthetic_request();
  request.max_train_examples = 250;  // the test split (60) stays whole
  const Expected expected = expected_for(request);

  const SharedDataset first = SharedDataset::open(request, shm.path());
  EXPECT_TRUE(first.decoded_here());
  EXPECT_THAT(first.replaced(), IsEmpty());
  const std::string key = shared_dataset_key(request);
  EXPECT_EQ(first.path(), shm.path() / ("memsweep-synthetic-" + key + ".dataset"));
  EXPECT_EQ(files_in(shm.path()),
            (std::set<std::string>{"memsweep-synthetic-" + key + ".dataset", "memsweep-synthetic-" + key + ".lock"}));
  EXPECT_EQ(first.name(), "synthetic");
  EXPECT_TRUE(first.spec() == request.spec);
  EXPECT_EQ(first.train_examples(), 250U);
  EXPECT_EQ(first.test_examples(), 60U);
  EXPECT_EQ(first.file_bytes(), fs::file_size(first.path()));
  EXPECT_GT(first.open_seconds(), 0.0);

  const SharedDataset second = SharedDataset::open(request, shm.path());
  EXPECT_FALSE(second.decoded_here());
  EXPECT_EQ(second.path(), first.path());
  EXPECT_EQ(inode_of(second.fd()), inode_of(first.fd()));
  EXPECT_NE(second.fd(), first.fd());

  const MappedDataset mapped(second.fd());
  EXPECT_EQ(mapped.mapped_bytes(), first.file_bytes());
  expect_same_data(mapped.view(), expected.view);
}

TEST(SharedDataset, ArraysArePageAlignedInTheMapping) {
  const TempDir shm;
  const SharedDataset shared = SharedDataset::open(synthetic_request(), shm.path());
  const MappedDataset mapped(shared.fd());
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const DatasetView& view = mapped.view();
  for (const void* array :
       {static_cast<const void*>(view.train.images.data()), static_cast<const void*>(view.train.labels.data()),
        static_cast<const void*>(view.test.images.data()), static_cast<const void*>(view.test.labels.data())})
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(array) % page, 0U);
}

TEST(SharedDataset, TheDescriptorIsReadOnlyAndClosedOnExec) {
  const TempDir shm;
  const SharedDataset shared = SharedDataset::open(synthetic_request(), shm.path());
  EXPECT_EQ(::fcntl(shared.fd(), F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_NE(::fcntl(shared.fd(), F_GETFD) & FD_CLOEXEC, 0);
  // Nobody writes a copy once it has its name.
  EXPECT_EQ(fs::status(shared.path()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
}

TEST(SharedDataset, OtherLimitsOrATouchedSourceFileGiveAnotherCopy) {
  const TempDir shm;
  const TempDir data;
  write_small_mnist(data);
  SharedDatasetRequest request{{DatasetKind::mnist, {}}, {data.path()}, 0, 0};
  const SharedDataset all = SharedDataset::open(request, shm.path());
  EXPECT_TRUE(all.decoded_here());
  EXPECT_EQ(all.train_examples(), 6U);

  request.max_train_examples = 2;
  const SharedDataset limited = SharedDataset::open(request, shm.path());
  EXPECT_TRUE(limited.decoded_here());
  EXPECT_NE(limited.path(), all.path());
  EXPECT_EQ(limited.train_examples(), 2U);
  expect_same_data(MappedDataset(limited.fd()).view(), expected_for(request).view);

  // The same files rewritten with more images, their sizes and times changed.
  request.max_train_examples = 0;
  write_small_mnist(data, 8, 4);
  const SharedDataset rewritten = SharedDataset::open(request, shm.path());
  EXPECT_TRUE(rewritten.decoded_here());
  EXPECT_NE(rewritten.path(), all.path());
  EXPECT_EQ(rewritten.train_examples(), 8U);
  expect_same_data(MappedDataset(rewritten.fd()).view(), expected_for(request).view);
}

TEST(SharedDataset, RealMnistMatchesTheLoaderWithinTheLimits) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "mnist");
  const TempDir shm;
  const SharedDatasetRequest request{{DatasetKind::mnist, {}}, {root}, 1000, 0};
  const Expected expected = expected_for(request);
  const SharedDataset shared = SharedDataset::open(request, shm.path());
  EXPECT_TRUE(shared.decoded_here());
  EXPECT_EQ(shared.train_examples(), 1000U);
  EXPECT_EQ(shared.test_examples(), 10000U);
  const MappedDataset mapped(shared.fd());
  EXPECT_EQ(mapped.view().name, "mnist");
  EXPECT_TRUE(mapped.view().train.shape == (ImageShape{1, 28, 28}));
  expect_same_data(mapped.view(), expected.view);
}

// ---- several processes ------------------------------------------------------

// Large enough (about 20 MB, a few hundred milliseconds to generate) that
// two processes started together overlap while decoding.
SharedDatasetRequest slow_request() {
  SharedDatasetRequest request = synthetic_request(6000, 1000, 11);
  request.spec.synthetic.shape = ImageShape{1, 28, 28};
  return request;
}

TEST(SharedDataset, ProcessesOpeningTogetherDecodeOnceAndShareOneFile) {
  const TempDir shm;
  const auto open_and_report = [&](const ChildProcess::Channel& channel) {
    channel.receive();  // go
    const SharedDataset shared = SharedDataset::open(slow_request(), shm.path());
    channel.send(shared.decoded_here() ? 'd' : 'f');
    send_u64(channel, inode_of(shared.fd()));
    channel.receive();  // hold the copy until the test has both answers
  };
  ChildProcess first(open_and_report);
  ChildProcess second(open_and_report);
  first.send('g');
  second.send('g');
  const char first_decoded = first.receive();
  const std::uint64_t first_inode = receive_u64(first);
  const char second_decoded = second.receive();
  const std::uint64_t second_inode = receive_u64(second);
  EXPECT_EQ((first_decoded == 'd') + (second_decoded == 'd'), 1) << first_decoded << second_decoded;
  EXPECT_EQ(first_inode, second_inode);
  first.send('x');
  second.send('x');
  EXPECT_EQ(first.wait(), 0);
  EXPECT_EQ(second.wait(), 0);
  EXPECT_THAT(files_in(shm.path()), IsEmpty()) << "the last holder removes the copy and the lock file";
}

TEST(SharedDataset, TwoProcessesMappingACopyShareItsPages) {
  const TempDir shm;
  const SharedDataset shared = SharedDataset::open(synthetic_request(3000, 300), shm.path());
  MappedDataset mapped(shared.fd());
  const void* images = mapped.view().train.images.data();
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t pages_bytes = (mapped.mapped_bytes() + page - 1) / page * page;

  const MappingMemory alone = mapping_memory(images);
  ASSERT_TRUE(alone.found);
  EXPECT_EQ(alone.rss, pages_bytes) << "every page is resident once mapped";
  EXPECT_EQ(alone.pss, alone.rss) << "no other process maps the copy yet";

  ChildProcess child([&](const ChildProcess::Channel& channel) {
    // Replaces the mapping inherited from the test by one of the child's own.
    mapped = MappedDataset(shared.fd());
    channel.send('m');
    channel.receive();
  });
  ASSERT_EQ(child.receive(), 'm');
  const MappingMemory shared_with_child = mapping_memory(images);
  EXPECT_EQ(shared_with_child.rss, pages_bytes);
  // Each page counts half in each process: one copy in memory, not two.
  EXPECT_NEAR(static_cast<double>(shared_with_child.pss), static_cast<double>(shared_with_child.rss) / 2.0,
              static_cast<double>(shared_with_child.rss) * 0.02);
  child.send('x');
  EXPECT_EQ(child.wait(), 0);
}

// ---- removal ----------------------------------------------------------------

TEST(SharedDataset, OnlyTheLastHolderRemovesTheCopyAndTheLockFile) {
  const TempDir shm;
  std::optional<SharedDataset> first = SharedDataset::open(synthetic_request(), shm.path());
  std::optional<SharedDataset> second = SharedDataset::open(synthetic_request(), shm.path());
  const fs::path path = first->path();
  const std::size_t files = files_in(shm.path()).size();
  EXPECT_EQ(files, 2U);
  first.reset();
  EXPECT_TRUE(fs::exists(path)) << "the second holder still uses it";
  EXPECT_EQ(files_in(shm.path()).size(), files);
  second.reset();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_THAT(files_in(shm.path()), IsEmpty());
}

TEST(SharedDataset, AHolderInAnotherProcessKeepsTheCopyUntilItLetsGo) {
  const TempDir shm;
  std::optional<SharedDataset> here = SharedDataset::open(synthetic_request(), shm.path());
  const fs::path path = here->path();
  ChildProcess child([&](const ChildProcess::Channel& channel) {
    // The test's descriptor, inherited: a trial process's would close on exec.
    ::close(here->fd());
    const SharedDataset there = SharedDataset::open(synthetic_request(), shm.path());
    channel.send(there.decoded_here() ? 'd' : 'f');
    channel.receive();
  });
  EXPECT_EQ(child.receive(), 'f');
  here.reset();
  EXPECT_TRUE(fs::exists(path));
  child.send('x');
  EXPECT_EQ(child.wait(), 0);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_THAT(files_in(shm.path()), IsEmpty());
}

TEST(SharedDataset, AMovedFromHolderReleasesNothing) {
  const TempDir shm;
  SharedDataset original = SharedDataset::open(synthetic_request(), shm.path());
  {
    const SharedDataset moved = std::move(original);
    EXPECT_TRUE(fs::exists(moved.path()));
  }
  EXPECT_THAT(files_in(shm.path()), IsEmpty());
}

// ---- crashes and damage -----------------------------------------------------

TEST(SharedDataset, AProcessKilledWhileDecodingLeavesNothingUnderTheName) {
  const TempDir reference;
  const SharedDatasetRequest request = slow_request();
  const Expected expected = expected_for(request);
  // How long a whole open takes here, so that the kills land throughout it:
  // while decoding, while writing, and after (a complete copy left behind).
  double open_seconds = 0.0;
  fs::path file_name;
  {
    const SharedDataset timed = SharedDataset::open(request, reference.path());
    open_seconds = timed.open_seconds();
    file_name = timed.path().filename();
  }
  for (const double fraction : {0.0, 0.3, 0.6, 0.85, 0.95, 1.05, 1.5}) {
    SCOPED_TRACE(fraction);
    const TempDir shm;
    ChildProcess child([&](const ChildProcess::Channel& channel) {
      channel.send('s');
      const SharedDataset shared = SharedDataset::open(request, shm.path());
      channel.receive();
    });
    ASSERT_EQ(child.receive(), 's');
    std::this_thread::sleep_for(std::chrono::duration<double>(fraction * open_seconds));
    child.kill_hard();

    const std::set<std::string> left = files_in(shm.path());
    const bool complete_copy_left = left.contains(file_name.string());
    if (fraction == 0.0) {
      EXPECT_FALSE(complete_copy_left) << "killed before it could have decoded";
    }
    for (const std::string& name : left)
      EXPECT_TRUE(name == file_name.string() || name.ends_with(".lock")) << "left behind: " << name;

    const SharedDataset next = SharedDataset::open(request, shm.path());
    EXPECT_EQ(next.decoded_here(), !complete_copy_left) << "a complete copy left behind is reused";
    EXPECT_THAT(next.replaced(), IsEmpty());
    expect_same_data(MappedDataset(next.fd()).view(), expected.view);
  }
}

struct Damage {
  std::string name;
  std::function<void(std::string& bytes)> apply;
  std::string reason;  // in SharedDataset::replaced()
};

void PrintTo(const Damage& damage, std::ostream* out) { *out << damage.name; }

template <typename Field>
void set_field(std::string& bytes, std::size_t offset, Field value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(value));
}

class SharedDatasetDamage : public ::testing::TestWithParam<Damage> {};

TEST_P(SharedDatasetDamage, IsNotUsedButReplacedByACorrectCopy) {
  const TempDir shm;
  const SharedDatasetRequest request = synthetic_request();
  fs::path path;
  std::string bytes;
  {
    const SharedDataset original = SharedDataset::open(request, shm.path());
    path = original.path();
    bytes = read_bytes(path);
  }
  ASSERT_FALSE(fs::exists(path));
  GetParam().apply(bytes);
  write_bytes(path, bytes);  // as a crashed run, or a stray writer, would have left it

  const SharedDataset next = SharedDataset::open(request, shm.path());
  EXPECT_TRUE(next.decoded_here());
  EXPECT_THAT(next.replaced(), HasSubstr(GetParam().reason));
  EXPECT_EQ(next.path(), path);
  EXPECT_EQ(fs::file_size(path), next.file_bytes());
  expect_same_data(MappedDataset(next.fd()).view(), expected_for(request).view);
  EXPECT_FALSE(SharedDataset::open(request, shm.path()).decoded_here()) << "the replacement is found";
}

INSTANTIATE_TEST_SUITE_P(
    EveryCheck, SharedDatasetDamage,
    ::testing::Values(
        Damage{"Truncated", [](std::string& b) { b.resize(b.size() - 100); }, "truncated"},
        Damage{"ShorterThanTheHeader", [](std::string& b) { b.resize(20); }, "shorter than the header"},
        Damage{"Empty", [](std::string& b) { b.clear(); }, "shorter than the header"},
        Damage{"BadMagic", [](std::string& b) { b[0] = 'X'; }, "not a memsweep shared dataset"},
        Damage{"NoCompletionMark",
               [](std::string& b) { set_field<std::uint64_t>(b, offsetof(SharedFileHeader, complete_mark), 0); },
               "incomplete"},
        Damage{"AnotherFormatVersion",
               [](std::string& b) {
                 set_field(b, offsetof(SharedFileHeader, format_version), dataset::detail::kSharedFormatVersion + 1);
               },
               "format version " + std::to_string(dataset::detail::kSharedFormatVersion + 1)},
        Damage{"AnotherKey", [](std::string& b) { b[offsetof(SharedFileHeader, key)] ^= 1; }, "key"},
        Damage{"AFlippedPixel", [](std::string& b) { b[b.size() / 2] ^= 0x10; }, "checksum"},
        Damage{"AFlippedLabel", [](std::string& b) { b[b.size() - 1] ^= 0x01; }, "checksum"},
        Damage{"AHeaderFieldTheChecksumCovers",
               [](std::string& b) { set_field<std::uint64_t>(b, offsetof(SharedFileHeader, synthetic_seed), 1234); },
               "checksum"},
        Damage{"ArraysOutsideTheFile",
               [](std::string& b) {
                 set_field<std::uint64_t>(
                     b, offsetof(SharedFileHeader, train) + offsetof(dataset::detail::SharedSplitRecord, examples),
                     1ULL << 40);
               },
               "do not lie within"}),
    [](const auto& test_case) { return test_case.param.name; });

// ---- mapping in a trial process ---------------------------------------------

TEST(MappedDataset, MapsEveryPageAndOutlivesTheHolder) {
  const TempDir shm;
  const SharedDatasetRequest request = synthetic_request();
  std::optional<SharedDataset> shared = SharedDataset::open(request, shm.path());
  const MappedDataset mapped(shared->fd());
  shared.reset();  // the file loses its name; the mapping keeps its pages
  EXPECT_THAT(files_in(shm.path()), IsEmpty());
  expect_same_data(mapped.view(), expected_for(request).view);
}

struct NotADataset {
  std::string name;
  std::function<int(const TempDir&)> open_descriptor;  // -1 for "no such descriptor"
  std::string problem;
};

void PrintTo(const NotADataset& input, std::ostream* out) { *out << input.name; }

class MappedDatasetRefuses : public ::testing::TestWithParam<NotADataset> {};

TEST_P(MappedDatasetRefuses, WithADatasetErrorNamingTheDescriptor) {
  const TempDir dir;
  const int fd = GetParam().open_descriptor(dir);
  const int descriptor = fd >= 0 ? fd : 987;  // not open in this process
  const std::string message = testing::thrown_message<DatasetError>([&] { MappedDataset mapped(descriptor); });
  if (fd >= 0) ::close(fd);
  EXPECT_THAT(message, HasSubstr("shared dataset descriptor " + std::to_string(descriptor)));
  EXPECT_THAT(message, HasSubstr(GetParam().problem));
}

int open_written(const TempDir& dir, const std::string& contents) {
  return ::open(dir.write("file", contents).c_str(), O_RDONLY | O_CLOEXEC);
}

// A complete copy's bytes with `change` applied, opened read-only.
int open_changed_copy(const TempDir& dir, const std::function<void(std::string&)>& change) {
  std::string bytes;
  {
    const SharedDataset shared = SharedDataset::open(synthetic_request(), dir.path());
    bytes = read_bytes(shared.path());
  }
  change(bytes);
  return open_written(dir, bytes);
}

INSTANTIATE_TEST_SUITE_P(
    NotADataset, MappedDatasetRefuses,
    ::testing::Values(
        NotADataset{"NoSuchDescriptor", [](const TempDir&) { return -1; }, "cannot fstat it: Bad file descriptor"},
        NotADataset{"APipe",
                    [](const TempDir&) {
                      int ends[2];
                      if (::pipe(ends) != 0) return -1;
                      ::close(ends[1]);
                      return ends[0];
                    },
                    "not a regular file"},
        NotADataset{"ATextFile", [](const TempDir& dir) { return open_written(dir, "hello\n"); },
                    "6 bytes, shorter than a shared dataset's header"},
        NotADataset{"HeaderSizedZeros",
                    [](const TempDir& dir) { return open_written(dir, std::string(sizeof(SharedFileHeader), '\0')); },
                    "not a memsweep shared dataset file"},
        NotADataset{
            "ATruncatedCopy",
            [](const TempDir& dir) { return open_changed_copy(dir, [](std::string& b) { b.resize(b.size() - 4); }); },
            "truncated"},
        NotADataset{"AnIncompleteCopy",
                    [](const TempDir& dir) {
                      return open_changed_copy(dir, [](std::string& b) {
                        set_field<std::uint64_t>(b, offsetof(SharedFileHeader, complete_mark), 0);
                      });
                    },
                    "incomplete"}),
    [](const auto& test_case) { return test_case.param.name; });

TEST(MappedDataset, NamesTheFileBehindTheDescriptor) {
  const TempDir dir;
  const fs::path file = dir.write("not-a-dataset.txt", std::string(sizeof(SharedFileHeader), 'x'));
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string message = testing::thrown_message<DatasetError>([&] { MappedDataset mapped(fd); });
  ::close(fd);
  EXPECT_THAT(message, HasSubstr(file.string()));
}

}  // namespace
}  // namespace memsweep
