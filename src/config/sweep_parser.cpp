// The sweep file's top level: sections, [sweep] and [sampler], and the order
// in which trials are put together.

#include "config/defined_trials.hpp"
#include "config/expand.hpp"
#include "config/nesting.hpp"
#include "config/program_fields.hpp"
#include "config/search_section.hpp"
#include "config/sweep_file_reader.hpp"
#include "config/toml_access.hpp"
#include "config/trial_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

namespace memsweep {
namespace {

// The first bytes of every HDF5 file.
constexpr std::string_view kHdf5Signature{"\x89HDF\r\n\x1a\n", 8};

using namespace config::detail;

const std::vector<std::string_view> kSections{"sweep", "sampler", "programs", "defaults",
                                              "trial", "grid",    "random",   "search"};
const std::vector<std::string_view> kSweepKeys{"name", "seed", "repeats"};
const std::vector<std::string_view> kSamplerKeys{"interval_ms", "events", "counter_source"};

// toml11 reports "[error] toml::parse_xxx: what\n --> file\n | …^--- hint";
// keep the what and the hint, the file and line are ours to print.
std::string syntax_message(const std::string& what) {
  std::istringstream lines(what);
  std::string first, line, hint;
  std::getline(lines, first);
  if (first.rfind("[error] ", 0) == 0) first.erase(0, 8);
  if (first.rfind("toml::", 0) == 0 && first.find(": ") != std::string::npos) first.erase(0, first.find(": ") + 2);
  while (std::getline(lines, line)) {
    const auto marker = line.find("^---");
    if (marker != std::string::npos) hint = line.substr(marker + 4);
  }
  while (!hint.empty() && hint.front() == ' ') hint.erase(0, 1);
  return hint.empty() ? fmt::format("syntax error: {}", first) : fmt::format("syntax error: {} ({})", first, hint);
}

const TomlTable* section(const TomlTable& root, std::string_view name, const std::string& file, Place* place) {
  const auto it = root.find(std::string(name));
  if (it == root.end()) return nullptr;
  *place = place_of(it->second, std::string(name));
  if (place->file.empty()) place->file = file;
  return &expect_table(it->second, *place);
}

void read_sweep_section(const TomlTable& root, const std::string& file, SweepSpec& spec) {
  Place place;
  const TomlTable* sweep = section(root, "sweep", file, &place);
  if (sweep == nullptr) return;
  reject_unknown_keys(*sweep, place, kSweepKeys);
  for (const auto& [key, value] : *sweep) {
    const Place at = place_of(value, "sweep." + key);
    if (key == "name") {
      spec.name = expect_string(value, at);
      if (spec.name.empty()) fail(at, "expected a non-empty name");
    } else if (key == "seed") {
      spec.seed = static_cast<std::uint64_t>(expect_integer(value, at, 0, INT64_MAX));
    } else if (key == "repeats") {
      spec.repeats = static_cast<int>(expect_integer(value, at, 1, kMaxRepeats));
    }
  }
}

void read_sampler_section(const TomlTable& root, const std::string& file, SamplerSpec& sampler) {
  Place place;
  const TomlTable* table = section(root, "sampler", file, &place);
  if (table == nullptr) return;
  reject_unknown_keys(*table, place, kSamplerKeys);
  for (const auto& [key, value] : *table) {
    const Place at = place_of(value, "sampler." + key);
    if (key == "interval_ms") {
      sampler.interval_ms = static_cast<int>(expect_integer(value, at, kMinSamplerIntervalMs, kMaxSamplerIntervalMs));
    } else if (key == "events") {
      std::set<std::string> seen;
      for (const TomlValue& event : expect_array(value, at)) {
        const std::string& name = expect_string(event, at);
        if (name.empty()) fail(at, "expected event names (PAPI's or perf's), found an empty string");
        if (!seen.insert(name).second) fail(at, fmt::format("event \"{}\" is listed twice", name));
        sampler.events.push_back(name);
      }
    } else if (key == "counter_source") {
      const std::string& text = expect_string(value, at);
      const std::optional<CounterSourceChoice> choice = parse_counter_source(text);
      if (!choice) fail(at, fmt::format("expected \"auto\", \"papi\" or \"kernel\", found \"{}\"", text));
      sampler.counter_source = *choice;
    }
  }
}

// Each section is bounded; together, and with repeats, they could still ask
// for more trials than memory holds (a 70-byte file asked for 10^10). The
// message says how many, so that the user knows how far to cut.
void check_total(std::uint64_t trials, int repeats, const std::string& file) {
  // A random count may be near 2^63 here (random_drafts checks it later),
  // and repeats up to 10^4: the product can pass 64 bits.
  std::uint64_t runs = 0;
  const bool overflowed = __builtin_mul_overflow(trials, static_cast<std::uint64_t>(repeats), &runs);
  if (!overflowed && runs <= kMaxSweepTrials) return;
  if (repeats == 1)
    fail(Place{file, 1, ""}, fmt::format("the sweep defines {} trials, more than {}; split it into several sweeps",
                                         trials, kMaxSweepTrials));
  const std::string runs_text =
      overflowed ? fmt::format("about {:.2g}", static_cast<double>(trials) * repeats) : std::to_string(runs);
  fail(Place{file, 1, ""}, fmt::format("the sweep defines {} trials x {} repeats = {} runs, more than {}; split "
                                       "it into several sweeps",
                                       trials, repeats, runs_text, kMaxSweepTrials));
}

struct TrialSections {
  const TomlArray* tables = nullptr;  // [[trial]]
  const TomlTable* grid = nullptr;
  const TomlTable* random = nullptr;
  Place grid_place, random_place;
};

TrialSections trial_sections(const TomlTable& root, const std::string& file) {
  TrialSections sections;
  if (const auto it = root.find("trial"); it != root.end())
    sections.tables = &expect_array(it->second, place_of(it->second, "trial"));
  sections.grid = section(root, "grid", file, &sections.grid_place);
  sections.random = section(root, "random", file, &sections.random_place);
  return sections;
}

// How many trials the sections define, counted without expanding them;
// refuses more than kMaxSweepTrials runs (with repeats) before anything is
// built, so that a sweep of 10^7 is refused at once.
std::uint64_t count_trials(const TrialSections& sections, int repeats, const std::string& file) {
  std::uint64_t total = sections.tables ? sections.tables->size() : 0;
  if (sections.grid) total += grid_size(*sections.grid, sections.grid_place);
  if (sections.random) {
    // `count` itself is checked by random_drafts, after the total.
    const auto count = sections.random->find("count");
    if (count != sections.random->end() && count->second.is_integer() && !beyond_64_bits(count->second) &&
        count->second.as_integer() > 0)
      total += static_cast<std::uint64_t>(count->second.as_integer());
  }
  check_total(total, repeats, file);
  return total;
}

// The sections that define trials, in the order the sweep lists them.
std::vector<std::unique_ptr<TrialSection>> trial_section_list(const TrialSections& sections, const std::string& file,
                                                              std::uint64_t seed) {
  std::vector<std::unique_ptr<TrialSection>> list;
  if (sections.tables && !sections.tables->empty()) list.push_back(table_section(*sections.tables));
  if (sections.grid) list.push_back(grid_section(*sections.grid, sections.grid_place));
  if (sections.random) list.push_back(random_section(*sections.random, sections.random_place, seed));
  const bool none = std::all_of(list.begin(), list.end(), [](const auto& section) { return section->size() == 0; });
  if (none)
    fail(Place{file, 1, ""}, "the sweep defines no trials; expected at least one [[trial]], a [grid] or a [random]");
  return list;
}

// A value in one canonical spelling: tables' keys sorted (std::map),
// numbers in round-trip form, strings quoted.
void append_canonical(const TomlValue& value, std::string& text, bool trial_fields) {
  if (value.is_table()) {
    text += '{';
    for (const auto& [key, item] : value.as_table()) {
      // Limits and where a trial runs: editing them makes no other sweep.
      if (trial_fields && is_placement_field(key)) continue;
      fmt::format_to(std::back_inserter(text), "{:?}=", key);
      append_canonical(item, text, false);
      text += ';';
    }
    text += '}';
  } else if (value.is_array()) {
    text += '[';
    for (const TomlValue& item : value.as_array()) {
      append_canonical(item, text, trial_fields);
      text += ',';
    }
    text += ']';
  } else if (value.is_string()) {
    fmt::format_to(std::back_inserter(text), "{:?}", value.as_string().str);
  } else if (value.is_integer()) {
    fmt::format_to(std::back_inserter(text), "{}", value.as_integer());
  } else if (value.is_floating()) {
    fmt::format_to(std::back_inserter(text), "{}f", value.as_floating());
  } else if (value.is_boolean()) {
    text += value.as_boolean() ? "true" : "false";
  } else {
    text += toml::format(value);  // dates and times: no field takes them, but the text stays exact
  }
}

std::string canonical(const TomlValue& value, bool trial_fields) {
  std::string text;
  append_canonical(value, text, trial_fields);
  return text;
}

// A list whose order does not change which trials there are ([[trial]]
// tables, a grid axis's values): its items sorted.
std::string canonical_set(const TomlArray& items, bool trial_fields) {
  std::vector<std::string> texts;
  for (const TomlValue& item : items) texts.push_back(canonical(item, trial_fields));
  std::sort(texts.begin(), texts.end());
  return fmt::format("[{}]", fmt::join(texts, ","));
}

// [grid]: each axis's values as a set; env and params hold axes too.
std::string canonical_grid(const TomlTable& grid) {
  std::string text = "{";
  for (const auto& [key, value] : grid) {
    if (is_placement_field(key)) continue;
    fmt::format_to(std::back_inserter(text), "{:?}=", key);
    if (value.is_array()) {
      text += canonical_set(value.as_array(), false);
    } else if (value.is_table()) {
      text += canonical_grid(value.as_table());
    } else {
      text += canonical(value, false);  // not an axis: parse_sweep refuses it
    }
    text += ';';
  }
  return text + "}";
}

// SweepSpec::definition: the sections that make trials, [defaults] and
// [programs], [sweep]'s seed and repeats. What only orders the same trials
// differently (the order of [[trial]] tables, of a grid axis's values, of
// the axes) leaves it alone: a resume finds trials by their ids.
std::string definition_of(const TomlTable& top, const SweepSpec& spec) {
  constexpr std::string_view kExpansionRules = "memsweep sweep definition 1";
  std::string text = fmt::format("{}\nseed={}\nrepeats={}\n", kExpansionRules, spec.seed, spec.repeats);
  for (const std::string_view section : {"defaults", "trial", "grid", "random", "programs", "search"}) {
    const auto it = top.find(std::string(section));
    if (it == top.end()) continue;
    fmt::format_to(std::back_inserter(text), "[{}]", section);
    if (section == "trial" && it->second.is_array())
      text += canonical_set(it->second.as_array(), true);
    else if (section == "grid" && it->second.is_table())
      text += canonical_grid(it->second.as_table());
    else
      append_canonical(it->second, text, section != "programs");
    text += '\n';
  }
  return text;
}

// TOML text is UTF-8. toml11 3.7 reads out of bounds when it reports
// invalid UTF-8 in a literal string (parse_literal_string rewinds a
// location to an iterator of another buffer), so such bytes are refused
// before it sees them. The offset of the first invalid byte, or npos.
std::size_t invalid_utf8_at(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    char32_t code = 0;
    char32_t smallest = 0;  // below it, an overlong encoding
    if ((lead & 0xE0) == 0xC0) {
      length = 2;
      code = lead & 0x1F;
      smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3;
      code = lead & 0x0F;
      smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4;
      code = lead & 0x07;
      smallest = 0x10000;
    } else {
      return i;
    }
    if (text.size() - i < length) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return i;
      code = (code << 6) | (next & 0x3F);
    }
    if (code < smallest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return i;
    i += length;
  }
  return std::string_view::npos;
}

std::string stem_of(const std::string& file) {
  const std::string stem = std::filesystem::path(file).stem().string();
  return stem.empty() ? "sweep" : stem;
}

// Every trial of repeat 0 built once: each checked, and one that another
// already defines left out with a note.
void walk(DefinedTrials& defined, const std::string& file, std::vector<std::string>& notes) {
  std::unordered_map<std::string, std::uint64_t> index_of_id;
  std::vector<std::uint64_t> kept;
  bool duplicates = false;
  // A grid that crosses memory_plan with recompute_every makes these by
  // design (keep and reuse have no segments): one note for all of them,
  // not one per pair, which buried every other note of such a sweep.
  std::uint64_t segments_ignored = 0;
  std::string first_ignored;  // "FILE:LINE grid[3], the same trial as FILE:LINE grid[2]"
  index_of_id.reserve(static_cast<std::size_t>(defined.defined()));
  for (std::uint64_t index = 0; index < defined.defined(); ++index) {
    const TrialSpec trial = defined.defined_trial(index);
    const auto [seen, inserted] = index_of_id.emplace(trial.id, index);
    if (inserted) {
      kept.push_back(index);
      continue;
    }
    duplicates = true;
    const TrialSpec first = defined.defined_trial(seen->second);
    if (first.canonical_text() != trial.canonical_text())
      throw ConfigError(file, 1, "", fmt::format("trial id collision between different trials ({})", trial.id));
    const bool params_left_out = !trial.program && defined.sets_params(index);
    if (trial.recompute_every != first.recompute_every && trial.memory_plan != MemoryPlan::recompute) {
      if (segments_ignored++ == 0) first_ignored = fmt::format("{}, the same trial as {}", trial.origin, first.origin);
    } else if (params_left_out)
      notes.push_back(
          fmt::format("{} defines the same trial as {} once its [params] are left out, which memsweep's own "
                      "trainer does not read; it runs once (id {}).",
                      trial.origin, first.origin, trial.id));
    else
      notes.push_back(
          fmt::format("{} defines the same trial as {}; it runs once (id {}). "
                      "Use [sweep] repeats to run trials more than once.",
                      trial.origin, first.origin, trial.id));
  }
  if (segments_ignored > 0)
    notes.push_back(
        fmt::format("{} trial definition{} set recompute_every under memory_plan keep or reuse, which "
                    "ignore it: each runs once (the first: {}).",
                    segments_ignored, segments_ignored == 1 ? "" : "s", first_ignored));
  if (duplicates) defined.keep_only(std::move(kept));
  defined.mark_walked();
}

}  // namespace

SweepSpec parse_sweep(std::string_view text, const std::string& source_name) {
  if (const std::size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    const std::size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const std::size_t column = line_start == std::string_view::npos || bad == 0 ? bad + 1 : bad - line_start;
    throw ConfigError(source_name, static_cast<int>(std::count(text.begin(), text.begin() + bad, '\n')) + 1, "",
                      fmt::format("not UTF-8 text: the character at column {} (byte 0x{:02X}) is not valid UTF-8; "
                                  "a sweep file is TOML, which is UTF-8",
                                  column, static_cast<unsigned char>(text[bad])));
  }
  reject_deep_nesting(text, source_name);          // before toml11, which recurses without a limit
  reject_long_binary_integers(text, source_name);  // before toml11, which overflows on them
  TomlValue root;
  try {
    root = parse_toml(text, source_name);
  } catch (const toml::syntax_error& error) {
    throw ConfigError(source_name, static_cast<int>(error.location().line()), "", syntax_message(error.what()));
  }

  SweepSpec spec;
  spec.source_name = source_name;
  spec.source_text = std::string(text);
  spec.name = stem_of(source_name);
  const TomlTable& top = root.as_table();
  reject_unknown_keys(top, Place{source_name, 1, ""}, kSections);
  read_sweep_section(top, source_name, spec);
  read_sampler_section(top, source_name, spec.sampler);
  const ProgramTables programs = read_program_tables(top, source_name);

  TrialDraft defaults;
  Place defaults_place;
  if (const TomlTable* table = section(top, "defaults", source_name, &defaults_place))
    defaults = table_draft(*table, defaults_place);
  spec.search = read_search_section(top, source_name);
  if (spec.search) {
    reject_axis_in_sections(top, *spec.search, source_name);
    give_axis_its_low_end(defaults, *spec.search);
  }

  const TrialSections sections = trial_sections(top, source_name);
  count_trials(sections, spec.repeats, source_name);
  auto defined = std::make_shared<DefinedTrials>(trial_section_list(sections, source_name, spec.seed),
                                                 std::move(defaults), programs, spec.seed, spec.repeats);
  for (const auto& section : defined->sections()) {
    SectionSummary summary{section->name(), section->size(), {}};
    for (const FieldSummary& field : section->fields()) summary.fields.emplace_back(field.field, field.values);
    spec.sections.push_back(std::move(summary));
  }
  if (defined->defined() <= kWalkedTrials)
    walk(*defined, source_name, spec.notes);
  else
    defined->check_every_value();
  spec.trials = SweepTrials(defined);
  if (spec.search && spec.trials.size() * spec.search->limits.size() > kMaxSearches)
    throw ConfigError(source_name, spec.search->line, "search",
                      fmt::format("the sweep defines {} configurations x {} limits = {} searches, more than {}; "
                                  "split it into several sweeps (--split-by on a field other than the axis)",
                                  spec.trials.size(), spec.search->limits.size(),
                                  spec.trials.size() * spec.search->limits.size(), kMaxSearches));
  if (spec.search && spec.search->device == SearchDevice::gpu)
    for (std::size_t index = 0; index < spec.trials.size() && index < kWalkedTrials; ++index) {
      const TrialSpec configuration = spec.trials[index];
      if (!configuration.program || configuration.gpus_per_trial == 0)
        throw ConfigError(source_name, spec.search->line, "search.device",
                          fmt::format("device = \"gpu\" searches within a GPU limit, but configuration {} ({}) runs "
                                      "on no GPU ({}); expected programs with a GPU each",
                                      index + 1, configuration.origin,
                                      configuration.program ? "gpus_per_trial = 0" : "memsweep's own CPU trainer"));
    }
  spec.definition = definition_of(top, spec);
  reject_integers_beyond_64_bits(root);  // those no field read as a number
  return spec;
}

SweepSpec load_sweep_file(const std::filesystem::path& path) {
  const std::string contents = read_sweep_text(path);
  // A results file or another binary file given by mistake: say so, rather
  // than the TOML parser's complaint about its first bytes.
  if (contents.starts_with(kHdf5Signature))
    throw InputError(
        fmt::format("{}: an HDF5 file (a results file?), not a sweep file; expected TOML text", path.string()));
  if (contents.find('\0') != std::string::npos)
    throw InputError(fmt::format("{}: a binary file, not a sweep file; expected TOML text", path.string()));
  return parse_sweep(contents, path.string());
}

}  // namespace memsweep
