// Images end to end on the tiny test model: requests with one and two images through the engine
// and through `clef ask --image`, the M-RoPE positions fed to libllama against the closed form of
// contract section 4, hidden rows that change with the image's pixels (and only from the image
// on), determinism, image URLs from a loopback test server, and every refusal as a clear 4xx.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backbone/backbone.hpp"
#include "backbone/mrope.hpp"
#include "gguf.h"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "media/base64.hpp"
#include "media/decode.hpp"
#include "media/image_source.hpp"
#include "record/encode.hpp"
#include "record/llama_tokenizer.hpp"
#include "request/parse.hpp"
#include "runtime/make_engine.hpp"
#include "runtime/prepare/image_inputs.hpp"
#include "support/batched_decisions.hpp"
#include "support/expect_refused.hpp"
#include "support/prefill_alone.hpp"
#include "support/run_command.hpp"
#include "support/tiny_engine_config.hpp"
#include "util/error.hpp"
#include "vision/grid.hpp"
#include "vision/processor.hpp"
#include "vision/tower.hpp"

namespace {

using clef::json::Value;
namespace rt = clef::runtime;

const std::string kImages = std::string(CLEF_TEST_DATA) + "/oracle/coreai/images/";
const std::string kArrows = kImages + "arrows_640x480.png";  // 640x480: 20 x 15 = 300 tokens
const std::string kGauge = kImages + "gauge_300x200.png";    // up to 320x224: 10 x 7 = 70 tokens

std::string uri(const std::string& path) {
  return clef::media::image_file_data_uri(path, clef::media::DecodeLimits{}, "image");
}

rt::EngineConfig tiny_config(bool with_mmproj = true) {
  return clef::test::tiny_engine_config(with_mmproj);
}

const char* kCard = R"({"state": "Production database is down, customers cannot log in",
  "questions": {
    "department": {"type": "choice", "instructions": "Which team should handle this ticket?",
      "criteria": {"engineering": "Software and outages", "sales": "Pricing", "support": "Help"}},
    "urgency": {"type": "score", "criteria": ["Not urgent", "Low", "Medium", "High", "Critical"]},
    "outage": {"type": "noul", "instructions": "Is a service outage reported?"}}})";

Value with_images(const std::vector<std::string>& images) {
  Value body = clef::json::parse(kCard);
  std::vector<Value> items;
  for (const auto& i : images) items.push_back(Value::string(i));
  body.members().emplace_back("images", Value::array(std::move(items)));
  return body;
}

}  // namespace

namespace clef::vision {
/// The PNG signature and an IHDR chunk (8-bit RGB, CRC left zero) of a width x height image,
/// with no image data.
std::vector<std::uint8_t> test_png_header(std::uint32_t width, std::uint32_t height) {
  std::vector<std::uint8_t> b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                 0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  for (std::uint32_t v : {width, height}) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
  }
  for (std::uint8_t v : {8, 2, 0, 0, 0, 0, 0, 0, 0}) b.push_back(v);
  return b;
}
}  // namespace clef::vision

namespace {

int grid_tokens(const std::string& path) {
  const clef::media::RgbImage img = clef::media::decode_image([&] {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    std::vector<std::uint8_t> b;
    for (int c; (c = std::fgetc(f)) != EOF;) b.push_back(static_cast<std::uint8_t>(c));
    std::fclose(f);
    return b;
  }());
  return clef::vision::image_grid_for_input(img.height, img.width).n_image_tokens();
}

class ImageEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { engine_ = rt::make_engine(tiny_config()); }
  static void TearDownTestSuite() { engine_.reset(); }
  static rt::Engine& engine() { return *engine_; }
  static std::optional<rt::Engine> engine_;
};
std::optional<rt::Engine> ImageEngineTest::engine_;

using clef::test::expect_refused;
TEST_F(ImageEngineTest, OneAndTwoImagesAreDecidedAndCountedInInputTokens) {
  const rt::Decision text = engine().decide(clef::json::parse(kCard));
  const rt::Decision one = engine().decide(with_images({uri(kArrows)}));
  const rt::PreparedRequest prepared_two =
      engine().prepare(with_images({uri(kArrows), uri(kGauge)}));
  const rt::Decision two = engine().decide(prepared_two);
  const int n_arrows = grid_tokens(kArrows), n_gauge = grid_tokens(kGauge);
  EXPECT_EQ(n_arrows, 300);
  EXPECT_EQ(n_gauge, 70);
  // Each image: <|vision_start|> + N + <|vision_end|>; then one "\n" (one token) after them all.
  EXPECT_EQ(one.input_tokens, text.input_tokens + n_arrows + 2 + 1);
  EXPECT_EQ(two.input_tokens, text.input_tokens + n_arrows + 2 + n_gauge + 2 + 1);
  EXPECT_EQ(one.response.find("usage")->find("input_tokens")->integer_digits(),
            std::to_string(one.input_tokens));
  for (const rt::Decision* d : {&one, &two}) {
    const Value* answers = d->response.find("answers");
    ASSERT_NE(answers, nullptr);
    EXPECT_EQ(answers->members().size(), 3u);
  }
  EXPECT_NE(one.body, text.body) << "the image changes the answers' numbers";
  EXPECT_NE(two.body, one.body);
  const Value trace = rt::record_trace(prepared_two);
  const auto& blocks = trace.find("images")->items();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].find("n_tokens")->integer_digits(), "300");
  EXPECT_EQ(blocks[1].find("n_tokens")->integer_digits(), "70");
  EXPECT_GT(two.timings.vision_ms, 0.0);
}

TEST(ImageSuspension, OthersRunBeforeEachTowerImageAndDuringThePrefillWithTheSameAnswers) {
  // A break test: short requests waited for a whole tower encode of a long image request; now
  // the one decision loop suspends it between its steps (each image, each prefill piece) and
  // others decide on its sequence; the answers do not change.
  rt::EngineConfig config = tiny_config();
  config.state_cache_mb = 0;  // the second decision encodes its images again
  auto engine = rt::make_engine(config);
  ASSERT_EQ(engine.runner->parallel(), 1);
  const Value two = with_images({uri(kArrows), uri(kGauge)});
  const Value text = clef::json::parse(kCard);
  const std::string alone = engine.decide(two).body;
  const std::string text_alone = engine.decide(text).body;
  const rt::PreparedRequest prepared = engine.prepare(two);
  const std::unique_ptr<rt::DecisionInProgress> d = engine.runner->begin(prepared);
  rt::DecisionInProgress* const one = d.get();
  std::vector<std::string> others;
  int steps = 0;
  while (!d->prefilled()) {
    clef::test::step_together(*engine.runner, std::span<rt::DecisionInProgress* const>(&one, 1));
    ++steps;
    if (d->prefilled()) break;
    EXPECT_THROW(engine.decide(text), clef::Error) << "its sequence is held";
    engine.runner->suspend(*d);
    rt::Runner::StepOrders orders;
    orders.advance = std::span<rt::DecisionInProgress* const>(&one, 1);
    orders.most_tokens = clef::backbone::kPausablePiece;
    EXPECT_THROW(engine.runner->step(orders), clef::Error);
    others.push_back(engine.decide(text).body);
    engine.runner->resume(*d);
  }
  const rt::Decision decided = engine.runner->finish(*d);
  EXPECT_EQ(decided.body, alone);
  EXPECT_GE(steps, 2);  // image 0, then image 1 with the prefill's first piece
  ASSERT_EQ(others.size(), static_cast<std::size_t>(steps - 1));
  for (const std::string& o : others) EXPECT_EQ(o, text_alone);
  EXPECT_EQ(decided.suspensions, steps - 1);
  EXPECT_GT(decided.timings.paused_ms, 0.0);
}

TEST_F(ImageEngineTest, TheSameImageTwiceGivesIdenticalBytes) {
  const Value body = with_images({uri(kGauge)});
  const rt::Decision a = engine().decide(body);
  engine().decide(with_images({uri(kArrows)}));  // something else in between
  const rt::Decision b = engine().decide(body);
  EXPECT_EQ(a.body, b.body);
  // Two copies of one image in one request: both blocks get the same rows, so the answers are
  // those of a request whose images are equal, decided twice alike.
  const Value twice = with_images({uri(kGauge), uri(kGauge)});
  EXPECT_EQ(engine().decide(twice).body, engine().decide(twice).body);
}

/// Closed form of contract section 4 for images one after another: text token i has position
/// i - (shift so far); image token k of an image whose <|vision_start|> is at index s gets
/// (q + 1, q + 1 + k / W, q + 1 + k % W) with q = s - shift; each image adds N - max(H, W).
std::vector<clef::backbone::RopePosition> closed_form(std::size_t n,
                                                      const clef::record::Record& rec,
                                                      const std::vector<std::pair<int, int>>& hw) {
  std::vector<clef::backbone::RopePosition> out(n);
  int shift = 0;
  std::size_t img = 0;
  for (std::size_t i = 0; i < n;) {
    if (img < rec.images.size() && i == rec.images[img].first_token) {
      const auto [H, W] = hw[img];
      const int q1 = static_cast<int>(i) - shift;  // (index of <|vision_start|> - shift) + 1
      for (int k = 0; k < H * W; ++k, ++i) out[i] = {q1, q1 + k / W, q1 + k % W, 0};
      shift += H * W - std::max(H, W);
      ++img;
      continue;
    }
    const int p = static_cast<int>(i) - shift;
    out[i] = {p, p, p, p};
    ++i;
  }
  return out;
}

/// The record of `body` for the tiny vocabulary with the given image token counts.
clef::record::Record record_of(const Value& body, const std::vector<std::size_t>& image_tokens) {
  static const auto model = [] {
    clef::test::ensure_llama_backend();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    return std::unique_ptr<llama_model, decltype(&llama_model_free)>(
        llama_model_load_from_file(clef::test::tiny_model().backbone.string().c_str(), mp),
        &llama_model_free);
  }();
  const clef::record::LlamaTokenizer tok(llama_model_get_vocab(model.get()),
                                         clef::record::Normalization::nfc);
  clef::request::RequestLimits limits;
  const clef::request::Request req = clef::request::parse_request(body, limits);
  clef::record::EncodeOptions o;
  o.max_length = 4096;
  o.image_tokens = image_tokens;
  return clef::record::encode_record(req, tok, o);
}

TEST(ImagePositions, FedPositionsEqualTheClosedFormForOneAndTwoImages) {
  const std::vector<std::pair<int, int>> grids = {{15, 20}, {7, 10}};  // arrows, gauge (H x W)
  for (std::size_t n_images : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(n_images) + " image(s)");
    std::vector<std::size_t> tokens;
    std::vector<clef::vision::ImageGrid> g;
    std::vector<std::pair<int, int>> hw(grids.begin(), grids.begin() + n_images);
    for (const auto& [H, W] : hw) {
      tokens.push_back(static_cast<std::size_t>(H * W));
      clef::vision::ImageGrid grid;
      grid.grid_h = 2 * H;
      grid.grid_w = 2 * W;
      grid.merged_h = H;
      grid.merged_w = W;
      g.push_back(grid);
    }
    const clef::record::Record rec = record_of(clef::json::parse(kCard), tokens);
    ASSERT_EQ(rec.images.size(), n_images);
    // Structure: the prefix, then <|vision_start|> right before each block.
    EXPECT_EQ(rec.images[0].first_token, rec.prefix_tokens + 1);
    const auto positions = rt::record_positions(rec, g);
    const auto expected = closed_form(rec.ids.size(), rec, hw);
    ASSERT_EQ(positions.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(positions[i], expected[i]) << "token " << i;
    }
    // What libllama receives, batch by batch, for two chunk sizes.
    std::vector<clef::backbone::EmbeddingSpan> spans;
    for (const auto& b : rec.images) {
      spans.push_back({static_cast<int>(b.first_token), static_cast<int>(b.n_tokens), {}});
    }
    for (int chunk : {512, 64}) {
      std::vector<clef::backbone::RopePosition> fed(rec.ids.size());
      for (const auto& batch :
           clef::backbone::prefill_batches(static_cast<int>(rec.ids.size()), spans, chunk)) {
        const auto pos = clef::backbone::batch_positions(batch, positions);
        const auto n = static_cast<std::size_t>(batch.n_tokens);
        if (batch.embeddings) {  // the same layout as backbone::llama_mrope_layout (mtmd's)
          std::vector<clef::backbone::RopePosition> m;
          for (std::size_t j = 0; j < n; ++j) {
            const auto& p = positions[batch.start + j];
            m.push_back({p.t, p.h, p.w, p.z});
          }
          ASSERT_EQ(pos, clef::backbone::llama_mrope_layout(m));
        }
        for (std::size_t j = 0; j < n; ++j) {
          auto& f = fed[batch.start + j];
          if (batch.embeddings) {
            f = {pos[j], pos[n + j], pos[2 * n + j], pos[3 * n + j]};
          } else {
            f = {pos[j], pos[j], pos[j], pos[j]};  // libllama broadcasts a token's position
          }
        }
      }
      for (std::size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(fed[i], expected[i]) << "chunk " << chunk << ", token " << i;
      }
    }
  }
}

TEST(ImageHiddenStates, APixelRegionChangesItsImageTokensRowsAndNothingBefore) {
  clef::test::ensure_llama_backend();
  const auto& m = clef::test::tiny_model();
  clef::backbone::BackboneParams bp;
  bp.context_size = 1024;
  bp.threads = 1;
  bp.chunk_tokens = 128;  // several chunks inside the image
  clef::backbone::Backbone backbone(m.backbone.string(), bp);
  clef::vision::VisionTower tower(m.mmproj.string(), backbone.n_embd());

  clef::media::RgbImage a(640, 480);  // 20 x 15 tokens, no resize
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      std::uint8_t* p = a.pixel(x, y);
      p[0] = static_cast<std::uint8_t>(x / 3);
      p[1] = static_cast<std::uint8_t>(y / 2);
      p[2] = static_cast<std::uint8_t>(128 + ((x ^ y) & 63));
    }
  }
  clef::media::RgbImage b = a;
  const int token_row = 6, token_col = 9;  // image token k = 6 * 20 + 9
  for (int y = token_row * 32; y < token_row * 32 + 32; ++y) {
    for (int x = token_col * 32; x < token_col * 32 + 32; ++x) b.pixel(x, y)[1] = 255;
  }
  const int k = token_row * 20 + token_col;

  const clef::record::Record rec = record_of(clef::json::parse(kCard), {300});
  clef::vision::ImageGrid grid;
  grid.grid_h = 30;
  grid.grid_w = 40;
  grid.merged_h = 15;
  grid.merged_w = 20;
  const auto positions = rt::record_positions(rec, {grid});
  auto run = [&](const clef::media::RgbImage& img) {
    const std::vector<float> rows = tower.encode(img);
    const clef::backbone::EmbeddingSpan span{static_cast<int>(rec.images[0].first_token), 300,
                                             rows};
    return clef::test::hidden_states(backbone, rec.ids, positions, {&span, 1});
  };
  const auto ha = run(a);
  const auto hb = run(b);
  const auto ha2 = run(a);
  EXPECT_TRUE(ha.data == ha2.data) << "fresh state: the same record gives the same rows";
  const int first = static_cast<int>(rec.images[0].first_token);
  auto row_diff = [&](int t) {
    double d = 0;
    for (int j = 0; j < ha.n_embd; ++j) d += std::fabs(double(ha.row(t)[j]) - hb.row(t)[j]);
    return d;
  };
  // Rows before the image block are bit-identical; the image's rows change (the vision encoder
  // attends over the whole image, so every image token may change, the changed region's surely).
  for (int t = 0; t < first; ++t) ASSERT_EQ(row_diff(t), 0.0) << "row " << t;
  EXPECT_GT(row_diff(first + k), 1e-4) << "the changed image token's row";
  EXPECT_GT(row_diff(ha.rows - 1), 0.0) << "the record's last row sees the image";
}

/// The tiny mmproj with every value of its output bias NaN (a corrupt file, as a bad-input run
/// made one), written into `dir`.
std::filesystem::path nan_mmproj(const std::filesystem::path& dir) {
  ggml_context* meta = nullptr;
  gguf_init_params params{};
  params.no_alloc = false;
  params.ctx = &meta;
  gguf_context* src = gguf_init_from_file(clef::test::tiny_model().mmproj.string().c_str(), params);
  EXPECT_NE(src, nullptr);
  gguf_context* copy = gguf_init_empty();
  gguf_set_kv(copy, src);
  for (std::int64_t i = 0; i < gguf_get_n_tensors(src); ++i) {
    ggml_tensor* t = ggml_get_tensor(meta, gguf_get_tensor_name(src, i));
    if (std::string(ggml_get_name(t)) == "mm.2.bias") {
      float* v = static_cast<float*>(t->data);
      for (std::int64_t j = 0; j < ggml_nelements(t); ++j) v[j] = std::nanf("");
    }
    gguf_add_tensor(copy, t);
  }
  const auto out = dir / "nan-mmproj.gguf";
  EXPECT_TRUE(gguf_write_to_file(copy, out.string().c_str(), false));
  gguf_free(copy);
  gguf_free(src);
  ggml_free(meta);
  return out;
}

/// A record whose hidden states are not finite (NaN mmproj weights) is a clear 500, never a body
/// with NaN in it (not JSON), and the shorter text records after it keep a fresh engine's bytes:
/// its KV cells held NaN, which llama.cpp's attention mask (a score + -inf) does not hide, and
/// every later record on that sequence answered NaN.
TEST(ImageEngineCorruptWeights, ANonFiniteRecordIsA500AndLeavesNothingBehind) {
  clef::test::TempDir tmp;
  rt::EngineConfig c = tiny_config();
  c.mmproj_path = nan_mmproj(tmp.path()).string();
  c.state_cache_mb = 0;
  auto engine = rt::make_engine(c);
  const Value text = clef::json::parse(kCard);
  const std::string expected = rt::make_engine(tiny_config(false)).decide(text).body;
  EXPECT_EQ(engine.decide(text).body, expected);
  for (int round = 0; round < 2; ++round) {
    try {
      engine.decide(with_images({uri(kGauge)}));
      ADD_FAILURE() << "a non-finite record was answered";
    } catch (const clef::Error& e) {
      EXPECT_EQ(e.status(), 500) << e.what();
      EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
    }
    EXPECT_EQ(engine.decide(text).body, expected) << "round " << round;
  }
}

TEST_F(ImageEngineTest, RefusalsAreClear4xxErrors) {
  const std::string arrows = uri(kArrows);
  expect_refused(engine(), with_images({"data:image/png;base64,not base64!"}), 400, "images.0",
                 "base64");
  expect_refused(engine(), with_images({"data:image/gif;base64,R0lGODlhAQABAAAAACw="}), 415,
                 "images.0", "image/gif");
  expect_refused(engine(), with_images({arrows, "/etc/passwd"}), 400, "images.1", "data URI");
  expect_refused(engine(), with_images({"https://example.com/a.png"}), 422, "images.0",
                 "--allow-image-urls");
  // The engine keeps working after refusals.
  EXPECT_EQ(engine().decide(with_images({arrows})).input_tokens,
            engine().decide(with_images({arrows})).input_tokens);
}

TEST(ImageEngineRefusals, NoMmprojContextTooSmallAndForbiddenUrls) {
  const std::string arrows = uri(kArrows);
  {
    auto engine = rt::make_engine(tiny_config(false));
    expect_refused(engine, with_images({arrows}), 422, "images", "no mmproj");
    EXPECT_NO_THROW(engine.decide(clef::json::parse(kCard)));
  }
  {
    auto config = tiny_config();
    config.backbone.context_size = 512;
    config.allow_media_urls = true;
    auto engine = rt::make_engine(config);
    // 2 x 300 image tokens cannot fit 512: refused before anything is encoded, naming the numbers.
    expect_refused(engine, with_images({arrows, arrows}), 413, "images", "512");
    expect_refused(engine, with_images({arrows, arrows}), 413, "images", "300 tokens");
    // Checked from the header, before decoding: a PNG whose IHDR says 1280x960 (1,200 tokens)
    // and whose pixel data is missing (decoding it would be a 400) gets the budget's 413.
    std::vector<std::uint8_t> header = clef::vision::test_png_header(1280, 960);
    expect_refused(engine,
                   with_images({"data:image/png;base64," + clef::media::encode_base64(header)}),
                   413, "images", "1200 tokens");
    // 300 image tokens fit, but not with this schema: still a 413 that names the image tokens.
    Value small = clef::json::parse(R"({"state": "s", "questions": {"q": {"type": "noul"}}})");
    small.members().emplace_back("images", Value::array({Value::string(arrows)}));
    EXPECT_NO_THROW(engine.decide(small));
    std::string words;
    for (int i = 0; i < 300; ++i) words += " word";
    Value big_schema = clef::json::parse(R"({"state": "s", "questions": {"q": {"type": "noul",
        "instructions": ")" + words + R"("}}})");
    big_schema.members().emplace_back("images", Value::array({Value::string(arrows)}));
    expect_refused(engine, big_schema, 413, "images", "302 of them for the 1 image");
    for (const char* url : {"http://127.0.0.1:9/a.png", "http://169.254.169.254/latest/meta-data",
                            "http://[::1]/a.png", "http://10.1.2.3/a.png", "http://localhost/"}) {
      expect_refused(engine, with_images({url}), 400, "images.0", "does not fetch");
    }
  }
}

/// A loopback HTTP server for the URL tests (reachable only with the test-only loopback switch).
class LocalImageServer {
 public:
  LocalImageServer() {
    server_.Get("/arrows.png", [](const httplib::Request&, httplib::Response& res) {
      std::FILE* f = std::fopen(kArrows.c_str(), "rb");
      std::string bytes;
      for (int c; (c = std::fgetc(f)) != EOF;) bytes.push_back(static_cast<char>(c));
      std::fclose(f);
      res.set_content(bytes, "image/png");
    });
    server_.Get("/moved", [this](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("http://127.0.0.1:" + std::to_string(port_) + "/arrows.png");
    });
    server_.Get("/to-metadata", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("http://169.254.169.254/latest/meta-data/");
    });
    server_.Get("/missing",
                [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalImageServer() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ImageUrls, FetchedFromALoopbackServerOnlyWithTheTestSwitch) {
  LocalImageServer server;
  auto config = tiny_config();
  config.allow_media_urls = true;
  {
    auto engine = rt::make_engine(config);
    expect_refused(engine, with_images({server.url("/arrows.png")}), 400, "images.0", "loopback");
  }
  config.allow_loopback_media_urls_for_tests = true;
  auto engine = rt::make_engine(config);
  const std::string expected = engine.decide(with_images({uri(kArrows)})).body;
  EXPECT_EQ(engine.decide(with_images({server.url("/arrows.png")})).body, expected);
  EXPECT_EQ(engine.decide(with_images({server.url("/moved")})).body, expected);
  expect_refused(engine, with_images({server.url("/to-metadata")}), 400, "images.0",
                 "169.254.169.254");
  expect_refused(engine, with_images({server.url("/missing")}), 400, "images.0", "404");
}

using clef::test::run_command;

TEST_F(ImageEngineTest, ClefAskImageGivesTheEngineAnswer) {
  clef::test::TempDir tmp;
  const std::string request = (tmp.path() / "card.json").string();
  {
    std::FILE* f = std::fopen(request.c_str(), "wb");
    std::fputs(kCard, f);
    std::fclose(f);
  }
  const std::string base = std::string(CLEF_BINARY_DIR) + "/clef ask --model-dir " +
                           clef::test::tiny_model().backbone.parent_path().string() +
                           " -c 4096 -t 1 --request " + request;
  const std::string one = run_command(base + " --image " + kArrows + " 2>/dev/null");
  EXPECT_EQ(one, engine().decide(with_images({uri(kArrows)})).body + "\n");
  const std::string two =
      run_command(base + " --image " + kArrows + " --image " + kGauge + " 2>/dev/null");
  EXPECT_EQ(two, engine().decide(with_images({uri(kArrows), uri(kGauge)})).body + "\n");
  // Not an image: refused with a 415 message, exit code != 0.
  EXPECT_NE(std::system((base + " --image " + request + " >/dev/null 2>&1").c_str()), 0);
}

}  // namespace
