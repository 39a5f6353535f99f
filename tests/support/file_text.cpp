#include "support/file_text.hpp"

#include <fstream>
#include <sstream>

namespace memsweep::testing {

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace memsweep::testing
