#pragma once

#include <stdexcept>
#include <string>

namespace attn {

// A setting that an error's remedy changes. The library names settings, never a program's
// flags: a program adds how its users change the setting (attn-trace: "with --max-memory").
enum class Setting {
  kNone,
  kMaxMemory,   // the memory limit
  kWidths,      // d_kq and d_v together (d_out)
  kReplace,     // replacing an earlier export or file
  kModelHeads,  // a checkpoint's head count, where it has no config.json
  kRopeTheta,   // the rotary embeddings' base θ
};

// The one exception type the library throws for a failed precondition or bad input.
// what() names the offending value and says what is allowed, in one line, ready to be shown to
// a user after "attn-trace: error: ", followed by how to change `setting()` when there is one.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, Setting setting = Setting::kNone)
      : std::runtime_error(message), setting_(setting) {}
  Setting setting() const { return setting_; }

 private:
  Setting setting_;
};

}  // namespace attn
