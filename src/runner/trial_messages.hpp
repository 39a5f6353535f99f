#pragma once
// How a failure becomes a trial row's message: one line (the results file's
// message column and the progress line are single lines, while loaders and
// oneDNN write several).

#include <string>
#include <string_view>

namespace memsweep::runner::detail {

// Line breaks and the indentation after them become one space; surrounding
// white space is dropped.
std::string one_line(std::string_view text);

// When a trial ended, as far as the rank knows it: "at 1.25 s in epoch 2",
// "... (evaluating)", "at 0.40 s, before the first epoch". A program
// reports epochs only if it writes events lines: one that reported none is
// "at 36.00 s" (no epoch is invented), one that did names its last.
std::string when_text(double seconds, int epoch, bool evaluating, bool program);

// "out of memory (std::bad_alloc) while WHAT".
std::string out_of_memory_message(std::string_view what);

}  // namespace memsweep::runner::detail
