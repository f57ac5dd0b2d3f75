#pragma once

// The names of every enum setting, one table per enum: the JSON trace's settings, the text's
// header, and the command line's values (which CLI11 binds straight into these types) all read
// them. name_of and parse_name work on any of them.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/output.hpp"
#include "attn/trace.hpp"

namespace attn {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

// The table of an enum: every value and its name, in the order help lists them.
template <typename Enum>
std::span<const EnumName<Enum>> names_of();
template <>
std::span<const EnumName<TorchKernel>> names_of<TorchKernel>();
template <>
std::span<const EnumName<MatmulKernel>> names_of<MatmulKernel>();
template <>
std::span<const EnumName<MaskedRows>> names_of<MaskedRows>();
template <>
std::span<const EnumName<MultiheadForm>> names_of<MultiheadForm>();
template <>
std::span<const EnumName<WeightInit>> names_of<WeightInit>();
template <>
std::span<const EnumName<OutputFormat>> names_of<OutputFormat>();
template <>
std::span<const EnumName<Loss>> names_of<Loss>();
template <>
std::span<const EnumName<RopePairs>> names_of<RopePairs>();

// The name of a value ("?" for none).
template <typename Enum>
std::string_view name_of(Enum value) {
  for (const EnumName<Enum>& n : names_of<Enum>()) {
    if (n.value == value) return n.name;
  }
  return "?";
}

// The value of a name, if the table has it.
template <typename Enum>
std::optional<Enum> value_named(std::string_view name) {
  for (const EnumName<Enum>& n : names_of<Enum>()) {
    if (n.name == name) return n.value;
  }
  return std::nullopt;
}

// Every name, in the table's order.
template <typename Enum>
std::vector<std::string> all_names() {
  std::vector<std::string> names;
  for (const EnumName<Enum>& n : names_of<Enum>()) names.emplace_back(n.name);
  return names;
}

// value_named, refusing an unknown name: "multihead form 'x' is not known: allowed are wrapper,
// split". Throws Error.
[[noreturn]] void throw_unknown_name(std::string_view what, std::string_view name,
                                     const std::vector<std::string>& allowed);
template <typename Enum>
Enum parse_name(std::string_view what, std::string_view name) {
  if (const std::optional<Enum> v = value_named<Enum>(name)) return *v;
  throw_unknown_name(what, name, all_names<Enum>());
}

}  // namespace attn
