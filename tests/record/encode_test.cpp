// record::encode_record details the oracle file does not spell out: where image blocks start,
// the state span and truncation flag, and the context-length refusal's status, code and field.

#include "record/encode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "request/parse.hpp"
#include "support/byte_tokenizer.hpp"
#include "util/error.hpp"

namespace clef {
namespace {

request::Request parse(const std::string& text) {
  return request::parse_request(json::parse(text));
}

const std::string kSmall = R"({"state": "abc", "questions": {"q": {"type": "noul"}}})";

TEST(EncodeRecord, ImageBlocksFollowThePrefix) {
  const test::ByteTokenizer tok;
  const record::Record text_only = record::encode_record(parse(kSmall), tok);
  EXPECT_TRUE(text_only.images.empty());
  const std::size_t p = text_only.prefix_tokens;
  EXPECT_EQ(text_only.state_span.begin, p);  // text-only: the state follows the prefix

  record::EncodeOptions options;
  options.image_tokens = {4, 9};
  const record::Record rec = record::encode_record(parse(kSmall), tok, options);
  EXPECT_EQ(rec.prefix_tokens, p);
  ASSERT_EQ(rec.images.size(), 2u);
  EXPECT_EQ(rec.images[0].first_token, p + 1);  // after <|vision_start|>
  EXPECT_EQ(rec.images[0].n_tokens, 4u);
  EXPECT_EQ(rec.images[1].first_token, p + 1 + 4 + 1 + 1);  // after <|vision_end|><|vision_start|>
  EXPECT_EQ(rec.images[1].n_tokens, 9u);
  EXPECT_EQ(rec.ids[p], tok.special_id("<|vision_start|>"));
  for (const record::ImageBlock& b : rec.images) {
    for (std::size_t i = 0; i < b.n_tokens; ++i) {
      EXPECT_EQ(rec.ids[b.first_token + i], tok.special_id("<|image_pad|>"));
    }
    EXPECT_EQ(rec.ids[b.first_token + b.n_tokens], tok.special_id("<|vision_end|>"));
  }
  // One "\n" after all images, then the state.
  EXPECT_EQ(rec.ids[rec.state_span.begin - 1], '\n');
  EXPECT_EQ(rec.state_span.begin, p + (1 + 4 + 1) + (1 + 9 + 1) + 1);
  EXPECT_EQ(rec.input_tokens(), text_only.input_tokens() + 18);
  // Spans move with the image block.
  EXPECT_EQ(rec.questions[0].question_span.begin, text_only.questions[0].question_span.begin + 18);
}

TEST(EncodeRecord, StateIsCutToFitAndTheSchemaMustFit) {
  const test::ByteTokenizer tok;
  const record::Record full = record::encode_record(parse(kSmall), tok);
  EXPECT_FALSE(full.state_truncated);
  EXPECT_EQ(full.state_span.size(), 3u);  // "abc"
  EXPECT_EQ(full.rendered_state, "abc");

  record::EncodeOptions options;
  options.max_length = full.input_tokens() - 2;
  const record::Record cut = record::encode_record(parse(kSmall), tok, options);
  EXPECT_TRUE(cut.state_truncated);
  EXPECT_EQ(cut.state_span.size(), 1u);
  EXPECT_EQ(cut.input_tokens(), options.max_length);
  EXPECT_EQ(cut.rendered_state, "abc");  // the rendered state is kept whole

  options.max_length = full.input_tokens() - 3;  // no room for state: still accepted
  EXPECT_EQ(record::encode_record(parse(kSmall), tok, options).state_span.size(), 0u);

  options.max_length = full.input_tokens() - 4;
  try {
    record::encode_record(parse(kSmall), tok, options);
    FAIL() << "accepted a schema longer than max_length";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "context_length_exceeded");
    EXPECT_EQ(e.param(), "questions");
    EXPECT_EQ(std::string(e.what()), "schema requires " + std::to_string(full.input_tokens() - 3) +
                                         " tokens before state; maximum is " +
                                         std::to_string(options.max_length));
  }
}

/// A request's max_state_tokens cuts the state's ids to their first N before the fit to
/// max_length; the tighter of the two wins.
TEST(EncodeRecord, MaxStateTokensCutsTheStateBeforeTheFit) {
  const test::ByteTokenizer tok;
  const std::string text = R"({"state": "abcdef", "questions": {"q": {"type": "noul"}}})";
  const record::Record full = record::encode_record(parse(text), tok);
  record::EncodeOptions options;
  options.max_state_tokens = 4;
  const record::Record cut = record::encode_record(parse(text), tok, options);
  EXPECT_TRUE(cut.state_truncated);
  EXPECT_EQ(cut.state_span.size(), 4u);
  EXPECT_EQ(cut.input_tokens(), full.input_tokens() - 2);
  // The kept ids are the state's first four ("abcd"), the rest of the record unchanged.
  EXPECT_TRUE(std::equal(cut.ids.begin(), cut.ids.begin() + static_cast<long>(cut.state_span.end),
                         full.ids.begin()));
  EXPECT_TRUE(std::equal(cut.ids.begin() + static_cast<long>(cut.state_span.end), cut.ids.end(),
                         full.ids.begin() + static_cast<long>(full.state_span.end)));

  options.max_length = full.input_tokens() - 5;  // tighter than max_state_tokens: one state token
  EXPECT_EQ(record::encode_record(parse(text), tok, options).state_span.size(), 1u);

  options = {};
  options.max_state_tokens = 6;  // the whole state: nothing cut
  const record::Record whole = record::encode_record(parse(text), tok, options);
  EXPECT_FALSE(whole.state_truncated);
  EXPECT_EQ(whole.ids, full.ids);
}

}  // namespace
}  // namespace clef
