#include "memsweep/trainer.hpp"

#include <dnnl.h>
#include <fmt/format.h>

namespace memsweep {

std::string onednn_version() {
  // The library actually loaded, which may differ from the headers built against.
  const dnnl_version_t* version = dnnl_version();
  return fmt::format("oneDNN {}.{}.{} (git {})", version->major, version->minor, version->patch, version->hash);
}

}  // namespace memsweep
