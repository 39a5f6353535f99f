#include "support/paper_tables.hpp"

#include <fstream>
#include <sstream>

namespace memsweep::testing {

std::filesystem::path paper_table(const std::string& csv_name) {
  return std::filesystem::path(MEMSWEEP_SOURCE_DIR) / ".." / "shared" / "paper" / csv_name;
}

std::vector<PublishedTrial> read_paper_table(const std::filesystem::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // trial,learning_rate,epochs,batch_size,hidden,memory_used_mb
  std::vector<PublishedTrial> rows;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string trial, lr, epochs, batch, hidden;
    std::getline(fields, trial, ',');
    std::getline(fields, lr, ',');
    std::getline(fields, epochs, ',');
    std::getline(fields, batch, ',');
    std::getline(fields, hidden, ',');
    PublishedTrial row{std::stod(lr), std::stoi(epochs), std::stoi(batch), {}};
    std::istringstream widths(hidden);
    for (std::string width; std::getline(widths, width, '-');) row.hidden.push_back(std::stoi(width));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace memsweep::testing
