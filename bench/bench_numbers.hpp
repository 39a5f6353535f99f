#pragma once
// What every benchmark here needs: medians of noisy timings and comma lists
// of sizes from the command line.

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::bench {

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// "784,128,10" -> {784, 128, 10}; empty items are skipped.
inline std::vector<int> int_list(const std::string& text) {
  std::vector<int> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) values.push_back(std::stoi(item));
  return values;
}

}  // namespace memsweep::bench
