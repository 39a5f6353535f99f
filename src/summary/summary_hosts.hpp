#pragma once
// The summary's per-node section (summary_text.cpp): where a sweep's trials
// ran on several hosts, the node memory each host saw, one line per host,
// so that a node that differs (more memory used, another kernel, a
// co-tenant) shows.

#include "memsweep/results.hpp"

#include <string>
#include <vector>

namespace memsweep::summary::detail {

// Empty unless the rows name two hosts or more.
std::string hosts_section(const std::vector<const TrialRow*>& rows);

}  // namespace memsweep::summary::detail
