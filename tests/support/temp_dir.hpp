#pragma once
// A fresh folder per test, removed at the end, for files the tests write.

#include <filesystem>
#include <string>
#include <string_view>

namespace memsweep::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `contents` to path()/name (creating parent folders) and returns the path.
  std::filesystem::path write(std::string_view name, std::string_view contents) const;

 private:
  std::filesystem::path path_;
};

}  // namespace memsweep::testing
