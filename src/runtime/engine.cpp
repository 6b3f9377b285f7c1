#include "runtime/engine.hpp"

#include <chrono>
#include <optional>
#include <thread>

#include "backbone/backbone.hpp"
#include "decision/response.hpp"
#include "head/head_weights.hpp"
#include "head/joint_schema_head.hpp"
#include "lexical/lexical_table.hpp"
#include "record/encode.hpp"
#include "record/llama_tokenizer.hpp"
#include "record/llama_vocab.hpp"
#include "request/parse.hpp"
#include "runtime/head_inputs.hpp"
#include "util/error.hpp"

namespace clef::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

json::Value span_value(const record::Span& span) {
  return json::Value::array({json::Value::integer(static_cast<std::int64_t>(span.begin)),
                             json::Value::integer(static_cast<std::int64_t>(span.end))});
}

/// The record's ids and spans as JSON, for `clef ask --verbose`.
json::Value record_trace(const record::Record& rec) {
  std::vector<json::Value> ids;
  ids.reserve(rec.ids.size());
  for (const auto id : rec.ids) ids.push_back(json::Value::integer(id));
  std::vector<json::Value> questions;
  for (const auto& q : rec.questions) {
    std::vector<json::Value> options;
    for (std::size_t j = 0; j < q.option_spans.size(); ++j) {
      options.push_back(json::Value::object({{"option_id", json::Value::string(q.option_ids[j])},
                                             {"span", span_value(q.option_spans[j])}}));
    }
    questions.push_back(json::Value::object({{"id", json::Value::string(q.question_id)},
                                             {"question_span", span_value(q.question_span)},
                                             {"options", json::Value::array(std::move(options))}}));
  }
  return json::Value::object({{"ids", json::Value::array(std::move(ids))},
                              {"questions", json::Value::array(std::move(questions))}});
}

/// The decision pipeline over loaded model files (contract sections 1-6).
class Engine final : public Decider {
 public:
  explicit Engine(const EngineConfig& config)
      : config_(config),
        // The LM head is checked first: a tied or missing output.weight is refused before the
        // (much larger) backbone load.
        lexical_(config.backbone_path),
        overrides_(record::pretokenizer_overrides(record::PreTokenizer::qwen2)),
        backbone_(config.backbone_path, config.backbone, overrides_),
        head_(
            head::HeadWeights::load(config.head_path, config.head_config_path, backbone_.n_embd()),
            resolved_threads(config)),
        tokenizer_(backbone_.vocab(), record::Normalization::nfc) {
    if (lexical_.n_embd() != backbone_.n_embd()) {
      throw model_error("output.weight rows have " + std::to_string(lexical_.n_embd()) +
                        " values but the backbone's n_embd is " +
                        std::to_string(backbone_.n_embd()));
    }
  }

  Decision decide(const json::Value& body) override { return run(body, false); }
  Decision decide_traced(const json::Value& body) override { return run(body, true); }

  const std::string& model_name() const override { return config_.model_name; }
  int context_size() const override { return backbone_.context_size(); }

 private:
  Decision run(const json::Value& body, bool trace) {
    const auto t0 = Clock::now();
    request::RequestLimits limits;
    limits.max_questions = static_cast<std::size_t>(config_.max_questions);
    limits.max_options = static_cast<std::size_t>(config_.max_options);
    limits.max_images = static_cast<std::size_t>(config_.max_images);
    request::Request req = request::parse_request(body, limits);
    if (body.is_object() && body.find("model") == nullptr) req.model = config_.model_name;
    if (!req.images.empty()) {
      throw invalid_request("images are not supported by this build of clef yet", "images");
    }

    record::EncodeOptions options;
    options.max_length = static_cast<std::size_t>(backbone_.context_size());
    const record::Record rec = record::encode_record(req, tokenizer_, options);
    if (rec.state_truncated && config_.truncation == Truncation::refuse) refuse_truncation(rec);
    Decision out;
    out.timings.tokenize_ms = ms_since(t0);

    const auto t1 = Clock::now();
    const backbone::HiddenStates hidden = backbone_.hidden_states(rec.ids);
    out.timings.backbone_ms = ms_since(t1);

    const auto t2 = Clock::now();
    const HeadInputs inputs = make_head_inputs(rec, lexical_);
    const auto logits = head_.forward(hidden.data, hidden.rows, inputs.questions, inputs.lexical);
    out.timings.head_ms = ms_since(t2);

    out.input_tokens = static_cast<int>(rec.input_tokens());
    out.response = decision::build_response(req, logits, rec.input_tokens());
    out.body = decision::response_body(out.response);
    out.timings.total_ms = ms_since(t0);
    if (trace) out.trace = record_trace(rec);
    return out;
  }

  static int resolved_threads(const EngineConfig& config) {
    if (config.backbone.threads > 0) return config.backbone.threads;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  /// --truncation refuse: 413 naming the record's full length and the context size.
  [[noreturn]] void refuse_truncation(const record::Record& rec) const {
    const std::size_t full_state = tokenizer_.tokenize(rec.rendered_state).size();
    const std::size_t full = rec.input_tokens() - rec.state_span.size() + full_state;
    throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                "the record needs " + std::to_string(full) + " tokens but the context size is " +
                    std::to_string(backbone_.context_size()) +
                    " (the server refuses to truncate the state)",
                "state");
  }

  EngineConfig config_;
  lexical::LexicalTable lexical_;
  std::vector<llama_model_kv_override> overrides_;
  backbone::Backbone backbone_;
  head::JointSchemaHead head_;
  record::LlamaTokenizer tokenizer_;
};

}  // namespace

std::unique_ptr<Decider> make_engine(const EngineConfig& config) {
  backbone::ensure_llama_backend(config.verbose);
  return std::make_unique<Engine>(config);
}

}  // namespace clef::runtime
