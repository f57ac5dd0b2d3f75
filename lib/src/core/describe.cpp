#include "attn/describe.hpp"

#include "attn/steps.hpp"

namespace attn {

std::string_view describe_step(StepKind kind) { return step_info(kind).description; }

std::string_view describe_step(std::string_view id) {
  const std::optional<StepKind> kind = step_kind(id);
  return kind ? step_info(*kind).description : std::string_view();
}

}  // namespace attn
