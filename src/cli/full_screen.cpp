#include "cli/full_screen.hpp"

#include "watch/charts.hpp"

#include <curses.h>
#include <langinfo.h>
#include <unistd.h>

#include <clocale>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace memsweep::cli {
namespace {

// Set by the signal handlers; the wait loop reads it. Ctrl-C must not kill
// the process before endwin() has given the terminal back.
volatile std::sig_atomic_t quit_signal = 0;

extern "C" void on_quit_signal(int signal_number) { quit_signal = signal_number; }

void catch_quit_signals() {
  struct sigaction action {};
  action.sa_handler = on_quit_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked getch() returns at once
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal_number, &action, nullptr);
}

constexpr int kEscape = 27;

}  // namespace

FullScreen::FullScreen() {
  if (::isatty(STDOUT_FILENO) == 0 || ::isatty(STDIN_FILENO) == 0)
    throw std::runtime_error("the full-screen view needs a terminal");
  std::setlocale(LC_ALL, "");
  utf8_ = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  catch_quit_signals();
  if (initscr() == nullptr) throw std::runtime_error("cannot start the terminal's full-screen mode");
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);
}

FullScreen::~FullScreen() {
  curs_set(1);
  endwin();
}

int FullScreen::width() const { return COLS; }
int FullScreen::height() const { return LINES; }

void FullScreen::draw(const std::vector<std::string>& lines, const std::string& footer) {
  // erase(), unlike clear(), only blanks curses' copy of the screen: the
  // refresh then sends what differs, so nothing flickers.
  erase();
  const int rows = height();
  // A line wider than the screen would wrap into the next row: cut each one.
  for (int row = 0; row < rows - 1 && row < static_cast<int>(lines.size()); ++row)
    mvaddstr(row, 0, watch::fit(lines[static_cast<std::size_t>(row)], width()).c_str());
  attron(A_REVERSE);
  mvaddstr(rows - 1, 0, watch::fit(footer, width()).c_str());
  attroff(A_REVERSE);
  refresh();
}

bool FullScreen::wait_for_quit(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (quit_signal == 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    wtimeout(stdscr, static_cast<int>(left.count()));
    const int key = getch();
    if (key == 'q' || key == 'Q' || key == kEscape) return true;
    if (key == KEY_RESIZE) return false;  // redraw at the new size now
  }
  return true;
}

}  // namespace memsweep::cli
