// Views of splits and datasets: what training reads, wherever the data live.

#include "memsweep/dataset.hpp"

#include <algorithm>

namespace memsweep {

SplitView SplitView::head(std::size_t examples) const {
  const std::size_t kept = std::min(examples, size());
  SplitView view = *this;
  view.images = images.first(kept * shape.pixels());
  view.labels = labels.first(kept);
  return view;
}

SplitView view_of(const Split& split) {
  return SplitView{split.shape, split.classes, std::span<const float>(split.images),
                   std::span<const std::int32_t>(split.labels)};
}

DatasetView view_of(const Dataset& dataset) {
  return DatasetView{dataset.name, dataset.spec, view_of(dataset.train), view_of(dataset.test)};
}

}  // namespace memsweep
