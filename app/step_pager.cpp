#include "step_pager.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace attn::cli {

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

namespace {

// What the signal handlers read. The settings are saved before any handler is installed and
// not changed while one is; the flags are sig_atomic_t.
termios g_saved{};                         // the terminal's settings before the pager
volatile sig_atomic_t g_in_fd = -1;        // the terminal in raw mode, or -1
volatile sig_atomic_t g_out_fd = -1;       // where the prompt is
volatile sig_atomic_t g_prompt_shown = 0;  // the cursor is on the prompt's line
volatile sig_atomic_t g_resumed = 0;       // SIGCONT came: raw mode and the screen to redo
volatile sig_atomic_t g_wake_fd = -1;      // a pipe's end that wakes the wait for a key

constexpr std::string_view kErase = "\r\x1b[2K";  // the cursor's line cleared, column 1

// The signals that end the process (Ctrl-C, Ctrl-\, kill, a closed terminal), then the ones
// that stop and continue it.
constexpr std::array kEndSignals = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
constexpr std::array kAllSignals = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT};

// The prompt erased (if it is on screen) and the terminal's settings restored.
// Async-signal-safe: write and tcsetattr only.
void leave_raw_mode() {
  if (g_prompt_shown != 0) {
    const ssize_t ignored = ::write(g_out_fd, kErase.data(), kErase.size());
    static_cast<void>(ignored);  // nothing to be done about it in a handler
    g_prompt_shown = 0;
  }
  ::tcsetattr(g_in_fd, TCSANOW, &g_saved);
}

// The terminal as it was, and `signal` back to its default action. Async-signal-safe.
void leave_for_default(int signal) {
  leave_raw_mode();
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
}

// SIGINT, SIGQUIT, SIGTERM, SIGHUP: the terminal as it was, then the signal's own action. The
// signal is blocked in its handler, so the raised one is delivered when the handler returns.
extern "C" void on_end_signal(int signal) {
  const int saved = errno;
  leave_for_default(signal);
  ::raise(signal);
  errno = saved;
}

extern "C" void on_suspend(int signal);

// SIGCONT (after Ctrl-Z, SIGSTOP): the pager is told to make the terminal raw again and draw the
// step again. The handler may run on any thread (the library's workers stay), so it wakes the
// wait for a key through a pipe rather than by interrupting it.
void wake_pager() {
  g_resumed = 1;
  if (g_wake_fd >= 0) {
    const ssize_t ignored = ::write(g_wake_fd, "c", 1);
    static_cast<void>(ignored);  // a full pipe has a wake-up in it already
  }
}

// The pager's handler for `signal`, which blocks the other signals that end or stop the process
// while it runs.
struct sigaction pager_action(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  for (const int s : kEndSignals) sigaddset(&action.sa_mask, s);
  sigaddset(&action.sa_mask, SIGTSTP);
  return action;
}

// SIGTSTP (Ctrl-Z): the terminal as it was, then the process stops; it goes on here after
// SIGCONT (whose handler asks for raw mode again).
extern "C" void on_suspend(int signal) {
  const int saved = errno;
  leave_for_default(signal);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signal);  // stops here until SIGCONT (not at all in an orphaned process group)
  const struct sigaction again = pager_action(on_suspend);
  ::sigaction(signal, &again, nullptr);
  wake_pager();  // the settings were restored: raw mode again, in either case
  errno = saved;
}

extern "C" void on_resume(int) {
  const int saved = errno;
  wake_pager();
  errno = saved;
}

// The terminal's settings, set again when the call is interrupted: started in the background,
// the process stops (SIGTTOU) until `fg`, whose SIGCONT interrupts tcsetattr.
bool set_attributes(const termios& settings) {
  int result = 0;
  do {
    result = ::tcsetattr(g_in_fd, TCSANOW, &settings);
  } while (result != 0 && errno == EINTR);
  return result == 0;
}

// Raw mode for the pager's lifetime: the settings saved, the handlers installed, then single
// keys without echo; the destructor undoes all three, in the other order.
class RawTerminal {
 public:
  RawTerminal(int in_fd, int out_fd) {
    if (::tcgetattr(in_fd, &g_saved) != 0) return;
    g_in_fd = in_fd;
    g_out_fd = out_fd;
    g_prompt_shown = 0;
    g_resumed = 0;
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) == 0) {
      g_wake_fd = wake_[1];
    } else {
      wake_[0] = wake_[1] = -1;  // then a SIGCONT on the main thread interrupts the wait
    }
    for (std::size_t i = 0; i < kAllSignals.size(); ++i) {
      const int signal = kAllSignals[i];
      if (::sigaction(signal, nullptr, &old_[i]) != 0) continue;
      if (old_[i].sa_handler == SIG_IGN && signal != SIGCONT) continue;  // nohup: stays ignored
      const struct sigaction action = pager_action(signal == SIGTSTP   ? on_suspend
                                                   : signal == SIGCONT ? on_resume
                                                                       : on_end_signal);
      installed_[i] = ::sigaction(signal, &action, nullptr) == 0;
    }
    active_ = raw();
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

  ~RawTerminal() {
    if (g_in_fd < 0) return;
    const int saved = errno;
    set_attributes(g_saved);
    for (std::size_t i = 0; i < kAllSignals.size(); ++i) {
      if (installed_[i]) ::sigaction(kAllSignals[i], &old_[i], nullptr);
    }
    g_in_fd = -1;
    g_wake_fd = -1;
    for (const int fd : wake_) {
      if (fd >= 0) ::close(fd);
    }
    errno = saved;
  }

  // The read end of the wake-up pipe, or -1.
  int wake_fd() const { return wake_[0]; }

  // False when the terminal's settings could not be read or set: no pauses then.
  bool active() const { return active_; }

  // Single keys, no echo; Ctrl-C and Ctrl-Z still signals. Again after SIGCONT.
  bool raw() {
    termios t = g_saved;
    t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    return set_attributes(t);
  }

 private:
  std::array<struct sigaction, kAllSignals.size()> old_{};
  std::array<bool, kAllSignals.size()> installed_{};
  int wake_[2] = {-1, -1};  // SIGCONT's handler writes, the wait for a key reads
  bool active_ = false;
};

enum class Key { kNone, kNext, kBack, kQuit, kHelp, kInterrupt };

// The next byte of an escape sequence: its bytes come together, so a lone ESC (nothing within
// 50 ms) is a key of its own.
bool next_byte(int fd, unsigned char& c) {
  pollfd p{fd, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, 50);
  } while (ready < 0 && errno == EINTR);
  return ready > 0 && ::read(fd, &c, 1) == 1;
}

// After ESC: → is ESC [ C, or ESC O C in the terminal's application mode; ← ends in D. With a
// modifier (ESC [ 1 ; 2 C) the final byte is the same.
Key read_escape(int fd) {
  unsigned char c = 0;
  if (!next_byte(fd, c) || (c != '[' && c != 'O')) return Key::kNone;
  for (int i = 0; i < 16; ++i) {
    if (!next_byte(fd, c)) return Key::kNone;
    if (c >= 0x40 && c <= 0x7e) return c == 'C' ? Key::kNext : c == 'D' ? Key::kBack : Key::kNone;
  }
  return Key::kNone;
}

// One key, or kNone: a key the pager ignores, a wait interrupted by a signal or woken by
// SIGCONT's handler (whose wake-ups are read here). kQuit at the end of input or on a read
// error (the terminal is gone).
Key read_key(int fd, int wake_fd) {
  std::array<pollfd, 2> wait = {pollfd{fd, POLLIN, 0}, pollfd{wake_fd, POLLIN, 0}};
  const int ready = ::poll(wait.data(), wake_fd >= 0 ? 2 : 1, -1);
  if (ready < 0) return errno == EINTR ? Key::kNone : Key::kQuit;
  if (wake_fd >= 0 && (wait[1].revents & POLLIN) != 0) {
    char drained[16];
    while (::read(wake_fd, drained, sizeof drained) > 0) {
    }
    return Key::kNone;
  }
  unsigned char c = 0;
  const ssize_t n = ::read(fd, &c, 1);
  if (n < 0 && errno == EINTR) return Key::kNone;
  if (n <= 0) return Key::kQuit;
  switch (c) {
    case '\r':
    case '\n':
    case ' ':
      return Key::kNext;
    case 'b':
    case 'B':
      return Key::kBack;
    case 'q':
    case 'Q':
    case 0x04:  // Ctrl-D
      return Key::kQuit;
    case '?':
      return Key::kHelp;
    case 0x03:  // Ctrl-C, where the terminal does not make it a signal
      return Key::kInterrupt;
    case 0x1b:
      return read_escape(fd);
    default:
      return Key::kNone;
  }
}

// "-- step 3/11  Enter: next, b: back, q: quit, ?: keys --", or a shorter one that fits in
// `width` columns (all ASCII, one column a byte); never the last column, where a terminal
// wraps.
std::string prompt_text(std::size_t step, std::size_t n, std::size_t width) {
  const std::string at = std::to_string(step) + "/" + std::to_string(n);
  const bool last = step == n;
  const std::array<std::string, 3> candidates = {
      "-- step " + at + (last ? " (the last)  Enter: end" : "  Enter: next") +
          ", b: back, q: quit, ?: keys --",
      "-- " + at + (last ? " end" : "") + "  Enter b q ? --",
      at + " ?",
  };
  for (const std::string& text : candidates) {
    if (text.size() < width) return text;
  }
  return candidates.back().substr(0, width > 1 ? width - 1 : 0);
}

// The keys, as a list whose lines fit in `width` columns (67 or 24 wide): a terminal would wrap
// a longer line.
std::string_view keys_text(std::size_t width) {
  constexpr std::string_view kKeys =
      "\nkeys:\n"
      "  Enter, space, \u2192   the next step (after the last one: the end)\n"
      "  b, \u2190              the previous step, drawn again\n"
      "  q, Ctrl-D         quit\n"
      "  ?                 these keys\n";
  constexpr std::string_view kShortKeys =
      "\nkeys:\n"
      "  Enter, space, \u2192: next\n"
      "  b, \u2190: back\n"
      "  q, Ctrl-D: quit\n"
      "  ?: these keys\n";
  return width > 67 ? kKeys : kShortKeys;
}

// The prompt, on the cursor's line (cleared first: after SIGCONT the old one may be there).
bool show_prompt(int fd, const std::string& prompt) {
  g_prompt_shown = 1;  // before the write: a signal in the middle of it clears the line
  return write_all(fd, std::string(kErase) + prompt);
}

bool erase_prompt(int fd) {
  if (!write_all(fd, kErase)) return false;
  g_prompt_shown = 0;
  return true;
}

// A block, ending with a newline so that the prompt has a line of its own.
bool show_block(int fd, const std::string& block) {
  if (!write_all(fd, block)) return false;
  return block.empty() || block.back() == '\n' || write_all(fd, "\n");
}

}  // namespace

bool page_steps(const std::vector<std::string>& blocks, int in_fd, int out_fd, std::size_t width) {
  if (blocks.empty()) return true;
  RawTerminal terminal(in_fd, out_fd);
  if (!terminal.active()) {
    for (const std::string& block : blocks) {
      if (!write_all(out_fd, block)) return false;
    }
    return true;
  }
  const std::size_t n = blocks.size();
  std::size_t at = 0;  // the block on screen
  if (!show_block(out_fd, blocks[at])) return false;
  for (;;) {
    const std::string prompt = prompt_text(at + 1, n, width);
    if (!show_prompt(out_fd, prompt)) return false;
    Key key = Key::kNone;
    while (key == Key::kNone) {
      key = read_key(in_fd, terminal.wake_fd());
      if (g_resumed != 0) {
        // Back from Ctrl-Z (or SIGSTOP): the shell has written on the screen and may have
        // changed the settings. Raw mode again, and the step drawn again under the shell's lines.
        g_resumed = 0;
        terminal.raw();
        if (!erase_prompt(out_fd) || !show_block(out_fd, blocks[at]) ||
            !show_prompt(out_fd, prompt)) {
          return false;
        }
      }
    }
    if (!erase_prompt(out_fd)) return false;
    switch (key) {
      case Key::kQuit:
        return true;
      case Key::kInterrupt:
        ::raise(SIGINT);  // the handler restores the terminal; returns only if SIGINT is ignored
        return true;
      case Key::kHelp:
        if (!write_all(out_fd, keys_text(width))) return false;
        continue;
      case Key::kNext:
        if (at + 1 == n) return true;
        ++at;
        break;
      case Key::kBack:
        if (at == 0) continue;  // nothing before the first step
        --at;
        break;
      case Key::kNone:
        break;
    }
    if (!show_block(out_fd, blocks[at])) return false;
  }
}

}  // namespace attn::cli
