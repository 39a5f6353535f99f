#include "search/capacity_table.hpp"

#include "common/text_table.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sweep_split.hpp"
#include "results/row_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

namespace memsweep::search {
namespace {

// ---- capacity: the searches' answers -----------------------------------------

// A search and the file it comes from (1, 2, ... as listed).
struct ShownSearch {
  const SearchRow* row;
  std::size_t file;
};

// The search's configuration as a trial row, so that it is named as the
// dataset tables name trials (hidden_text, channels_text, ...).
TrialRow configuration_row(const SearchRow& search) {
  return TrialRow{.repeat = search.repeat,
                  .dataset = search.dataset,
                  .model = search.model,
                  .optimizer = search.optimizer,
                  .learning_rate = search.learning_rate,
                  .epochs = search.epochs,
                  .batch_size = search.batch_size,
                  .depth = search.depth,
                  .hidden = search.hidden,
                  .channels = search.channels,
                  .trainer = search.trainer,
                  .params = search.params,
                  .memory_plan = search.memory_plan,
                  .recompute_every = search.recompute_every};
}

// A configuration's field as the capacity table names it; `always`: shown
// whether or not it differs between the searches.
struct NamedField {
  std::string name;
  std::string value;
  bool always = false;
};

// The configurations of a file's searches, by SearchRow::configuration,
// as its sweep text (its part's) defines them; empty when that text no
// longer parses.
std::vector<TrialSpec> search_configurations(const FileHeader& header) {
  try {
    SweepSpec sweep = parse_sweep(header.sweep_text, header.sweep_file);
    if (!sweep.search || sweep.trials.size() > kMaxSearches) return {};
    if (!header.part.empty()) sweep = select_named_part(sweep, header.part);
    return sweep.trials.list();
  } catch (const InputError&) {
    return {};
  }
}

// A program's own parameters, each as name=value, and always shown: they
// are what tells its configurations apart (its built-in fields are blank),
// and one search of a program alone would otherwise say only its name. The
// search's own axis is left out: the configuration holds it at the range's
// low end, and the axis column names it. From the sweep text when it parses
// (the whole value), else the row's JSON.
void add_param_fields(const SearchRow& search, const TrialSpec* configuration, std::vector<NamedField>& fields) {
  const std::string axis = get_fixed(search.axis);
  const bool program = results::trainer_of(configuration_row(search)) != kBuiltinTrainer;
  if (configuration == nullptr) {
    const std::string params = results::params_of(configuration_row(search));
    fields.push_back({"params", params, program && !params.empty()});
    return;
  }
  for (const auto& [name, value] : configuration->params)
    if (axis != std::string(search_axis::kParamsPrefix) + name) fields.push_back({name, value.text, program});
}

// The hyperparameters a configuration is told apart by, as "name=value".
std::vector<NamedField> configuration_fields(const SearchRow& search, const TrialSpec* configuration) {
  const TrialRow row = configuration_row(search);
  std::vector<NamedField> fields{
      {"optimizer", get_fixed(row.optimizer)},     {"lr", results::learning_rate_text(row)},
      {"epochs", results::count_text(row.epochs)}, {"batch", results::count_text(row.batch_size)},
      {"hidden", results::hidden_text(row)},       {"channels", results::channels_text(row)}};
  add_param_fields(search, configuration, fields);
  fields.push_back({"plan", results::memory_plan_text(row)});
  fields.push_back({"repeat", std::to_string(row.repeat)});
  return fields;
}

// "pytorch/cnn/mnist lr=0.01 hidden=64-32", "wlm arch=LSTM bptt=35": the
// trainer, model and dataset (those set: a program's are blank), then its
// params, then the other fields that differ between the searches shown.
std::vector<std::string> configuration_names(const std::vector<ShownSearch>& shown,
                                             const std::vector<std::vector<TrialSpec>>& configurations) {
  std::vector<std::vector<NamedField>> fields;
  for (const ShownSearch& s : shown) {
    const std::vector<TrialSpec>& file = configurations[s.file - 1];
    const auto index = static_cast<std::size_t>(std::max(s.row->configuration, 0));
    fields.push_back(configuration_fields(*s.row, index < file.size() ? &file[index] : nullptr));
  }
  const auto value_of = [](const std::vector<NamedField>& of, const NamedField& field) {
    const auto same = std::find_if(of.begin(), of.end(), [&](const NamedField& f) { return f.name == field.name; });
    return same == of.end() ? std::string() : same->value;
  };
  std::vector<std::string> names;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const TrialRow row = configuration_row(*shown[i].row);
    std::string name = results::trainer_of(row);
    for (const std::string& part : {get_fixed(row.model), get_fixed(row.dataset)})
      if (!part.empty()) name += "/" + part;
    for (const NamedField& field : fields[i]) {
      const bool differs = std::any_of(fields.begin(), fields.end(),
                                       [&](const auto& other) { return value_of(other, field) != field.value; });
      if (field.always || differs) name += fmt::format(" {}={}", field.name, field.value);
    }
    names.push_back(std::move(name));
  }
  return names;
}

// "512 MiB", "2 GiB", "2.79 GiB": a limit as people set them.
std::string limit_text(std::int64_t bytes) {
  constexpr double kBytesPerMiB = 1024.0 * 1024.0;
  constexpr double kBytesPerGiB = kBytesPerMiB * 1024.0;
  const bool gib = static_cast<double>(bytes) >= kBytesPerGiB;
  std::string number = fmt::format("{:.2f}", static_cast<double>(bytes) / (gib ? kBytesPerGiB : kBytesPerMiB));
  number.erase(number.find_last_not_of('0') + 1);
  if (number.back() == '.') number.pop_back();
  return fmt::format("{} {}", number, gib ? "GiB" : "MiB");
}

// "host", or a GPU search's device: "NVIDIA H100 80GB HBM3 (79.6 GiB)".
std::string device_text(const SearchRow& row) {
  if (get_fixed(row.device) != "gpu") return "host";
  const std::string name = get_fixed(row.gpu_name).empty() ? std::string("GPU") : get_fixed(row.gpu_name);
  return row.gpu_total < 0 ? name : fmt::format("{} ({})", name, limit_text(row.gpu_total));
}

// "700 (verified)": the answer, and whether it trained its full epochs.
std::string answer_text(const SearchRow& row) {
  if (row.fits < 0) return "-";
  return fmt::format("{} {}", row.fits, row.fits_verified == 1 ? "(verified)" : "unverified");
}

std::string capacity_table(const std::vector<ShownSearch>& shown, bool several,
                           const std::vector<std::vector<TrialSpec>>& configurations) {
  // A GPU search's limit is of its device, which the table names.
  const bool any_gpu =
      std::any_of(shown.begin(), shown.end(), [](const ShownSearch& s) { return get_fixed(s.row->device) == "gpu"; });
  TableRow header{"search"};
  if (several) header.push_back("file");
  header.push_back("configuration");
  if (any_gpu) header.push_back("device");
  for (const char* name : {"limit", "axis", "fits", "does not fit", "MiB/unit", "trials", "status"})
    header.push_back(name);
  std::vector<TableRow> table{header};
  const std::vector<std::string> names = configuration_names(shown, configurations);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const SearchRow& row = *shown[i].row;
    TableRow line{std::to_string(row.search)};
    if (several) line.push_back(std::to_string(shown[i].file));
    line.push_back(names[i]);
    if (any_gpu) line.push_back(device_text(row));
    for (std::string cell : {limit_text(row.limit), get_fixed(row.axis), answer_text(row),
                             row.does_not_fit < 0 ? "-" : std::to_string(row.does_not_fit),
                             row.fit_b_mib < 0 ? "-" : fmt::format("{:.2f}", row.fit_b_mib), std::to_string(row.trials),
                             get_fixed(row.status)})
      line.push_back(std::move(cell));
    table.push_back(std::move(line));
  }
  return render_table(table);
}

// "search 3: <message>" for each search that failed: why it has no answer.
std::string failed_searches(const std::vector<ShownSearch>& shown, bool several) {
  std::string out;
  for (const ShownSearch& s : shown) {
    if (get_fixed(s.row->status) != search_status::kFailed) continue;
    const std::string message = get_fixed(s.row->message);
    out += fmt::format("search {}{}: {}\n", s.row->search, several ? fmt::format(" (file {})", s.file) : "",
                       message.empty() ? "failed, no message" : message);
  }
  return out;
}

// The capacity table of the files' searches, file by file; empty without any.
}  // namespace

std::string capacity_section(const std::vector<SummaryInput>& files) {
  std::vector<ShownSearch> shown;
  std::vector<std::vector<TrialSpec>> configurations;
  for (std::size_t f = 0; f < files.size(); ++f) {
    configurations.push_back(files[f].searches.empty() ? std::vector<TrialSpec>{}
                                                       : search_configurations(files[f].header));
    const std::size_t first = shown.size();
    for (const SearchRow& row : files[f].searches) shown.push_back({&row, f + 1});
    // In the plan's order (configuration, then limit), not the order the searches ended.
    std::sort(shown.begin() + static_cast<std::ptrdiff_t>(first), shown.end(),
              [](const ShownSearch& a, const ShownSearch& b) { return a.row->search < b.row->search; });
  }
  if (shown.empty()) return {};
  const bool several = files.size() > 1;
  return fmt::format("\ncapacity ({} search{})\n", shown.size(), shown.size() == 1 ? "" : "es") +
         capacity_table(shown, several, configurations) + failed_searches(shown, several) +
         "fits: the largest value of the axis that trained within the limit (verified: it trained its full "
         "epochs); does not fit: the smallest value seen not to; MiB/unit: the peak's growth per unit of the axis, "
         "fitted on the probes that fit.\n";
}

}  // namespace memsweep::search
