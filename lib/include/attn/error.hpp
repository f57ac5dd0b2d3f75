#pragma once

#include <stdexcept>
#include <string>

namespace attn {

// The one exception type the library throws for a failed precondition or bad input.
// what() names the offending value and says what is allowed, in one line, ready to be shown to
// a user after "attn-trace: error: ".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace attn
