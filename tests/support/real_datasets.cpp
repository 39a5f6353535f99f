#include "support/real_datasets.hpp"

#include <cstdlib>
#include <system_error>

namespace memsweep::testing {

std::filesystem::path real_datasets_root() {
  const char* from_env = std::getenv(std::string(kTestDatasetsEnvVar).c_str());
  if (from_env != nullptr && *from_env != '\0') return from_env;
  return MEMSWEEP_TEST_DATASETS;
}

RealDatasetLookup find_real_dataset(std::string_view subfolder) {
  const std::filesystem::path root = real_datasets_root();
  const std::filesystem::path folder = root / subfolder;
  std::error_code error;
  if (std::filesystem::is_directory(folder, error)) return {root, {}};
  return {std::nullopt, "real " + std::string(subfolder) + " not found at " + folder.string() + " — set " +
                            std::string(kTestDatasetsEnvVar) + " to a folder holding " + std::string(subfolder) + "/"};
}

}  // namespace memsweep::testing
