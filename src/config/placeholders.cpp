#include "config/placeholders.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace memsweep::config::detail {
namespace {

// Braces in a value or in literal text, doubled so that the result is still a template.
std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

// fmt's "{}" is the shortest text that reads back as the same double, so
// equal values always give equal text (and 0.1 stays 0.1).
std::string number(double value) { return fmt::format("{}", value); }

std::optional<std::string> synthetic_placeholder(const SyntheticSpec& s, std::string_view name) {
  if (name == "synthetic.shape") return fmt::format("{},{},{}", s.shape.channels, s.shape.height, s.shape.width);
  if (name == "synthetic.classes") return std::to_string(s.classes);
  if (name == "synthetic.train_size") return std::to_string(s.train_size);
  if (name == "synthetic.test_size") return std::to_string(s.test_size);
  if (name == "synthetic.noise") return number(s.noise);
  return std::nullopt;
}

std::optional<std::string> field_placeholder(const TrialSpec& t, std::string_view name) {
  if (name == "dataset") return std::string(dataset_name(t.dataset.kind));
  if (name == "model") return std::string(model_name(t.model));
  if (name == "channels") return fmt::format("{}", fmt::join(t.channels, ","));
  if (name == "optimizer") return std::string(optimizer_name(t.optimizer.kind));
  if (name == "momentum") return number(t.optimizer.momentum);
  if (name == "beta1") return number(t.optimizer.beta1);
  if (name == "beta2") return number(t.optimizer.beta2);
  if (name == "epsilon") return number(t.optimizer.epsilon);
  if (name == "learning_rate") return number(t.learning_rate);
  if (name == "epochs") return std::to_string(t.epochs);
  if (name == "batch_size") return std::to_string(t.batch_size);
  if (name == "hidden") return fmt::format("{}", fmt::join(t.hidden, ","));
  if (name == "memory_plan") return std::string(memory_plan_name(t.memory_plan));
  // 0: the program's own default segment length, as for memsweep's trainer.
  if (name == "recompute_every") return std::to_string(t.effective_recompute_every());
  // What memsweep's own trainer would train this repeat with, so that a
  // program's repeats differ as the built-in trainer's do.
  if (name == "seed") return std::to_string(t.training_seed());
  if (name == "repeat") return std::to_string(t.repeat);
  return synthetic_placeholder(t.dataset.synthetic, name);
}

}  // namespace

ParsedTemplate parse_template(std::string_view text) {
  ParsedTemplate parsed;
  std::string literal;
  const auto flush = [&] {
    if (!literal.empty()) parsed.pieces.push_back({std::move(literal), false});
    literal.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool doubled = i + 1 < text.size() && text[i + 1] == c;
    if ((c == '{' || c == '}') && doubled) {
      literal += c;
      ++i;
    } else if (c == '}') {
      parsed.error = "a lone } (write }} for a literal brace)";
      return parsed;
    } else if (c == '{') {
      const std::size_t close = text.find_first_of("{}", i + 1);
      if (close == std::string_view::npos || text[close] == '{') {
        parsed.error = "a { without its } (write {{ for a literal brace)";
        return parsed;
      }
      if (close == i + 1) {
        parsed.error = "an empty placeholder {} (write {{}} for literal braces)";
        return parsed;
      }
      flush();
      parsed.pieces.push_back({std::string(text.substr(i + 1, close - i - 1)), true});
      i = close;
    } else {
      literal += c;
    }
  }
  flush();
  return parsed;
}

std::string substitute(std::string_view text, const PlaceholderLookup& lookup) {
  const ParsedTemplate parsed = parse_template(text);
  if (!parsed.error.empty()) throw std::logic_error(fmt::format("unchecked template \"{}\": {}", text, parsed.error));
  std::string out;
  for (const TemplatePiece& piece : parsed.pieces) {
    if (!piece.is_placeholder) {
      out += escaped(piece.text);
    } else if (const std::optional<std::string> value = lookup(piece.text)) {
      out += escaped(*value);
    } else {
      out += "{" + piece.text + "}";
    }
  }
  return out;
}

std::optional<std::string> literal_text(std::string_view text) {
  const ParsedTemplate parsed = parse_template(text);
  if (!parsed.error.empty()) return std::nullopt;
  std::string out;
  for (const TemplatePiece& piece : parsed.pieces) {
    if (piece.is_placeholder) return std::nullopt;
    out += piece.text;
  }
  return out;
}

bool is_run_time_placeholder(std::string_view name) {
  return name == "data_dir" || name == "threads" || name == "max_train_examples" || name == "max_test_examples" ||
         name == "attempt" || name == "trial_dir" || name == "gpu";
}

std::optional<std::string> trial_placeholder(const TrialSpec& trial, std::string_view name, bool with_id) {
  if (name == "trial_id") return with_id ? std::optional<std::string>(trial.id) : std::nullopt;
  for (const auto& [param, value] : trial.params)
    if (param == name) return value.text;
  return field_placeholder(trial, name);
}

std::optional<std::string> run_placeholder(const ProgramRunValues& values, std::string_view name) {
  if (name == "data_dir") return values.data_dir;
  if (name == "threads") return std::to_string(values.threads);
  if (name == "max_train_examples") return std::to_string(values.max_train_examples);
  if (name == "max_test_examples") return std::to_string(values.max_test_examples);
  if (name == "attempt") return std::to_string(values.attempt);
  if (name == "trial_dir") return values.trial_dir;
  if (name == "gpu") return values.gpu;
  return std::nullopt;
}

void fail_at_program(const ProgramSpec& program, const std::string& message) {
  // The first ":LINE: " splits the place; a key with ": " in it stays whole.
  const std::string& place = program.place;
  for (std::size_t colon = place.find(':'); colon != std::string::npos; colon = place.find(':', colon + 1)) {
    std::size_t end = colon + 1;
    while (end < place.size() && std::isdigit(static_cast<unsigned char>(place[end])) != 0) ++end;
    if (end == colon + 1 || end - colon > 10 || end + 1 >= place.size() || place[end] != ':' || place[end + 1] != ' ')
      continue;
    throw ConfigError(place.substr(0, colon), std::stoi(place.substr(colon + 1, end - colon - 1)),
                      place.substr(end + 2), message);
  }
  throw ConfigError(place, 0, "", message);
}

}  // namespace memsweep::config::detail

namespace memsweep {

std::vector<std::string> builtin_placeholder_names() {
  std::vector<std::string> names{"dataset",
                                 "model",
                                 "channels",
                                 "optimizer",
                                 "momentum",
                                 "beta1",
                                 "beta2",
                                 "epsilon",
                                 "learning_rate",
                                 "epochs",
                                 "batch_size",
                                 "hidden",
                                 "memory_plan",
                                 "recompute_every",
                                 "seed",
                                 "synthetic.shape",
                                 "synthetic.classes",
                                 "synthetic.train_size",
                                 "synthetic.test_size",
                                 "synthetic.noise",
                                 "trial_id",
                                 "repeat",
                                 "attempt",
                                 "data_dir",
                                 "trial_dir",
                                 "gpu",
                                 "threads",
                                 "max_train_examples",
                                 "max_test_examples"};
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace memsweep
