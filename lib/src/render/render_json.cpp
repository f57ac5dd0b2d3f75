#include "attn/render_json.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

#include "attn/describe.hpp"
#include "attn/names.hpp"
#include "attn/version.hpp"
#include "render_common.hpp"

namespace attn {

namespace {

using nlohmann::json;

// JSON text of a value; invalid UTF-8 (possible only in a loaded file's labels) becomes U+FFFD.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string json_string(std::string_view s) { return dump(json(s)); }
std::string strings(const std::vector<std::string>& items) { return dump(json(items)); }

json optional_source(const std::optional<GivenMatrix>& m) {
  return m ? json(m->source) : json(nullptr);
}

json settings_of(const Trace& trace) {
  const TraceConfig& c = trace.config;
  json s;
  s["sentences"] = c.x ? json(nullptr) : json(c.sentences);
  s["cross"] = c.cross ? json(*c.cross) : json(nullptr);
  s["seed"] = c.seed;
  s["vocab_size"] = c.vocab_size;
  s["d_in"] = c.d_in;
  s["d_kq"] = c.d_kq;
  s["d_v"] = c.d_v;
  s["heads"] = c.heads;
  s["multihead"] = multihead_name(c.multihead);
  s["init"] = init_name(c.init);
  s["causal"] = c.causal;
  // Today's variants, only where they change the run: without them a trace is the same bytes.
  if (c.rope) s["rope"] = json{{"theta", c.rope_theta}, {"pairs", name_of(c.rope_pairs)}};
  if (c.kv_heads != 0 && c.kv_heads != c.heads) s["kv_heads"] = c.kv_heads;
  if (c.window > 0 && !trace.inputs.empty() &&
      c.window < static_cast<std::int64_t>(trace.inputs[0].words.size())) {
    s["window"] = c.window;
  }
  if (c.decode) s["decode"] = true;
  if (c.online_softmax > 0) s["online_softmax"] = c.online_softmax;
  // The backward pass, only when it ran: its loss, the mse loss's target, the step's η.
  if (c.backward) {
    s["backward"] = json{{"loss", name_of(c.loss)},
                         {"target", optional_source(c.target)},
                         {"lr", c.learning_rate ? json(*c.learning_rate) : json(nullptr)}};
  }
  s["masked_rows"] = masked_rows_name(c.masked_rows);
  s["torch_kernel"] = kernel_name(c.kernel);
  s["matmul"] = matmul_name(c.matmul);
  if (c.tokenizer->name() != "words") s["tokenizer"] = c.tokenizer->name();  // words: the default
  s["x"] = optional_source(c.x);
  s["embedding"] = optional_source(c.embedding);
  s["w_query"] = optional_source(c.w_query);
  s["w_key"] = optional_source(c.w_key);
  s["w_value"] = optional_source(c.w_value);
  s["w_out"] = optional_source(c.w_out);
  s["b_out"] = optional_source(c.b_out);
  if (c.model) {
    const Gpt2Config& m = c.model->config();
    s["model"] = json{{"path", c.model->path()},
                      {"layer", c.layer},
                      {"head", c.model_head ? json(*c.model_head) : json(nullptr)},
                      {"n_layer", m.n_layer},
                      {"n_head", m.n_head},
                      {"n_embd", m.n_embd},
                      {"n_positions", m.n_positions},
                      {"n_inner", m.n_inner},
                      {"activation_function", activation_name(m.activation)},
                      {"layer_norm_epsilon", m.layer_norm_epsilon},
                      {"dtype", m.dtype}};
  }
  return s;
}

json sentence_of(const TokenizedSentence& s) {
  json out{{"words", s.words}, {"ids", s.ids}, {"length", s.length}};
  if (!s.tokens.empty()) out["tokens"] = s.tokens;
  return out;
}

std::string optional_index(const std::optional<int>& i) {
  return i ? std::to_string(*i + 1) : std::string("null");
}

// A step's head as the trace numbers it (head_number), or null.
std::string head_index(const TraceConfig& config, const std::optional<int>& head) {
  return head ? std::to_string(head_number(config, *head)) : std::string("null");
}

// The fields of a step other than its values, one per line, each followed by a comma.
std::string step_fields(const TraceConfig& config, const Step& s) {
  std::string out;
  out += fmt::format("      \"id\": {},\n      \"title\": {},\n      \"equation\": {},\n",
                     json_string(s.id), json_string(s.title), json_string(s.equation));
  out += fmt::format("      \"head\": {},\n      \"batch\": {},\n", head_index(config, s.head),
                     optional_index(s.batch));
  out += fmt::format("      \"shape\": [{}, {}],\n", s.values.rows(), s.values.cols());
  out += fmt::format("      \"tensor_shape\": {},\n",
                     dump(json{{"names", s.shape_names}, {"sizes", s.shape}}));
  out += fmt::format("      \"row_labels\": {},\n      \"col_labels\": {},\n",
                     strings(s.row_labels), strings(s.col_labels));
  out += fmt::format("      \"note\": {},\n", json_string(s.note));
  return out;
}

// What a trace and a manifest begin with: "{", then "tool", "version", "schema_version",
// "settings", "dictionary", "inputs" and "cross", one per line, each followed by a comma.
std::string document_head(const Trace& trace) {
  std::string out = "{\n";
  out += fmt::format("  \"tool\": \"attn-trace\",\n  \"version\": {},\n  \"schema_version\": {},\n",
                     json_string(kVersion), kJsonSchemaVersion);
  out += fmt::format("  \"settings\": {},\n", dump(settings_of(trace)));
  std::string dict = "{";
  for (std::size_t i = 0; i < trace.vocabulary.words().size(); ++i) {
    dict += fmt::format("{}{}: {}", i ? ", " : "", json_string(trace.vocabulary.words()[i]),
                        trace.vocabulary.ids()[i]);
  }
  if (trace.pad_id) {
    dict += fmt::format("{}{}: {}", trace.vocabulary.words().empty() ? "" : ", ",
                        json_string(kPadToken), *trace.pad_id);
  }
  out += fmt::format("  \"dictionary\": {}}},\n", dict);
  json inputs = json::array();
  for (const TokenizedSentence& s : trace.inputs) inputs.push_back(sentence_of(s));
  out += fmt::format("  \"inputs\": {},\n", dump(inputs));
  out += fmt::format("  \"cross\": {},\n",
                     trace.cross ? dump(sentence_of(*trace.cross)) : std::string("null"));
  return out;
}

}  // namespace

std::string render_manifest(const Trace& trace, const std::vector<ExportEntry>& files) {
  std::string out = document_head(trace);
  std::vector<std::string> slice_file(trace.steps.size());  // by step
  for (const ExportEntry& f : files) {
    if (f.steps.size() == 1) slice_file.at(f.steps[0]) = f.name;
  }
  out += "  \"files\": [";
  for (std::size_t i = 0; i < files.size(); ++i) {
    const ExportEntry& f = files[i];
    const Step& s = trace.steps.at(f.steps.at(0));
    out += i ? ",\n    {\n" : "\n    {\n";
    out += fmt::format("      \"file\": {},\n      \"dtype\": \"<f4\",\n", json_string(f.name));
    out += fmt::format("      \"array_shape\": [{}],\n", fmt::join(f.shape, ", "));
    out += fmt::format("      \"whole\": {},\n      \"whole_file\": {},\n", f.whole,
                       f.whole_file.empty() ? std::string("null") : json_string(f.whole_file));
    if (!f.figure.empty()) out += fmt::format("      \"figure\": {},\n", json_string(f.figure));
    std::string fields;
    if (f.steps.size() == 1) {
      fields = step_fields(trace.config, s);
    } else {
      // The whole tensor of several slices: the step without one slice's shape and labels (each
      // slice's entry has its own), and the slices' files in the tensor's order.
      json slices = json::array();
      for (std::size_t step : f.steps) slices.push_back(slice_file.at(step));
      const bool heads =
          std::find(s.shape_names.begin(), s.shape_names.end(), "H") != s.shape_names.end();
      const bool batch =
          std::find(s.shape_names.begin(), s.shape_names.end(), "B") != s.shape_names.end();
      fields += fmt::format("      \"slices\": {},\n", dump(slices));
      fields += fmt::format("      \"id\": {},\n      \"title\": {},\n      \"equation\": {},\n",
                            json_string(s.id), json_string(s.title), json_string(s.equation));
      fields += fmt::format("      \"head\": {},\n      \"batch\": {},\n",
                            heads ? std::string("null") : head_index(trace.config, s.head),
                            batch ? std::string("null") : optional_index(s.batch));
      fields += fmt::format("      \"tensor_shape\": {},\n",
                            dump(json{{"names", s.shape_names}, {"sizes", s.shape}}));
      fields += fmt::format("      \"note\": {},\n", json_string(s.note));
    }
    fields.erase(fields.size() - 2);  // the last field's ",\n"
    out += fields + "\n    }";
  }
  out += "\n  ]\n}\n";
  return out;
}

std::string float_text(float value) {
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  // "-0" would be the integer 0 to a reader that tells integers from decimals (Python's json).
  if (value == 0.0f && std::signbit(value)) return "-0.0";
  return fmt::format("{}", value);
}

std::vector<std::string> render_json_parts(const Trace& trace, bool describe) {
  // Written by hand around the values, so that each row is one line and each number the
  // shortest float32 text; nlohmann::json writes the strings and the small objects.
  render_detail::PartWriter parts;
  std::string& out = parts.text();
  out = document_head(trace);
  out += "  \"steps\": [";
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const Step& s = trace.steps[i];
    out += i ? ",\n    {\n" : "\n    {\n";
    out += step_fields(trace.config, s);
    if (describe) {
      out += fmt::format("      \"description\": {},\n", json_string(describe_step(s.kind)));
    }
    out += "      \"values\": [";
    for (Eigen::Index r = 0; r < s.values.rows(); ++r) {
      out += r ? ",\n        [" : "\n        [";
      for (Eigen::Index c = 0; c < s.values.cols(); ++c) {
        if (c) out += ", ";
        const float v = s.values(r, c);
        if (std::isfinite(v) && !(v == 0.0f && std::signbit(v))) {
          // float_text's shortest text, without a temporary string: a model's layer is millions.
          fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}"), v);
        } else {
          out += float_text(v);
        }
        parts.cut_if_long();
      }
      out += "]";
    }
    out += "\n      ]\n    }";
  }
  out += "\n  ]\n}\n";
  return std::move(parts).finish();
}

std::string render_json(const Trace& trace, bool describe) {
  return render_detail::joined(render_json_parts(trace, describe));
}

}  // namespace attn
