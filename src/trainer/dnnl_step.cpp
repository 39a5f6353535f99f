#include "trainer/dnnl_step.hpp"

namespace memsweep::trainer::detail {

Step::Step(std::string what, const_dnnl_primitive_desc_t pd, const std::vector<std::pair<int, dnnl::memory>>& args)
    : what_(what), primitive_(dnnl_call("creating " + what, [&] { return dnnl::primitive(pd); })) {
  for (const auto& [arg, memory] : args) {
    keep_alive_.push_back(memory);
    args_.push_back(dnnl_exec_arg_t{arg, memory.get()});
  }
}

void Step::run(const dnnl::stream& stream) const {
  const dnnl_status_t status =
      dnnl_primitive_execute(primitive_.get(), stream.get(), static_cast<int>(args_.size()), args_.data());
  if (status != dnnl_success)
    throw TrainerError("running " + what_ + " failed (oneDNN status " + std::to_string(status) + ")");
}

}  // namespace memsweep::trainer::detail
