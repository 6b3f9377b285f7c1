#include "record/encode.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "json/render.hpp"
#include "util/error.hpp"

namespace clef::record {
namespace {

// Fixed texts of the reference's encode_record (contract 3).
constexpr std::string_view kPrefix =
    "<|im_start|>system\nRead the complete state and schema. Decide every field jointly. Each "
    "answer must be exactly one of that field's allowed options.<|im_end|>\n<|im_start|>user\n"
    "STATE:\n";
constexpr std::string_view kSchemaHeader = "\n\nSCHEMA FIELDS:\n";
constexpr std::string_view kAllowedOptions = "\nALLOWED OPTIONS:\n";
constexpr std::string_view kOptionEnd = "\n";
constexpr std::string_view kFieldEnd = "END FIELD\n";
constexpr std::string_view kSuffix =
    "\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nJOINT SCHEMA DECISIONS:";
constexpr std::string_view kAfterImages = "\n";

// Appends the tokens of one piece and returns their span in `ids`.
Span append(std::vector<TokenId>& ids, const Tokenizer& tok, std::string_view piece) {
  const std::vector<TokenId> piece_ids = tok.tokenize(piece);
  Span span{ids.size(), ids.size() + piece_ids.size()};
  ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  return span;
}

// render({"option_id": id, "description": desc}), description left out when null.
std::string render_option(const request::Option& option) {
  std::vector<json::Value::Member> members;
  members.emplace_back("option_id", json::Value::string(option.id));
  if (!option.description.is_null()) members.emplace_back("description", option.description);
  return json::render(json::Value::object(std::move(members)));
}

std::string field_header(std::size_t k, const request::Question& q) {
  return "\nFIELD " + std::to_string(k) + "\nID: " + q.id +
         "\nTYPE: " + request::type_name(q.type) + "\nINSTRUCTION: ";
}

// The schema block; spans are relative to its first token.
std::vector<TokenId> encode_schema(const request::Request& req, const Tokenizer& tok,
                                   std::vector<QuestionRecord>& questions) {
  std::vector<TokenId> ids;
  append(ids, tok, kSchemaHeader);
  std::size_t k = 0;
  for (const request::Question& q : req.questions) {
    QuestionRecord rec;
    rec.question_id = q.id;
    rec.type = q.type;
    append(ids, tok, field_header(++k, q));
    rec.question_span = append(ids, tok, json::render(q.instructions));
    append(ids, tok, kAllowedOptions);
    std::size_t j = 0;
    for (const request::Option& option : q.options) {
      append(ids, tok, "OPTION " + std::to_string(++j) + ": ");
      rec.option_spans.push_back(append(ids, tok, render_option(option)));
      rec.option_ids.push_back(option.id);
      append(ids, tok, kOptionEnd);
    }
    append(ids, tok, kFieldEnd);
    questions.push_back(std::move(rec));
  }
  return ids;
}

Span shifted(Span s, std::size_t offset) {
  return {s.begin + offset, s.end + offset};
}

}  // namespace

Record encode_record(const request::Request& req, const Tokenizer& tok,
                     const EncodeOptions& options) {
  Record rec;
  std::vector<TokenId> head;  // prefix + media
  append(head, tok, kPrefix);
  rec.prefix_tokens = head.size();
  if (!options.image_tokens.empty() || !options.videos.empty()) {
    const TokenId vision_start = tok.special_id("<|vision_start|>");
    const TokenId vision_end = tok.special_id("<|vision_end|>");
    const TokenId image_pad = tok.special_id("<|image_pad|>");
    for (std::size_t n : options.image_tokens) {
      head.push_back(vision_start);
      rec.images.push_back({head.size(), n});
      head.insert(head.end(), n, image_pad);
      head.push_back(vision_end);
    }
    if (!options.videos.empty()) {
      const TokenId video_pad = tok.special_id("<|video_pad|>");
      for (std::size_t v = 0; v < options.videos.size(); ++v) {
        head.push_back(vision_start);
        for (const VideoGroup& g : options.videos[v]) {
          append(head, tok, g.timestamp);
          head.push_back(vision_start);
          rec.images.push_back({head.size(), g.n_tokens, static_cast<int>(v)});
          head.insert(head.end(), g.n_tokens, video_pad);
          head.push_back(vision_end);
        }
        head.push_back(vision_end);
      }
    }
    append(head, tok, kAfterImages);
  }

  std::vector<TokenId> schema = encode_schema(req, tok, rec.questions);
  std::vector<TokenId> suffix = tok.tokenize(kSuffix);
  const std::size_t fixed = head.size() + schema.size() + suffix.size();
  if (fixed > options.max_length) {
    throw Error(ErrorKind::invalid_request, "context_length_exceeded",
                "schema requires " + std::to_string(fixed) + " tokens before state; maximum is " +
                    std::to_string(options.max_length),
                "questions");
  }
  std::size_t state_room = options.max_length - fixed;
  if (options.max_state_tokens > 0) state_room = std::min(state_room, options.max_state_tokens);

  // The state's first state_room ids are kept and the rest only counted (the reference cuts the
  // ids of the whole state to their start): memory follows what is kept, not the state's size.
  rec.rendered_state = json::render(req.state);
  if (options.charge) options.charge(static_cast<std::ptrdiff_t>(rec.rendered_state.size()));
  TokenPrefix state = tok.tokenize_prefix(rec.rendered_state, state_room, options.charge);
  if (state.total > state.ids.size()) {
    rec.state_tokens_cut = state.total - state.ids.size();
    rec.state_truncated = true;
  }

  rec.ids = std::move(head);
  rec.ids.reserve(fixed + state.ids.size());
  rec.state_span = {rec.ids.size(), rec.ids.size() + state.ids.size()};
  rec.ids.insert(rec.ids.end(), state.ids.begin(), state.ids.end());
  const std::size_t schema_at = rec.ids.size();
  rec.ids.insert(rec.ids.end(), schema.begin(), schema.end());
  rec.ids.insert(rec.ids.end(), suffix.begin(), suffix.end());
  for (QuestionRecord& q : rec.questions) {
    q.question_span = shifted(q.question_span, schema_at);
    for (Span& s : q.option_spans) s = shifted(s, schema_at);
  }
  return rec;
}

}  // namespace clef::record
