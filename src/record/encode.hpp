#pragma once
// The record encoder (decision contract, section 3; reference encode_record).

#include <cstddef>
#include <string>
#include <vector>

#include "record/record.hpp"
#include "record/tokenizer.hpp"
#include "request/request.hpp"

namespace clef::record {

/// One temporal patch of a video as the record writes it.
struct VideoGroup {
  std::string timestamp;     ///< its timestamp text, e.g. "<0.3 seconds>"
  std::size_t n_tokens = 0;  ///< its <|video_pad|> tokens
};

/// Options of encode_record.
struct EncodeOptions {
  /// Context size: the most tokens a record may have (reference default 16384).
  std::size_t max_length = 16384;
  /// The most state tokens: the state's ids are cut to their first max_state_tokens before they
  /// are fitted to max_length (a request's `max_state_tokens`); 0: no such cut.
  std::size_t max_state_tokens = 0;
  /// Image-pad tokens of each image, in request order (from the vision preprocessor); empty for a
  /// text-only record.
  std::vector<std::size_t> image_tokens;
  /// Temporal patches of each video, in request order (from the video processor).
  std::vector<std::vector<VideoGroup>> videos;
  /// Charged with the rendered state's bytes and each tokenized piece's peak
  /// (Tokenizer::tokenize_prefix); it throws to refuse a state over a memory budget.
  util::MemoryCharge charge;
};

/// Encodes `req` into token ids and spans. Every piece is tokenized on its own with `tok`:
///   prefix, [per image: <|vision_start|> + N x <|image_pad|> + <|vision_end|>; per video:
///   <|vision_start|>, per temporal patch its timestamp text + <|vision_start|> + N x
///   <|video_pad|> + <|vision_end|>, then <|vision_end|> (the processor replaces only the
///   placeholder's <|video_pad|>); then "\n" once],
///   render(state), "\n\nSCHEMA FIELDS:\n", per question k (1-based):
///   "\nFIELD {k}\nID: {id}\nTYPE: {type}\nINSTRUCTION: ", render(instructions) [question span],
///   "\nALLOWED OPTIONS:\n", per option j: "OPTION {j}: ", render(option object) [option span],
///   "\n"; then "END FIELD\n"; and the suffix.
/// The option object is {"option_id": id, "description": desc}, without "description" when desc
/// is null. The state's ids are cut to max_state_tokens (when set), then to max_length - (all
/// other tokens); either cut sets Record::state_truncated.
/// Throws clef::Error 400 (code "context_length_exceeded", param "questions") with the message
/// "schema requires N tokens before state; maximum is M" when the other tokens alone exceed
/// max_length, and whatever `tok` throws for text it cannot encode (or options.charge for a
/// state over its budget). The state is tokenized after the fixed parts, and only its first
/// (kept) ids are held: Record::state_tokens_cut counts the rest.
Record encode_record(const request::Request& req, const Tokenizer& tok,
                     const EncodeOptions& options = {});

}  // namespace clef::record
