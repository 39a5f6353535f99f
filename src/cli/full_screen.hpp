#pragma once
// The terminal of `memsweep watch`'s full-screen view, through ncursesw: the
// alternate screen, redrawn without flicker (curses sends only the cells that
// changed), the size followed as the terminal is resized, and the terminal
// given back as it was on every way out: return, exception, q, Ctrl-C.

#include <chrono>
#include <string>
#include <vector>

namespace memsweep::cli {

class FullScreen {
 public:
  // Takes over the terminal; throws std::runtime_error when stdout is not one.
  FullScreen();
  ~FullScreen();
  FullScreen(const FullScreen&) = delete;
  FullScreen& operator=(const FullScreen&) = delete;

  int width() const;
  int height() const;
  // Whether the terminal takes UTF-8 (the charts' block glyphs), from the locale.
  bool utf8() const { return utf8_; }

  // `lines` from the top (cut to the width), `footer` on the last row in
  // reverse video; the rest of the screen is blank.
  void draw(const std::vector<std::string>& lines, const std::string& footer);

  // Waits up to `wait` for a key. True when the user asked to quit (q,
  // Esc, Ctrl-C, or SIGTERM/SIGHUP from outside); a resize returns early.
  bool wait_for_quit(std::chrono::milliseconds wait);

 private:
  bool utf8_ = false;
};

}  // namespace memsweep::cli
