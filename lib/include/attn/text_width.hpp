#pragma once

// How many terminal columns UTF-8 text takes: East Asian wide and fullwidth characters take two,
// combining marks and zero-width characters none, everything else one.

#include <cstddef>
#include <string_view>

namespace attn {

// The display width of UTF-8 text (invalid bytes count one column each).
std::size_t display_width(std::string_view text);

}  // namespace attn
