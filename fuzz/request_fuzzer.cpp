// libFuzzer target: a request body through everything before the model —
// json::parse, request::parse_request and record::encode_record (with the byte-level test
// tokenizer). Any input must either encode or be refused with clef::Error; nothing else may
// escape, crash, hang or trip a sanitizer, and an encoded record must be self-consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "json/parse.hpp"
#include "record/encode.hpp"
#include "request/parse.hpp"
#include "support/byte_tokenizer.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const clef::test::ByteTokenizer tokenizer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const clef::json::Value body = clef::json::parse(text, {.max_bytes = 1 << 20, .max_depth = 64});
    const clef::request::Request req = clef::request::parse_request(body);
    clef::record::EncodeOptions options;
    options.max_length = 2048;
    const clef::record::Record rec = clef::record::encode_record(req, tokenizer, options);
    if (rec.ids.size() > options.max_length) std::abort();
    for (const auto& q : rec.questions) {
      // A question span may be empty (an empty id with no instructions, as the reference
      // encodes it; the runtime refuses to decide such a record) but never outside the ids.
      if (q.question_span.begin > q.question_span.end || q.question_span.end > rec.ids.size()) {
        std::abort();
      }
      for (const auto& s : q.option_spans) {
        if (s.begin >= s.end || s.end > rec.ids.size()) std::abort();
      }
    }
  } catch (const clef::Error&) {
    // a refusal is a valid outcome
  }
  return 0;
}
