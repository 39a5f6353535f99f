#include "cli/results_path.hpp"

#include "memsweep/error.hpp"

#include <fmt/format.h>

#include <string_view>

namespace memsweep::cli {

std::filesystem::path results_path(const std::string& sweep_file, const std::string& output,
                                   const std::optional<std::string>& part_label) {
  const std::string stem = std::filesystem::path(sweep_file).stem().string();
  const std::string_view placeholder = kPartPlaceholder;
  const bool has_placeholder = output.find(placeholder) != std::string::npos;
  if (!part_label) {
    if (has_placeholder)
      throw InputError(fmt::format(
          "-o {}: {} stands for a part's label, and this sweep is not split: add --split-by FIELD (and, for run, "
          "--part K), or name one file",
          output, placeholder));
    return output.empty() ? std::filesystem::path(stem + ".h5") : std::filesystem::path(output);
  }
  if (output.empty()) return stem + "." + *part_label + ".h5";
  if (!has_placeholder)
    throw InputError(fmt::format(
        "-o {}: with --split-by, the results file must contain {} (each part writes its own file, {} replaced by "
        "the part's label, e.g. -o results.{}.h5)",
        output, placeholder, placeholder, placeholder));
  std::string path = output;
  for (std::size_t at = path.find(placeholder); at != std::string::npos;
       at = path.find(placeholder, at + part_label->size()))
    path.replace(at, placeholder.size(), *part_label);
  return path;
}

}  // namespace memsweep::cli
