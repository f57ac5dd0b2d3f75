#pragma once

// --step: a lesson that pauses after each step on a terminal and reads single keys.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attn::cli {

// Writes all of `text` to the file descriptor, retrying after EINTR and short writes; false
// (errno set) when a write fails. Every write of the tool's output goes through it.
bool write_all(int fd, std::string_view text);

// Shows `blocks` one at a time on the terminal: each block (one step, drawn by any format,
// ending with a newline) is written to `out_fd`, then a one-line prompt, and the pager waits for
// a single key on `in_fd`, which is put in raw mode (no ICANON, no ECHO; ISIG kept, so Ctrl-C is
// SIGINT) for the whole call:
//   Enter, space, → (ESC [ C or ESC O C)  the next block; at the last block, the end
//   b, ←  (ESC [ D or ESC O D)             the previous block, written again whole below
//   q, Ctrl-D, end of input, a read error  quit at once
//   ?                                      the keys, under the prompt; then the prompt again
//   Ctrl-C (SIGINT, or byte 0x03)          the terminal restored, then the default action
// Other keys are ignored. The pager pauses after every block, the last one included (so b
// still goes back from there); Enter, space or → at the last block ends it. The prompt names the
// step ("-- step 3/11 ... --"), is shortened to fit `width` columns, and is erased with
// "\r\x1b[2K" before anything else is written, so the cursor ends at the start of an empty line.
//
// The terminal's settings are restored on every way out: the return (a finished trace, q,
// Ctrl-D, a failed write) through an RAII guard, and SIGINT, SIGTERM, SIGHUP and SIGQUIT through
// handlers that erase the prompt, restore the settings and re-raise the signal with its default
// action (so the exit status is the signal's). SIGTSTP (Ctrl-Z) restores the settings before
// the process stops; SIGCONT puts the terminal back in raw mode and draws the step and the prompt
// again (started in the background, the pager waits for `fg`). The signals' earlier handlers
// are put back on return; a signal ignored before (nohup) stays ignored.
//
// Requires: `in_fd` is a terminal (else the blocks are written one after the other, without a
// pause). Returns false (errno set) when `out_fd` cannot be written; true otherwise, whether
// the trace was finished or quit.
bool page_steps(const std::vector<std::string>& blocks, int in_fd, int out_fd, std::size_t width);

}  // namespace attn::cli
