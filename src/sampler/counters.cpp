#include "sampler/counters.hpp"

#include <fmt/format.h>
#include <papi.h>

#include <mutex>
#include <string_view>

namespace memsweep::sampler::detail {
namespace {

// PAPI's library state is process-global and its name-lookup calls are not
// documented as thread-safe: initialise once, then serialise every call.
std::mutex& papi_mutex() {
  static std::mutex mutex;
  return mutex;
}

void ensure_papi() {
  static const int status = [] {
    const int version = PAPI_library_init(PAPI_VER_CURRENT);
    if (version == PAPI_VER_CURRENT) return PAPI_OK;
    return version > 0 ? PAPI_EINVAL : version;  // positive: a different PAPI than the headers
  }();
  if (status != PAPI_OK)
    throw CounterError(fmt::format("PAPI could not start (PAPI_library_init): {}", PAPI_strerror(status)), status);
}

std::string_view text_of(const char* field) { return field; }

// The component that counts CPU events, in PAPI 7.0's own name for it.
constexpr const char* kCpuComponent = "perf_event";

class Papi final : public EventNamer {
 public:
  PapiEvent resolve(const std::string& name) const override;
  std::string version() const override;
  PapiCpuComponent cpu_component() const override;
};

}  // namespace

PapiEvent Papi::resolve(const std::string& name) const {
  const std::lock_guard lock(papi_mutex());
  ensure_papi();
  int code = 0;
  if (const int status = PAPI_event_name_to_code(name.c_str(), &code); status != PAPI_OK)
    throw CounterError(fmt::format("PAPI does not know this event here: {}", PAPI_strerror(status)), status);
  PAPI_event_info_t info{};
  if (const int status = PAPI_get_event_info(code, &info); status != PAPI_OK)
    throw CounterError(fmt::format("PAPI could not describe it: {}", PAPI_strerror(status)), status);

  PapiEvent event;
  event.name = name;
  event.description = text_of(info.short_descr).empty() ? info.long_descr : info.short_descr;
  if (!IS_PRESET(code)) {
    event.terms.push_back({info.symbol, 1});
    return event;
  }
  if (info.count == 0)
    throw CounterError("PAPI has no native events for this preset on this CPU (papi_avail lists presets)",
                       PAPI_ENOEVNT);
  // PAPI's derivations by name; sums and differences are combined by the
  // counter source, anything else (postfix formulas) is left out.
  const std::string_view derived = info.derived;
  int rest_sign = 1;
  if (derived == "DERIVED_SUB") {
    rest_sign = -1;
  } else if (derived != "NOT_DERIVED" && derived != "DERIVED_ADD" && !derived.empty()) {
    throw CounterError(fmt::format("PAPI derives this preset as {}, which memsweep does not combine", derived),
                       PAPI_ENOSUPP);
  }
  for (unsigned i = 0; i < info.count; ++i) event.terms.push_back({info.name[i], i == 0 ? 1 : rest_sign});
  return event;
}

std::string Papi::version() const {
  const std::lock_guard lock(papi_mutex());
  ensure_papi();
  const int version = PAPI_get_opt(PAPI_LIB_VERSION, nullptr);
  return fmt::format("PAPI {}.{}.{}.{}", PAPI_VERSION_MAJOR(version), PAPI_VERSION_MINOR(version),
                     PAPI_VERSION_REVISION(version), PAPI_VERSION_INCREMENT(version));
}

PapiCpuComponent Papi::cpu_component() const {
  const std::lock_guard lock(papi_mutex());
  ensure_papi();
  PapiCpuComponent state;
  state.name = kCpuComponent;
  const int index = PAPI_get_component_index(kCpuComponent);
  const PAPI_component_info_t* info = index >= 0 ? PAPI_get_component_info(index) : nullptr;
  if (info == nullptr) {
    state.reason = "this PAPI was built without it";
    return state;
  }
  state.active = info->disabled == 0;
  state.reason = state.active ? "" : text_of(info->disabled_reason);
  if (!state.active && state.reason.empty()) state.reason = PAPI_strerror(info->disabled);
  state.native_events = info->num_native_events;
  for (const char* pmu : info->pmu_names)
    if (pmu != nullptr) state.pmus.emplace_back(pmu);
  return state;
}

const EventNamer& papi() {
  static const Papi instance;
  return instance;
}

}  // namespace memsweep::sampler::detail
