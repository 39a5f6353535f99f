#include "summary/summary_hosts.hpp"

#include "common/text_table.hpp"
#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace memsweep::summary::detail {
namespace {

struct HostFigures {
  std::size_t trials = 0;
  std::size_t ok = 0;
  double used_sum = 0.0;  // of the trials' mean node memory used, where known
  std::size_t used_count = 0;
  double used_low = -1.0;
  double used_high = -1.0;
  std::int64_t rss_peak = -1;
};

}  // namespace

std::string hosts_section(const std::vector<const TrialRow*>& rows) {
  std::map<std::string, HostFigures> hosts;
  for (const TrialRow* row : rows) {
    const std::string host = get_fixed(row->host);
    if (host.empty()) continue;  // a lost attempt's row: no host was reported
    HostFigures& figures = hosts[host];
    ++figures.trials;
    if (get_fixed(row->status) == status_name(TrialStatus::ok)) ++figures.ok;
    if (row->sys_used_mean >= 0) {
      figures.used_sum += row->sys_used_mean;
      ++figures.used_count;
      figures.used_low = figures.used_low < 0 ? row->sys_used_mean : std::min(figures.used_low, row->sys_used_mean);
      figures.used_high = std::max(figures.used_high, row->sys_used_mean);
    }
    figures.rss_peak = std::max(figures.rss_peak, row->rss_peak);
  }
  if (hosts.size() < 2) return {};
  std::vector<TableRow> table{{"host", "trials", "ok", "used MB mean", "used MB min", "used MB max", "rss peak max"}};
  for (const auto& [host, figures] : hosts)
    table.push_back(
        {host, std::to_string(figures.trials), std::to_string(figures.ok),
         mib_text(figures.used_count > 0 ? figures.used_sum / static_cast<double>(figures.used_count) : -1.0),
         mib_text(figures.used_low), mib_text(figures.used_high), mib_text(static_cast<double>(figures.rss_peak))});
  return fmt::format("\nnodes ({} hosts)\n", hosts.size()) + render_table(table) +
         "used MB: each trial's mean of its node's memory used (as in the tables above), over the host's trials; "
         "rss peak max: the largest trial peak on the host.\n";
}

}  // namespace memsweep::summary::detail
