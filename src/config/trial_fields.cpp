#include "config/trial_fields.hpp"
#include "common/duration_text.hpp"
#include "config/program_fields.hpp"

#include "memsweep/byte_size.hpp"
#include "memsweep/memory_plan.hpp"
#include "memsweep/model_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <variant>

namespace memsweep::config::detail {
namespace {

constexpr int kMaxImageSide = 4096;
constexpr int kMaxImageChannels = 64;
constexpr int kMaxClasses = 100'000;
constexpr int kMaxSyntheticExamples = 10'000'000;
constexpr double kMaxSyntheticNoise = 10.0;

using Apply = std::function<void(TrialSpec&, const FieldValue&)>;

int as_int(const FieldValue& field, std::int64_t min, std::int64_t max) {
  return static_cast<int>(expect_integer(field.value, field.place, min, max));
}

double positive_number(const FieldValue& field) {
  const double number = expect_number(field.value, field.place);
  if (!(number > 0.0)) fail(field.place, fmt::format("expected a number > 0, found {}", number));
  return number;
}

double fraction_below_one(const FieldValue& field) {
  const double number = expect_number(field.value, field.place);
  if (!(number >= 0.0 && number < 1.0))
    fail(field.place, fmt::format("expected a number ≥ 0 and < 1, found {}", number));
  return number;
}

// A list of whole numbers, each in [1, max_value], at most max_length long.
std::vector<int> width_list(const FieldValue& field, int max_length, int max_value, std::string_view what) {
  const TomlArray& items = expect_array(field.value, field.place);
  if (static_cast<int>(items.size()) > max_length)
    fail(field.place, fmt::format("expected at most {} {}, found {}", max_length, what, items.size()));
  std::vector<int> widths;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Place element{field.place.file, field.place.line, fmt::format("{}[{}]", field.place.key, i)};
    widths.push_back(static_cast<int>(expect_integer(items[i], element, 1, max_value)));
  }
  return widths;
}

// mem_budget: whole bytes, or a size as text; at most kMaxByteSize, which
// every int64 that holds a size downstream takes.
std::uint64_t byte_size_field(const FieldValue& f) {
  std::optional<std::uint64_t> bytes;
  bool too_large = false;
  if (f.value.is_integer() && !beyond_64_bits(f.value) && f.value.as_integer() > 0) {
    bytes = static_cast<std::uint64_t>(f.value.as_integer());
    too_large = *bytes > kMaxByteSize;
  } else if (f.value.is_string()) {
    bytes = parse_byte_size(f.value.as_string().str);
    too_large = is_too_large_byte_size(f.value.as_string().str);
  }
  too_large = too_large || beyond_64_bits(f.value);
  if (too_large)
    fail(f.place, fmt::format("expected a size of at most {}, found {}; for no budget, leave mem_budget out",
                              kMaxByteSizeText, describe(f.value)));
  if (!bytes) fail(f.place, fmt::format("expected {}, found {}", kByteSizeHelp, describe(f.value)));
  return *bytes;
}

// "40GiB", a number of bytes, or "device": the whole device.
std::uint64_t gpu_limit_field(const FieldValue& f) {
  if (f.value.is_string() && f.value.as_string().str == "device") return TrialSpec::kWholeDevice;
  if (f.value.is_string() && !parse_byte_size(f.value.as_string().str))
    fail(f.place,
         fmt::format("expected {}, or \"device\" for the whole device; found {}", kByteSizeHelp, describe(f.value)));
  return byte_size_field(f);
}

// timeout: seconds as a number, or a duration as text; at most
// kMaxDurationSeconds, so that no limit wraps round when the runner adds
// it to its clock.
double duration_field(const FieldValue& f) {
  std::optional<double> seconds;
  bool too_long = beyond_64_bits(f.value);
  if (f.value.is_integer() || f.value.is_floating()) {
    const double number = f.value.is_integer() ? static_cast<double>(f.value.as_integer()) : f.value.as_floating();
    if (number > 0.0) seconds = number;  // not NaN
    too_long = too_long || number > kMaxDurationSeconds;
  } else if (f.value.is_string()) {
    seconds = parse_duration(f.value.as_string().str);
    too_long = is_too_long_duration(f.value.as_string().str);
  }
  if (too_long)
    fail(f.place, fmt::format("expected a duration of at most {}, found {}; for no limit, leave timeout out",
                              kMaxDurationText, describe(f.value)));
  if (!seconds) fail(f.place, fmt::format("expected {}, found {}", kDurationHelp, describe(f.value)));
  return *seconds;
}

template <typename Kind>
Kind one_of(const FieldValue& field, std::initializer_list<std::pair<std::string_view, Kind>> names) {
  const std::string& text = expect_string(field.value, field.place);
  std::vector<std::string_view> known;
  for (const auto& [name, kind] : names) {
    if (name == text) return kind;
    known.push_back(name);
  }
  fail(field.place, fmt::format("unknown value \"{}\"; expected one of: {}", text, fmt::join(known, ", ")));
}

MemoryPlan memory_plan_field(const FieldValue& field) {
  const std::string& text = expect_string(field.value, field.place);
  if (const std::optional<MemoryPlan> plan = parse_memory_plan(text)) return *plan;
  fail(field.place, fmt::format("expected \"keep\", \"reuse\" or \"recompute\", found \"{}\"", text));
}

SyntheticSpec synthetic_spec(const FieldValue& field) {
  static const std::vector<std::string_view> kKeys{"shape", "classes", "train_size", "test_size", "noise", "seed"};
  const TomlTable& table = expect_table(field.value, field.place);
  reject_unknown_keys(table, field.place, kKeys);
  SyntheticSpec spec;
  const auto member = [&](std::string_view key) -> std::optional<FieldValue> {
    const auto it = table.find(std::string(key));
    if (it == table.end()) return std::nullopt;
    return FieldValue{it->second, place_of(it->second, fmt::format("{}.{}", field.place.key, key))};
  };
  if (const auto shape = member("shape")) {
    const TomlArray& dims = expect_array(shape->value, shape->place);
    if (dims.size() != 3)
      fail(shape->place, fmt::format("expected [channels, height, width], found {} values", dims.size()));
    spec.shape.channels = static_cast<int>(expect_integer(dims[0], shape->place, 1, kMaxImageChannels));
    spec.shape.height = static_cast<int>(expect_integer(dims[1], shape->place, 1, kMaxImageSide));
    spec.shape.width = static_cast<int>(expect_integer(dims[2], shape->place, 1, kMaxImageSide));
  }
  if (const auto classes = member("classes")) spec.classes = as_int(*classes, 2, kMaxClasses);
  if (const auto train = member("train_size")) spec.train_size = as_int(*train, 1, kMaxSyntheticExamples);
  if (const auto test = member("test_size")) spec.test_size = as_int(*test, 1, kMaxSyntheticExamples);
  if (const auto noise = member("noise")) {
    spec.noise = expect_number(noise->value, noise->place);
    if (spec.noise < 0.0 || spec.noise > kMaxSyntheticNoise)
      fail(noise->place, fmt::format("expected a number from 0 to {}, found {}", kMaxSyntheticNoise, spec.noise));
  }
  if (const auto seed = member("seed"))
    spec.seed = static_cast<std::uint64_t>(expect_integer(seed->value, seed->place, 0, INT64_MAX));
  return spec;
}

// The table of fields: the name a sweep file uses and how its value is read.
const std::vector<std::pair<std::string_view, Apply>>& field_table() {
  static const std::vector<std::pair<std::string_view, Apply>> kFields{
      {"dataset",
       [](TrialSpec& t, const FieldValue& f) {
         const std::string& name = expect_string(f.value, f.place);
         const auto kind = parse_dataset_name(name);
         if (!kind) fail(f.place, fmt::format("unknown dataset \"{}\"; expected one of: {}", name, kDatasetNames));
         t.dataset.kind = *kind;
       }},
      {"synthetic", [](TrialSpec& t, const FieldValue& f) { t.dataset.synthetic = synthetic_spec(f); }},
      {"model",
       [](TrialSpec& t, const FieldValue& f) {
         t.model =
             one_of<ModelKind>(f, {{"mlp", ModelKind::mlp}, {"cnn", ModelKind::cnn}, {"alexnet", ModelKind::alexnet}});
       }},
      {"channels",
       [](TrialSpec& t, const FieldValue& f) {
         t.channels = width_list(f, kMaxConvBlocks, kMaxLayerWidth, "convolution blocks");
       }},
      {"optimizer",
       [](TrialSpec& t, const FieldValue& f) {
         t.optimizer.kind = one_of<OptimizerKind>(
             f, {{"sgd", OptimizerKind::sgd}, {"momentum", OptimizerKind::momentum}, {"adam", OptimizerKind::adam}});
       }},
      {"momentum", [](TrialSpec& t, const FieldValue& f) { t.optimizer.momentum = fraction_below_one(f); }},
      {"beta1", [](TrialSpec& t, const FieldValue& f) { t.optimizer.beta1 = fraction_below_one(f); }},
      {"beta2", [](TrialSpec& t, const FieldValue& f) { t.optimizer.beta2 = fraction_below_one(f); }},
      {"epsilon", [](TrialSpec& t, const FieldValue& f) { t.optimizer.epsilon = positive_number(f); }},
      {"learning_rate", [](TrialSpec& t, const FieldValue& f) { t.learning_rate = positive_number(f); }},
      {"epochs", [](TrialSpec& t, const FieldValue& f) { t.epochs = as_int(f, 1, kMaxEpochs); }},
      {"batch_size", [](TrialSpec& t, const FieldValue& f) { t.batch_size = as_int(f, 1, kMaxBatchSize); }},
      {"hidden",
       [](TrialSpec& t, const FieldValue& f) {
         t.hidden = width_list(f, kMaxHiddenLayers, kMaxLayerWidth, "hidden layers");
       }},
      {"memory_plan", [](TrialSpec& t, const FieldValue& f) { t.memory_plan = memory_plan_field(f); }},
      // Read whatever the plan: a grid may cross it with memory_plan, and only
      // `recompute` uses it (canonical_text() leaves it out otherwise, as it
      // does an sgd trial's momentum).
      {"recompute_every",
       [](TrialSpec& t, const FieldValue& f) {
         t.recompute_every = as_int(f, kRecomputeEveryDefault, kMaxRecomputeEvery);
       }},
      {"seed",
       [](TrialSpec& t, const FieldValue& f) {
         t.seed = static_cast<std::uint64_t>(expect_integer(f.value, f.place, 0, INT64_MAX));
       }},
      {"mem_budget", [](TrialSpec& t, const FieldValue& f) { t.mem_budget_bytes = byte_size_field(f); }},
      {"timeout", [](TrialSpec& t, const FieldValue& f) { t.timeout_seconds = duration_field(f); }},
      {"gpus_per_trial", [](TrialSpec& t, const FieldValue& f) { t.gpus_per_trial = as_int(f, 0, kMaxGpusPerTrial); }},
      {"gpu_limit", [](TrialSpec& t, const FieldValue& f) { t.gpu_limit_bytes = gpu_limit_field(f); }},
  };
  return kFields;
}

const Apply& applier(std::string_view name) {
  for (const auto& [field, apply] : field_table())
    if (field == name) return apply;
  throw std::logic_error(fmt::format("no trial field named {}", name));
}

// Every pooling block halves the image (rounding down); a side of 0 means
// the model cannot be built.
void check_conv_fits_input(const TrialSpec& trial, const Place& place) {
  const ModelSpec model = model_spec(trial);
  const ImageShape out = conv_output_shape(model);
  if (out.height > 0 && out.width > 0) return;
  int pools = 0, fitting = 0;
  for (int side = std::min(model.input.height, model.input.width); side > 1; side /= 2) ++fitting;
  for (const ConvBlock& block : model.conv) pools += block.pool ? 1 : 0;
  fail(place, fmt::format("{} pooling blocks are too many for a {}x{} input: each 2x2 pooling halves it, so at most "
                          "{} fit",
                          pools, model.input.height, model.input.width, fitting));
}

}  // namespace

const std::vector<std::string_view>& trial_field_names() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> names;
    for (const auto& [name, apply] : field_table()) names.push_back(name);
    names.insert(names.end(), std::begin(kProgramFieldNames), std::end(kProgramFieldNames));
    return names;
  }();
  return kNames;
}

bool is_placement_field(std::string_view name) {
  return name == "mem_budget" || name == "timeout" || name == "gpus_per_trial" || name == "gpu_limit";
}

bool is_trial_field(std::string_view name) {
  const auto& names = trial_field_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

void check_field_value(std::string_view name, const FieldValue& field) {
  if (is_program_field(name)) return check_program_field(name, field);
  TrialSpec scratch;
  applier(name)(scratch, field);
}

TrialSpec apply_defaults(const TrialDraft& defaults, std::uint64_t sweep_seed) {
  TrialSpec trial;
  trial.seed = sweep_seed;
  for (const auto& [name, field] : defaults)
    if (!is_program_field(name)) applier(name)(trial, field);
  return trial;
}

TrialSpec build_trial(const TrialDraft& defaults, const TrialSpec& defaults_applied, const TrialDraft& own,
                      const Place& origin, const ProgramTables& programs) {
  // Each field sets its own members only, so the trial's own values applied
  // over the defaults' give what the merged draft would.
  TrialSpec trial = defaults_applied;
  for (const auto& [name, field] : own)
    if (!is_program_field(name)) applier(name)(trial, field);

  const auto place_for = [&](std::string_view field) {
    if (const auto it = own.find(field); it != own.end()) return it->second.place;
    if (const auto it = defaults.find(field); it != defaults.end()) return it->second.place;
    return Place{origin.file, origin.line, origin.key + "." + std::string(field)};
  };
  if (trial.model == ModelKind::mlp && trial.hidden.empty())
    fail(place_for("hidden"), "an MLP needs at least one hidden layer; expected a non-empty list of widths");
  if (trial.model == ModelKind::cnn && trial.channels.empty())
    fail(place_for("channels"), "a CNN needs at least one convolution block; expected a non-empty list of channels");
  if (trial.model != ModelKind::mlp)
    check_conv_fits_input(trial, place_for(trial.model == ModelKind::cnn ? "channels" : "model"));
  // Programs read the merged draft; memsweep's own trainer (no `program`)
  // needs none of it.
  if (defaults.count("program") > 0 || own.count("program") > 0) {
    TrialDraft merged = defaults;
    for (const auto& [name, value] : own) merged.insert_or_assign(name, value);
    apply_program_fields(merged, programs, trial);
  }
  const auto sets_visible_devices = [](const ProgramSpec& program) {
    return std::any_of(program.env.begin(), program.env.end(),
                       [](const auto& entry) { return entry.first == "CUDA_VISIBLE_DEVICES"; });
  };
  if (trial.program && sets_visible_devices(*trial.program) && trial.gpus_per_trial != 0)
    fail(place_for("gpus_per_trial"),
         "the program's env sets CUDA_VISIBLE_DEVICES, which memsweep sets to each trial's own GPUs; expected "
         "gpus_per_trial = 0 beside it (the program then chooses among the job's devices itself) or no "
         "CUDA_VISIBLE_DEVICES in env");
  if (!trial.program && trial.gpu_limit_bytes)
    fail(place_for("gpu_limit"), "memsweep's own trainer runs on the CPU; expected gpu_limit on a program's trial");
  if (trial.program && trial.gpu_limit_bytes && trial.gpus_per_trial == 0)
    fail(place_for("gpu_limit"), "gpus_per_trial = 0 gives the trial no GPU to limit; expected 1 or more GPUs");
  if (!trial.program && trial.gpus_per_trial.value_or(0) > 0)
    fail(place_for("gpus_per_trial"),
         "memsweep's own trainer runs on the CPU; expected gpus_per_trial = 0, or a program (gpus_per_trial gives a "
         "program its GPUs)");
  if (trial.program && trial.program->uses_gpu && trial.gpus_per_trial == 0)
    fail(place_for("gpus_per_trial"),
         fmt::format("the program names {{gpu}}, but gpus_per_trial = 0 gives the trial no GPU; expected 1 or more, "
                     "or a program without {{gpu}}"));
  trial.origin = fmt::format("{}:{} {}", origin.file, origin.line, origin.key);
  trial.id = trial_id(trial);
  return trial;
}

}  // namespace memsweep::config::detail

namespace memsweep {

TrialSpec trial_from_fields(const std::vector<TrialField>& fields, const std::string& source_name) {
  using namespace config::detail;
  const Place origin{source_name, 1, "trial[0]"};
  TrialDraft own;
  for (const TrialField& field : fields) {
    if (!is_trial_field(field.name))
      throw std::invalid_argument("trial_from_fields: \"" + field.name + "\" is not a trial field");
    TomlValue value = std::visit(
        [](const auto& given) {
          using Given = std::decay_t<decltype(given)>;
          if constexpr (std::is_same_v<Given, std::vector<std::int64_t>>)
            return TomlValue(TomlArray(given.begin(), given.end()));
          else
            return TomlValue(given);
        },
        field.value);
    own.insert_or_assign(field.name, FieldValue{std::move(value), Place{source_name, 1, "trial[0]." + field.name}});
  }
  // In key order, as a [[trial]] table's are checked.
  for (const auto& [name, field] : own) check_field_value(name, field);
  TrialSpec trial = build_trial({}, apply_defaults({}, SweepSpec{}.seed), own, origin, {});
  trial.plan_index = 0;
  return trial;
}

}  // namespace memsweep
