// Fuzz target: CIFAR-10 binary batches. The input is a batch file: it is
// checked (count_cifar_records) and unpacked (make_cifar_split) alone, then
// cut in two halves unpacked as two consecutive batches, as the loader
// hands a split's files over. DatasetError (an InputError) is the expected
// answer to bad input; anything else escaping, or a crash, is a finding.

#include "dataset/cifar.hpp"
#include "memsweep/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

using memsweep::dataset::detail::CifarBatchBytes;

void try_split(std::vector<CifarBatchBytes> batches) {
  try {
    for (const CifarBatchBytes& batch : batches)
      (void)memsweep::dataset::detail::count_cifar_records(batch.bytes, batch.source_name);
  } catch (const memsweep::InputError&) {
  }
  try {
    (void)memsweep::dataset::detail::make_cifar_split(std::move(batches));
  } catch (const memsweep::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::size_t half = size / 2;
  try_split({{"data_batch_1.bin", std::vector<std::uint8_t>(data, data + size)}});
  try_split({{"data_batch_1.bin", std::vector<std::uint8_t>(data, data + half)},
             {"data_batch_2.bin", std::vector<std::uint8_t>(data + half, data + size)}});
  return 0;
}
