#pragma once
// A record: the token ids of one request and where its questions and options are (decision
// contract, section 3; reference encode_record).

#include <cstddef>
#include <string>
#include <vector>

#include "record/tokenizer.hpp"
#include "request/request.hpp"

namespace clef::record {

/// Half-open token range [begin, end) into Record::ids.
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const noexcept { return end - begin; }
  friend bool operator==(const Span&, const Span&) = default;
};

/// One question of the record, options in model order (the head's logit order).
struct QuestionRecord {
  std::string question_id;
  request::QuestionType type = request::QuestionType::noul;  ///< head type index: noul 0, ...
  Span question_span;              ///< tokens of the rendered instructions
  std::vector<Span> option_spans;  ///< tokens of each rendered option object
  std::vector<std::string> option_ids;
};

/// One vision block: `<|vision_start|>`, n_tokens pad tokens, `<|vision_end|>`: an image's, or
/// one temporal patch (two frames) of a video's.
struct ImageBlock {
  std::size_t first_token = 0;  ///< index in ids of the block's first pad token
  std::size_t n_tokens = 0;     ///< number of pad tokens (rows of the vision output)
  int video = -1;               ///< the request video it belongs to; -1 for an image
};

/// The encoded request.
struct Record {
  std::vector<TokenId> ids;               ///< prefix + media + state + schema + suffix
  std::vector<QuestionRecord> questions;  ///< request order
  std::string rendered_state;             ///< render(state), before tokenization and truncation
  /// Vision blocks in record order: the images, then each video's temporal patches.
  std::vector<ImageBlock> images;
  std::size_t prefix_tokens = 0;  ///< tokens before the media block (P in contract 4)
  Span state_span;                ///< the state's tokens after truncation
  bool state_truncated = false;   ///< true when state tokens were cut to fit max_length
  /// State tokens cut from the state's end (the reference keeps its start); 0 when none were.
  std::size_t state_tokens_cut = 0;
  /// usage.input_tokens: len(ids), image tokens included.
  std::size_t input_tokens() const noexcept { return ids.size(); }
};

}  // namespace clef::record
