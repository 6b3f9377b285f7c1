// LlamaTokenizer over the real Qwen3.5 vocabulary (tests/data/vocab/ggml-vocab-qwen35.gguf):
// llama.cpp's own test vectors with the file's pre-tokenizer, NFC between special tokens, the
// special ids of the contract, and the qwen2 / qwen35 pre-tokenizer difference (contract 7).

#include "record/llama_tokenizer.hpp"

#include <gtest/gtest.h>

#include <llama.h>

#include <algorithm>
#include <string>
#include <vector>

#include "llama_backend_env.hpp"
#include "oracle_files.hpp"
#include "record/llama_vocab.hpp"
#include "util/error.hpp"

namespace clef {
namespace {

using record::LlamaTokenizer;
using record::Normalization;
using record::PreTokenizer;
using record::TokenId;
using record::VocabModel;

[[maybe_unused]] const ::testing::Environment* const kBackend =
    ::testing::AddGlobalTestEnvironment(new test::LlamaBackendEnvironment);  // gtest owns it

const std::string kVocab = std::string(CLEF_TEST_DATA) + "/vocab/ggml-vocab-qwen35.gguf";

// llama.cpp's test-tokenizer-0 format: inputs split by "\n__ggml_vocab_test__\n", one line of
// space-separated ids per input.
struct Vector {
  std::string text;
  std::vector<TokenId> ids;
};

std::vector<Vector> read_vectors() {
  const std::string inp = test::read_text(kVocab + ".inp");
  const std::string out = test::read_text(kVocab + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (std::size_t pos = 0; pos < inp.size();) {
    const std::size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<Vector> vectors;
  std::size_t line_start = 0;
  for (const std::string& text : texts) {
    const std::size_t line_end = out.find('\n', line_start);
    const std::string line = out.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    Vector v{text, {}};
    std::size_t p = 0;
    while ((p = line.find_first_not_of(' ', p)) != std::string::npos) {
      const std::size_t q = line.find(' ', p);
      v.ids.push_back(std::stoi(line.substr(p, q - p)));
      p = q;
    }
    vectors.push_back(std::move(v));
  }
  return vectors;
}

TEST(LlamaTokenizer, ReproducesLlamaCppVectorsWithTheFilesPreTokenizer) {
  const VocabModel model = VocabModel::load(kVocab, PreTokenizer::from_file);
  const LlamaTokenizer tok(model.vocab(), Normalization::none);
  const std::vector<Vector> vectors = read_vectors();
  ASSERT_EQ(vectors.size(), 50u);
  int equal = 0;
  for (const Vector& v : vectors) {
    EXPECT_EQ(tok.tokenize(v.text), v.ids) << "text: \"" << v.text << "\"";
    equal += tok.tokenize(v.text) == v.ids;
  }
  std::printf("%d of %zu llama.cpp vectors equal\n", equal, vectors.size());
}

// llama.cpp's own id for `text` alone, tokenized with parse_special (not via LlamaTokenizer).
std::vector<TokenId> llama_ids(const llama_vocab* vocab, const std::string& text) {
  std::vector<llama_token> ids(text.size() + 2);
  const int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                               static_cast<int32_t>(ids.size()), false, true);
  ids.resize(n > 0 ? n : 0);
  return ids;
}

TEST(LlamaTokenizer, SpecialIdsAreLookedUpByText) {
  // This test vocabulary (151,936 tokens) has Qwen2's chat specials, not Qwen3.5's vision ones;
  // the ids come from the file, never from the code.
  const VocabModel model = VocabModel::load(kVocab);
  const LlamaTokenizer tok(model.vocab());
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    const TokenId id = tok.special_id(special);
    EXPECT_EQ(llama_ids(model.vocab(), special), std::vector<TokenId>{id}) << special;
    EXPECT_STREQ(llama_vocab_get_text(model.vocab(), id), special);
    EXPECT_NE(llama_vocab_get_attr(model.vocab(), id) & LLAMA_TOKEN_ATTR_CONTROL, 0);
  }
  EXPECT_THROW(tok.special_id("<|vision_start|>"), Error);  // not in this vocabulary
  EXPECT_THROW(tok.special_id("hello"), Error);             // an ordinary token
  // Special strings inside a piece are special tokens (parse_special).
  const std::vector<TokenId> ids = tok.tokenize("<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(ids.front(), tok.special_id("<|im_start|>"));
  EXPECT_EQ(ids.back(), tok.special_id("<|im_end|>"));
  EXPECT_EQ(ids, llama_ids(model.vocab(), "<|im_start|>user\nhi<|im_end|>"));
}

TEST(LlamaTokenizer, NfcMakesDecomposedAndComposedTextEqual) {
  const VocabModel model = VocabModel::load(kVocab);
  const LlamaTokenizer nfc(model.vocab());
  const LlamaTokenizer raw(model.vocab(), Normalization::none);
  const std::string decomposed = "cafe\xCC\x81 A\xCC\x8A";  // e + U+0301, A + U+030A
  const std::string composed = "caf\xC3\xA9 \xC3\x85";      // U+00E9, U+00C5
  EXPECT_EQ(nfc.tokenize(decomposed), nfc.tokenize(composed));
  EXPECT_EQ(nfc.tokenize(composed), raw.tokenize(composed));
  EXPECT_NE(raw.tokenize(decomposed), raw.tokenize(composed));
  // Between special tokens only: the specials stay special ids, the runs around them are NFC.
  const std::vector<TokenId> around = nfc.tokenize(decomposed + "<|im_end|>" + decomposed);
  EXPECT_EQ(around, raw.tokenize(composed + "<|im_end|>" + composed));
  EXPECT_EQ(std::count(around.begin(), around.end(), nfc.special_id("<|im_end|>")), 1);
  // A combining mark right after a special token has nothing to compose with.
  EXPECT_EQ(nfc.tokenize("<|im_end|>\xCC\x81x"), raw.tokenize("<|im_end|>\xCC\x81x"));
  EXPECT_THROW(nfc.tokenize("bad \xFF byte"), Error);
}

TEST(LlamaTokenizer, Qwen2AndQwen35PreTokenizersDifferOnCombiningMarks) {
  // Contract 7: the reference splits with the plain Qwen2 regex; llama.cpp's qwen35 regex keeps
  // combining marks (\p{M}) in letter runs. Thai vowel/tone marks and Arabic harakat are marks.
  const VocabModel qwen2 = VocabModel::load(kVocab, PreTokenizer::qwen2);
  const VocabModel qwen35 = VocabModel::load(kVocab, PreTokenizer::from_file);
  const LlamaTokenizer reference(qwen2.vocab());
  const LlamaTokenizer file(qwen35.vocab());
  const std::string thai = "\u0E2A\u0E27\u0E31\u0E2A\u0E14\u0E35\u0E04\u0E23\u0E31\u0E1A";
  const std::string arabic = "\u0645\u064E\u0631\u0652\u062D\u064E\u0628\u064B\u0627";
  EXPECT_NE(reference.tokenize(thai), file.tokenize(thai));      // "สวัสดีครับ"
  EXPECT_NE(reference.tokenize(arabic), file.tokenize(arabic));  // "مَرْحَبًا"
  // The qwen2 split cuts the letter run before each mark, so it yields more tokens here.
  EXPECT_GT(reference.tokenize(arabic).size(), file.tokenize(arabic).size());
  const std::string plain = "Read the complete state and schema. 12345 caf\u00e9!";
  EXPECT_EQ(reference.tokenize(plain), file.tokenize(plain));
  // The override is what llama.cpp reads.
  const auto overrides = record::pretokenizer_overrides(PreTokenizer::qwen2);
  ASSERT_EQ(overrides.size(), 2u);
  EXPECT_STREQ(overrides[0].key, "tokenizer.ggml.pre");
  EXPECT_STREQ(overrides[0].val_str, "qwen2");
  EXPECT_EQ(overrides[1].key[0], '\0');
  EXPECT_EQ(record::pretokenizer_overrides(PreTokenizer::from_file).size(), 1u);
}

TEST(LlamaTokenizer, RefusesAMissingFile) {
  EXPECT_THROW(VocabModel::load(std::string(CLEF_TEST_DATA) + "/vocab/missing.gguf"), Error);
}

}  // namespace
}  // namespace clef

namespace clef {
namespace {

/// Random texts from pieces that stress the pre-tokenizer: letters, digits, spaces and their
/// runs, newlines, punctuation runs, contractions, JSON, accents (composed and decomposed),
/// marks, CJK, emoji and special-token texts.
std::vector<std::string> mixed_texts(unsigned seed, int count, int pieces) {
  static const std::vector<std::string> kPieces = {"word",
                                                   "Word",
                                                   "x",
                                                   "ab",
                                                   " ",
                                                   "  ",
                                                   "   ",
                                                   "\t",
                                                   "\n",
                                                   "\r\n",
                                                   " \n",
                                                   "0",
                                                   "7",
                                                   "12",
                                                   "4300",
                                                   ",",
                                                   ".",
                                                   ":",
                                                   "\"",
                                                   "'",
                                                   "'s",
                                                   "'t",
                                                   "'re",
                                                   "'ll",
                                                   "it's",
                                                   "{",
                                                   "}",
                                                   "[",
                                                   "]",
                                                   "\": \"",
                                                   "\",\"",
                                                   "!!",
                                                   "?",
                                                   "-",
                                                   "_",
                                                   "/",
                                                   "\\u00e9",
                                                   "caf\u00e9",
                                                   "cafe\u0301",
                                                   "\u0301",
                                                   "\u00e9t\u00e9",
                                                   "\u4e2d\u6587",
                                                   "\U0001F600",
                                                   "\u0E2A\u0E27\u0E31",
                                                   "\u0645\u064E",
                                                   "<|im_start|>",
                                                   "<|im_end|>",
                                                   "<|endoftext|>",
                                                   "<|im",
                                                   "_start|>",
                                                   "\u3000",
                                                   "\u00a0"};
  std::vector<std::string> out;
  unsigned state = seed;
  auto next = [&state] {
    state = state * 1103515245u + 12345u;
    return (state >> 8) & 0xffffff;
  };
  for (int t = 0; t < count; ++t) {
    std::string text;
    const int n = 1 + static_cast<int>(next() % static_cast<unsigned>(pieces));
    for (int i = 0; i < n; ++i) text += kPieces[next() % kPieces.size()];
    out.push_back(std::move(text));
  }
  return out;
}

/// Issue 52, item 2: a state is tokenized in pieces cut where the pre-tokenizer always splits.
/// Every cut LlamaTokenizer::safe_cut allows gives the ids of the whole text, with the reference's
/// Qwen2 regex and with the file's qwen35 one, NFC on.
TEST(LlamaTokenizer, EverySafeCutKeepsTheIdsOfTheWholeText) {
  for (const PreTokenizer pre : {PreTokenizer::qwen2, PreTokenizer::from_file}) {
    const VocabModel model = VocabModel::load(kVocab, pre);
    const LlamaTokenizer tok(model.vocab());
    std::size_t cuts = 0;
    for (const std::string& text : mixed_texts(7, 1000, 40)) {
      const std::vector<TokenId> whole = tok.tokenize(text);
      for (std::size_t at = 1; at < text.size(); ++at) {
        if (!tok.safe_cut(text, at)) continue;
        ++cuts;
        std::vector<TokenId> joined = tok.tokenize(std::string_view(text).substr(0, at));
        const std::vector<TokenId> rest = tok.tokenize(std::string_view(text).substr(at));
        joined.insert(joined.end(), rest.begin(), rest.end());
        ASSERT_EQ(joined, whole) << "cut at " << at << " of \"" << text << "\"";
      }
    }
    EXPECT_GT(cuts, 8000u);  // the texts do give the rule something to cut
  }
}

TEST(LlamaTokenizer, APrefixOfALongTextIsItsFirstIdsAndCountsTheRest) {
  const VocabModel model = VocabModel::load(kVocab, PreTokenizer::qwen2);
  const LlamaTokenizer tok(model.vocab());
  std::string text;
  for (const std::string& piece : mixed_texts(11, 2000, 60)) text += piece;
  ASSERT_GT(text.size(), 3 * LlamaTokenizer::kPieceBytes);
  const std::vector<TokenId> whole = tok.tokenize(text);
  for (const std::size_t keep : {std::size_t{0}, std::size_t{5}, std::size_t{16384},
                                 whole.size() - 1, whole.size(), whole.size() + 10}) {
    std::ptrdiff_t held = 0, peak = 0;
    const record::TokenPrefix prefix = tok.tokenize_prefix(text, keep, [&](std::ptrdiff_t b) {
      held += b;
      peak = std::max(peak, held);
    });
    EXPECT_EQ(prefix.total, whole.size());
    ASSERT_EQ(prefix.ids.size(), std::min(keep, whole.size()));
    EXPECT_TRUE(std::equal(prefix.ids.begin(), prefix.ids.end(), whole.begin())) << keep;
    EXPECT_EQ(held, 0);  // every piece's charge is given back
    // Pieces, not the whole text, are charged at once.
    EXPECT_LT(static_cast<std::size_t>(peak), text.size() * record::kTokenizeBytesPerByte / 2);
  }
  // 3,000 integers of 4,300 digits as json.dumps renders them: cut between digits.
  std::string ints = "[";
  for (int i = 0; i < 300; ++i) ints += (i ? ", " : "") + std::string(4300, '7');
  ints += "]";
  const record::TokenPrefix cut = tok.tokenize_prefix(ints, 1000);
  EXPECT_EQ(cut.total, tok.tokenize(ints).size());
  EXPECT_EQ(cut.ids.size(), 1000u);
}

}  // namespace
}  // namespace clef

namespace clef {
namespace {

/// Reported (issue 52, breaker): 4 MB of "<|im_start|>" back to back took 206 s of CPU (llama.cpp's
/// special-token partition is quadratic in one piece), and 5 MB of one letter run passed the
/// memory charge. Special texts are cuts now, so such a state is tokenized in pieces; the ids are
/// the whole text's.
TEST(LlamaTokenizer, SpecialTextsBackToBackAreCutIntoPieces) {
  const VocabModel model = VocabModel::load(kVocab, PreTokenizer::qwen2);
  const LlamaTokenizer tok(model.vocab());
  std::string specials;
  while (specials.size() < 3 * LlamaTokenizer::kPieceBytes) specials += "<|im_start|><|im_end|>x";
  std::ptrdiff_t held = 0, peak = 0;
  const record::TokenPrefix prefix =
      tok.tokenize_prefix(specials, std::size_t{1} << 30, [&](std::ptrdiff_t b) {
        held += b;
        peak = std::max(peak, held);
      });
  EXPECT_EQ(prefix.ids, tok.tokenize(specials));
  EXPECT_LT(static_cast<std::size_t>(peak),
            2 * LlamaTokenizer::kPieceBytes * record::kTokenizeBytesPerByte);
  // CJK text with spaces (no ASCII letters) is cut at its spaces.
  std::string cjk;
  while (cjk.size() < 3 * LlamaTokenizer::kPieceBytes) cjk += "\u4e2d\u6587\u3002 \u6d4b\u8bd5 ";
  held = peak = 0;
  const record::TokenPrefix cut = tok.tokenize_prefix(cjk, 100, [&](std::ptrdiff_t b) {
    held += b;
    peak = std::max(peak, held);
  });
  EXPECT_EQ(cut.total, tok.tokenize(cjk).size());
  EXPECT_LT(static_cast<std::size_t>(peak),
            2 * LlamaTokenizer::kPieceBytes * record::kTokenizeBytesPerByte);
}

}  // namespace
}  // namespace clef
