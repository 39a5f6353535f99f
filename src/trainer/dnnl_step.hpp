#pragma once
// oneDNN wrapped once: errors become TrainerError naming what was attempted,
// and primitives run through the C API with argument lists built once.

#include "memsweep/trainer.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <utility>
#include <vector>

namespace memsweep::trainer::detail {

// Runs `build` and turns a dnnl::error into a TrainerError about `what`.
template <typename Build>
auto dnnl_call(const std::string& what, Build&& build) {
  try {
    return build();
  } catch (const dnnl::error& error) {
    throw TrainerError(what + ": " + error.what() + " (oneDNN status " + std::to_string(error.status) + ")");
  }
}

// A primitive and its arguments, ready to run. dnnl::primitive::execute()
// copies its argument map into a new std::vector on every call; a Step keeps
// the C argument array and calls dnnl_primitive_execute itself, so running it
// allocates nothing in memsweep's code.
class Step {
 public:
  Step(std::string what, const_dnnl_primitive_desc_t pd, const std::vector<std::pair<int, dnnl::memory>>& args);

  void run(const dnnl::stream& stream) const;
  const std::string& what() const { return what_; }

 private:
  std::string what_;
  dnnl::primitive primitive_;
  std::vector<dnnl::memory> keep_alive_;
  std::vector<dnnl_exec_arg_t> args_;
};

inline std::size_t floats_in(const dnnl::memory::desc& desc) { return desc.get_size() / sizeof(float); }

}  // namespace memsweep::trainer::detail
