#pragma once
// How a failure becomes a trial row's message: one line (the results file's
// message column and the progress line are single lines, while loaders and
// oneDNN write several).

#include <string>
#include <string_view>

namespace memsweep::runner_detail {

// Line breaks and the indentation after them become one space; surrounding
// white space is dropped.
std::string one_line(std::string_view text);

// "out of memory (std::bad_alloc) while WHAT".
std::string out_of_memory_message(std::string_view what);

}  // namespace memsweep::runner_detail
