#pragma once
// A file that appears whole or not at all: written as a temporary beside
// its path, renamed onto it by commit(). Destroyed before commit() (an
// error on the way), the temporary is removed and the path left as it was.

#include <cstdio>
#include <filesystem>

namespace memsweep::cli {

class OutputFile {
 public:
  // Throws InputError, naming the path, when it exists and `replace` is
  // false, when it is a directory, or when its folder does not exist; with
  // `replace`, when what is there is not a regular file, or is HDF5.
  OutputFile(std::filesystem::path path, bool replace);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  std::FILE* stream() const { return stream_; }
  const std::filesystem::path& path() const { return path_; }

  // Closes the temporary (on disk once this returns) and renames it onto
  // the path; throws std::runtime_error when that fails, InputError when
  // the path appeared meanwhile and `replace` is false.
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  bool replace_;
  std::FILE* stream_ = nullptr;
  bool committed_ = false;
};

}  // namespace memsweep::cli
