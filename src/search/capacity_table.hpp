#pragma once
// The summary's capacity section: per search (a configuration at one memory
// limit) the largest value of its axis that trained within the limit, as
// /searches holds it, and the searches that failed.

#include "memsweep/summary_text.hpp"

#include <string>
#include <vector>

namespace memsweep::search {

// Empty when no file holds a search.
std::string capacity_section(const std::vector<SummaryInput>& files);

}  // namespace memsweep::search
