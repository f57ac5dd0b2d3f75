#include "attn/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "attn/error.hpp"

namespace attn {

namespace {

constexpr std::array<EnumName<TorchKernel>, 2> kTorchKernels = {
    {{TorchKernel::kAvx2, "avx2"}, {TorchKernel::kDefault, "default"}}};
constexpr std::array<EnumName<MatmulKernel>, 3> kMatmulKernels = {
    {{MatmulKernel::kAuto, "auto"},
     {MatmulKernel::kReference, "reference"},
     {MatmulKernel::kBlocked, "blocked"}}};
constexpr std::array<EnumName<MaskedRows>, 2> kMaskedRows = {
    {{MaskedRows::kNan, "nan"}, {MaskedRows::kZero, "zero"}}};
constexpr std::array<EnumName<MultiheadForm>, 2> kMultiheadForms = {
    {{MultiheadForm::kWrapper, "wrapper"}, {MultiheadForm::kSplit, "split"}}};
constexpr std::array<EnumName<WeightInit>, 3> kWeightInits = {
    {{WeightInit::kRand, "rand"},
     {WeightInit::kRandTransposed, "rand-transposed"},
     {WeightInit::kLinear, "linear"}}};

constexpr std::array<EnumName<OutputFormat>, 9> kOutputFormats = {
    {{OutputFormat::kText, "text"},
     {OutputFormat::kJson, "json"},
     {OutputFormat::kCsv, "csv"},
     {OutputFormat::kMarkdown, "markdown"},
     {OutputFormat::kHeatmap, "heatmap"},
     {OutputFormat::kSummary, "summary"},
     {OutputFormat::kOverview, "overview"},
     {OutputFormat::kSvg, "svg"},
     {OutputFormat::kHtml, "html"}}};

constexpr std::array<EnumName<Loss>, 2> kLosses = {{{Loss::kSum, "sum"}, {Loss::kMse, "mse"}}};

}  // namespace

template <>
std::span<const EnumName<Loss>> names_of<Loss>() {
  return kLosses;
}

template <>
std::span<const EnumName<OutputFormat>> names_of<OutputFormat>() {
  return kOutputFormats;
}

namespace {
constexpr double kSvgFigureValue = 125.0;  // output.hpp tells how it was measured
}  // namespace

OutputCost export_cost(bool figures) {
  // Its manifest: an entry of a step's names, shape and labels, built whole before it is written
  // (--decode's many small steps, runs of 1,000 and 2,000 tokens: 1.15 KiB a step and 3.7 times
  // each label, and a tenth more).
  OutputCost cost{.per_step = 1300.0, .label_copies = 4.0};
  if (figures) cost.per_figure_value = kSvgFigureValue;
  return cost;
}

OutputCost output_cost(OutputFormat format, int precision) {
  const double decimals = 1.5 * static_cast<double>(std::max(precision, 0));
  switch (format) {
    case OutputFormat::kCsv:
      return {.per_value = 60.0, .per_step = 128.0, .label_copies = 3.0, .labels_per_cell = true};
    case OutputFormat::kJson:
      return {.per_value = 30.0, .per_step = 1024.0, .label_copies = 3.5};
    case OutputFormat::kMarkdown:
      return {.per_value = 26.0 + decimals, .per_step = 448.0, .label_copies = 3.0};
    case OutputFormat::kHeatmap:
      return {.per_value = 18.0, .per_value_alone = 40.0, .per_step = 384.0, .label_copies = 2.0};
    case OutputFormat::kSvg:
      return {.label_copies = 2.0, .per_figure_value = kSvgFigureValue, .figure_of_step = true};
    case OutputFormat::kHtml:
      return {.per_value = 80.0, .per_step = 6656.0, .label_copies = 6.0};
    case OutputFormat::kSummary:
      return {.per_value = 0.0, .per_step = 448.0, .label_copies = 1.5};
    case OutputFormat::kOverview:
      return {};
    case OutputFormat::kText:
      break;
  }
  return {.per_value = 30.0 + decimals,
          .per_value_alone = 45.0 + 2.0 * decimals,
          .per_step = 832.0,
          .label_copies = 5.0};
}

template <>
std::span<const EnumName<TorchKernel>> names_of<TorchKernel>() {
  return kTorchKernels;
}
template <>
std::span<const EnumName<MatmulKernel>> names_of<MatmulKernel>() {
  return kMatmulKernels;
}
template <>
std::span<const EnumName<MaskedRows>> names_of<MaskedRows>() {
  return kMaskedRows;
}
template <>
std::span<const EnumName<MultiheadForm>> names_of<MultiheadForm>() {
  return kMultiheadForms;
}
template <>
std::span<const EnumName<WeightInit>> names_of<WeightInit>() {
  return kWeightInits;
}
constexpr std::array<EnumName<RopePairs>, 2> kRopePairs = {
    {{RopePairs::kHalf, "half"}, {RopePairs::kInterleaved, "interleaved"}}};
template <>
std::span<const EnumName<RopePairs>> names_of<RopePairs>() {
  return kRopePairs;
}

void throw_unknown_name(std::string_view what, std::string_view name,
                        const std::vector<std::string>& allowed) {
  throw Error(
      fmt::format("{} '{}' is not known: allowed are {}", what, name, fmt::join(allowed, ", ")));
}

// The named functions of the headers, on the tables.
std::string_view kernel_name(TorchKernel kernel) { return name_of(kernel); }
TorchKernel parse_kernel(std::string_view name) {
  return parse_name<TorchKernel>("torch kernel", name);
}
std::string_view init_name(WeightInit init) { return name_of(init); }
WeightInit parse_init(std::string_view name) { return parse_name<WeightInit>("init", name); }
std::string_view multihead_name(MultiheadForm form) { return name_of(form); }
MultiheadForm parse_multihead(std::string_view name) {
  return parse_name<MultiheadForm>("multihead form", name);
}
std::string_view masked_rows_name(MaskedRows rule) { return name_of(rule); }
MaskedRows parse_masked_rows(std::string_view name) {
  return parse_name<MaskedRows>("masked-rows rule", name);
}
std::string_view matmul_name(MatmulKernel kernel) { return name_of(kernel); }
MatmulKernel parse_matmul(std::string_view name) {
  return parse_name<MatmulKernel>("matmul kernel", name);
}

}  // namespace attn
