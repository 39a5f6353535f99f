#pragma once
// SearchPoint's fields, listed once for each protocol that carries a
// search's probe (the trial protocol's job, the sweep's assignment), so
// that the field codec sends a probe whole and the lists cannot differ. A
// field added to SearchPoint is added here; the protocols' static_asserts
// (lists_every_member) fail to compile until it is.

#include "common/field_codec.hpp"
#include "memsweep/config.hpp"

namespace memsweep::config {

struct SearchPointFields {
  constexpr void operator()(FieldsOf<SearchPoint> auto& point, auto&& each) const {
    each("search", point.search);
    each("probe", point.probe);
    each("value", point.value);
    each("limit_bytes", point.limit_bytes);
    each("full", point.full);
    each("gpu", point.gpu);
  }
};

}  // namespace memsweep::config
