// Videos end to end on the tiny test model: clips made with FFmpeg's encoders go through the
// engine and `clef ask --video`; the record holds the reference processor's layout (timestamps,
// nested vision blocks), each temporal patch reaches the tower as two frames, a frame list equals
// the same frames as a file, and every refusal is a clear 4xx naming the video.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "json/parse.hpp"
#include "media/base64.hpp"
#include "media/decode.hpp"
#include "media/encode_png.hpp"
#include "record/llama_tokenizer.hpp"
#include "record/llama_vocab.hpp"
#include "runtime/make_engine.hpp"
#include "runtime/prepare/video_inputs.hpp"
#include "support/expect_refused.hpp"
#include "support/run_command.hpp"
#include "support/tiny_engine_config.hpp"
#include "support/video_clips.hpp"
#include "util/error.hpp"

namespace {

using clef::json::Value;
namespace rt = clef::runtime;
namespace ct = clef::test;

const char* kCard = R"({"state": "A red square moves to the right",
  "questions": {
    "motion": {"type": "choice", "instructions": "Where does the square go?",
      "criteria": {"left": "To the left", "right": "To the right", "still": "It does not move"}},
    "moving": {"type": "noul", "instructions": "Does something move?"}}})";

Value with_videos(std::vector<Value> videos, const char* media_kwargs = nullptr) {
  Value body = clef::json::parse(kCard);
  body.members().emplace_back("videos", Value::array(std::move(videos)));
  if (media_kwargs != nullptr)
    body.members().emplace_back("media_kwargs", clef::json::parse(media_kwargs));
  return body;
}

std::string video_uri(const std::vector<std::uint8_t>& bytes,
                      const char* type = "video/x-matroska") {
  return std::string("data:") + type + ";base64," + clef::media::encode_base64(bytes);
}

using ct::square_clip;  // 8 lossless 64x48 frames at 4 fps (2 s): the moving square

class VideoEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { engine_ = rt::make_engine(ct::tiny_engine_config()); }
  static void TearDownTestSuite() { engine_.reset(); }
  static rt::Engine& engine() { return *engine_; }
  static std::optional<rt::Engine> engine_;
};
std::optional<rt::Engine> VideoEngineTest::engine_;

using clef::test::expect_refused;
TEST_F(VideoEngineTest, AVideoIsWrittenAsTheProcessorWritesItAndAnswered) {
  const rt::PreparedRequest prepared =
      engine().prepare(with_videos({Value::string(video_uri(ct::write_clip(square_clip())))}));
  // 8 frames at 4 fps: int(8 / 4 * 2) = 4 frames, linspace(0, 7, 4) = 0 2 5 7; 4 x 48 x 64 is
  // under 131,072 pixels: beta = sqrt(131072 / (4 * 48 * 64)) -> 160 x 224 (5 x 7 tokens);
  // 2 temporal patches dated (0 + 0.5) / 2 = 0.25 -> "<0.2 seconds>" and (1.25 + 1.75) / 2.
  const rt::PreparedRequest text = engine().prepare(clef::json::parse(kCard));
  ASSERT_EQ(prepared.images.size(), 2u);
  ct::ensure_llama_backend();
  const auto vocab = clef::record::VocabModel::load(ct::tiny_model().backbone.string());
  const clef::record::LlamaTokenizer tok(vocab.vocab(), clef::record::Normalization::nfc);
  const auto vs = tok.special_id("<|vision_start|>");
  const auto ve = tok.special_id("<|vision_end|>");
  const auto pad = tok.special_id("<|video_pad|>");
  std::vector<clef::record::TokenId> expected(
      text.record.ids.begin(),
      text.record.ids.begin() + static_cast<long>(text.record.prefix_tokens));
  expected.push_back(vs);
  for (const char* stamp : {"<0.2 seconds>", "<1.5 seconds>"}) {
    for (auto id : tok.tokenize(stamp)) expected.push_back(id);
    expected.push_back(vs);
    expected.insert(expected.end(), 35, pad);
    expected.push_back(ve);
  }
  expected.push_back(ve);
  for (auto id : tok.tokenize("\n")) expected.push_back(id);
  const auto& ids = prepared.record.ids;
  ASSERT_GT(ids.size(), expected.size());
  EXPECT_EQ(std::vector<clef::record::TokenId>(ids.begin(),
                                               ids.begin() + static_cast<long>(expected.size())),
            expected);
  EXPECT_EQ(ids.size() - text.record.ids.size(), expected.size() - text.record.prefix_tokens);
  for (const auto& block : prepared.images) {
    EXPECT_EQ(block.resized_height, 160);
    EXPECT_EQ(block.resized_width, 224);
    EXPECT_EQ(block.grid.n_image_tokens(), 35);
    EXPECT_EQ(block.second_frame.width, 224);
    EXPECT_NE(block.image.rgb, block.second_frame.rgb) << "two different frames per patch";
  }
  ASSERT_EQ(prepared.record.images.size(), 2u);
  EXPECT_EQ(prepared.record.images[0].video, 0);
  // M-RoPE: each patch is a 5 x 7 block starting after its <|vision_start|>; the text after it
  // continues at start + max(5, 7).
  const std::size_t first = prepared.record.images[0].first_token;
  const auto& pos = prepared.positions;
  EXPECT_EQ(pos[first].t, pos[first - 1].t + 1);
  EXPECT_EQ(pos[first + 34].h, pos[first].h + 4);
  EXPECT_EQ(pos[first + 34].w, pos[first].w + 6);
  EXPECT_EQ(pos[first + 35].t, pos[first].t + 7);  // <|vision_end|>

  const rt::Decision d = engine().decide(prepared);
  EXPECT_EQ(d.input_tokens, static_cast<int>(ids.size()));
  ASSERT_NE(d.response.find("answers"), nullptr);
  EXPECT_EQ(d.response.find("answers")->members().size(), 2u);
  EXPECT_NE(d.body, engine().decide(clef::json::parse(kCard)).body);
  // The same request again: the same bytes.
  EXPECT_EQ(
      engine().decide(with_videos({Value::string(video_uri(ct::write_clip(square_clip())))})).body,
      d.body);
}

TEST_F(VideoEngineTest, AFrameListEqualsTheSameFramesAsAFile) {
  const rt::Decision file =
      engine().decide(with_videos({Value::string(video_uri(ct::write_clip(square_clip())))}));
  std::vector<Value> frames;
  for (int i = 0; i < 8; ++i) {
    frames.push_back(Value::string(
        "data:image/png;base64," +
        clef::media::encode_base64(clef::media::encode_png(ct::moving_square(64, 48, i)))));
  }
  const Value list = Value::object({{"frames", Value::array(frames)}, {"fps", Value::integer(4)}});
  EXPECT_EQ(engine().decide(with_videos({list})).body, file.body);
  // Without fps the reference assumes 24: int(8 / 24 * 2) = 0 -> 4 frames, other timestamps.
  const Value no_fps = Value::object({{"frames", Value::array(frames)}});
  const rt::PreparedRequest p = engine().prepare(with_videos({no_fps}));
  EXPECT_EQ(p.images.size(), 2u);
  EXPECT_NE(engine().decide(with_videos({no_fps})).body, file.body);
}

TEST_F(VideoEngineTest, IdenticalFramesAndMediaKwargsFollowTheRules) {
  ct::ClipSpec still = square_clip(6, 3);
  still.frame = [](int) { return ct::solid_frame(64, 48, 30, 160, 90); };
  const rt::PreparedRequest p =
      engine().prepare(with_videos({Value::string(video_uri(ct::write_clip(still)))}));
  // 6 frames at 3 fps: int(6 / 3 * 2) = 4 -> 0 2 3 5: two patches of two identical frames.
  ASSERT_EQ(p.images.size(), 2u);
  for (const auto& block : p.images) EXPECT_EQ(block.image.rgb, block.second_frame.rgb);
  // num_frames 3: 0 2 5 (2.5 -> 2), padded with frame 5 again.
  const rt::PreparedRequest three = engine().prepare(with_videos(
      {Value::string(video_uri(ct::write_clip(square_clip())))}, R"({"num_frames": 3})"));
  ASSERT_EQ(three.images.size(), 2u);
  EXPECT_EQ(three.images[1].image.rgb, three.images[1].second_frame.rgb);
  // do_sample_frames false: all 8 frames, 4 patches; size caps the resize.
  const rt::PreparedRequest all = engine().prepare(with_videos(
      {Value::string(video_uri(ct::write_clip(square_clip())))},
      R"({"do_sample_frames": false, "size": {"shortest_edge": 1024, "longest_edge": 65536}})"));
  ASSERT_EQ(all.images.size(), 4u);
  EXPECT_EQ(all.images[0].resized_height, 64);  // 8 x 64 x 64 = 32768 fits 65536
}

TEST_F(VideoEngineTest, MediaKwargsPixelsReachTheImageProcessor) {
  // A 64 x 48 PNG: by default min_pixels 65,536 raises it to 320 x 224 (10 x 7 = 70 tokens);
  // with min_pixels 4,096 and max_pixels 8,192 it stays 64 x 64 (2 x 2 = 4 tokens: round(48/32)).
  const std::string png =
      "data:image/png;base64," +
      clef::media::encode_base64(clef::media::encode_png(ct::moving_square(64, 48, 1)));
  Value body = clef::json::parse(kCard);
  body.members().emplace_back("images", Value::array({Value::string(png)}));
  EXPECT_EQ(engine().prepare(body).images[0].grid.n_image_tokens(), 70);
  body.members().emplace_back("media_kwargs",
                              clef::json::parse(R"({"min_pixels": 4096, "max_pixels": 8192})"));
  const rt::PreparedRequest small = engine().prepare(body);
  EXPECT_EQ(small.images[0].resized_height, 64);
  EXPECT_EQ(small.images[0].resized_width, 64);
  EXPECT_EQ(small.images[0].grid.n_image_tokens(), 4);
  EXPECT_NO_THROW(engine().decide(small));
}

/// On the tiny model and on Clef 27B's ratios (small-27b: its 320-wide projector and recurrent
/// state sizes).
class VideoStateCache : public ::testing::TestWithParam<std::string> {};

TEST_P(VideoStateCache, ASecondQuestionSetOnTheSameVideoResumesAndKeepsTheColdBytes) {
  const std::string clip = video_uri(ct::write_clip(square_clip()));
  Value first = with_videos({Value::string(clip)});
  Value second = clef::json::parse(R"({"state": "A red square moves to the right",
      "questions": {"count": {"type": "score", "criteria": ["none", "one", "many"]}}})");
  second.members().emplace_back("videos", Value::array({Value::string(clip)}));
  auto cold_config = ct::preset_engine_config(GetParam());
  cold_config.state_cache_mb = 0;
  const std::string cold = rt::make_engine(cold_config).decide(second).body;
  auto warm_config = ct::preset_engine_config(GetParam());
  warm_config.state_cache_mb = 64;
  auto warm = rt::make_engine(warm_config);
  warm.decide(first);
  const rt::Decision hit = warm.decide(second);
  EXPECT_GT(hit.cached_tokens, 70) << "the video's two patches come from the cache";
  EXPECT_EQ(hit.body, cold);
  // Another video with the same token ids (same size, frame count and timestamps): no reuse of
  // the first one's patches (their pixels are in the key).
  ct::ClipSpec other = square_clip();
  other.frame = [](int i) { return ct::moving_square(64, 48, 7 - i); };
  Value third = second;
  third.members().back().second = Value::array({Value::string(video_uri(ct::write_clip(other)))});
  const rt::Decision miss = warm.decide(third);
  const std::size_t first_patch = warm.prepare(third).record.images[0].first_token;
  EXPECT_LE(static_cast<std::size_t>(miss.cached_tokens), first_patch)
      << "at most the text before the first patch is reused";
  EXPECT_EQ(miss.body, rt::make_engine(cold_config).decide(third).body);
}

INSTANTIATE_TEST_SUITE_P(Models, VideoStateCache, ::testing::ValuesIn(ct::model_presets()),
                         ct::preset_test_name);

TEST(VideoUrls, FetchedFromALoopbackServerOnlyWithTheTestSwitch) {
  const std::vector<std::uint8_t> clip = ct::write_clip(square_clip());
  httplib::Server server;
  server.Get("/square.mkv", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(clip.begin(), clip.end()), "video/x-matroska");
  });
  std::atomic<int> frame_fetches{0};
  const std::vector<std::uint8_t> frame_png = clef::media::encode_png(ct::moving_square(64, 48, 2));
  server.Get(R"(/frame/(\d+)\.png)", [&](const httplib::Request&, httplib::Response& res) {
    ++frame_fetches;
    res.set_content(std::string(frame_png.begin(), frame_png.end()), "image/png");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/square.mkv";
  auto config = ct::tiny_engine_config();
  config.allow_media_urls = true;
  {
    auto engine = rt::make_engine(config);
    expect_refused(engine, with_videos({Value::string(url)}), 400, "videos.0", "loopback");
  }
  config.allow_loopback_media_urls_for_tests = true;
  config.max_video_bytes = 30 * 1024 * 1024;  // over the image URL limit: the video one applies
  auto engine = rt::make_engine(config);
  EXPECT_EQ(engine.decide(with_videos({Value::string(url)})).body,
            engine.decide(with_videos({Value::string(video_uri(clip))})).body);
  // A frame list of 12 URL frames at 24 fps: the processor samples 4 (int(12 / 24 * 2) = 1,
  // raised to 4), and only those are fetched (reported: every frame was downloaded and held).
  std::vector<Value> urls;
  for (int i = 0; i < 12; ++i) {
    urls.push_back(Value::string("http://127.0.0.1:" + std::to_string(port) + "/frame/" +
                                 std::to_string(i) + ".png"));
  }
  const rt::PreparedRequest p =
      engine.prepare(with_videos({Value::object({{"frames", Value::array(urls)}})}));
  EXPECT_EQ(p.images.size(), 2u);
  EXPECT_EQ(frame_fetches.load(), 4);
  server.stop();
  thread.join();
}

std::string file_uri(const std::string& path, const char* type) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  std::vector<std::uint8_t> bytes;
  for (int c; (c = std::fgetc(f)) != EOF;) bytes.push_back(static_cast<std::uint8_t>(c));
  std::fclose(f);
  return std::string("data:") + type + ";base64," + clef::media::encode_base64(bytes);
}

TEST_F(VideoEngineTest, FrameListsTurnExifFramesAndTakeMediaTypeParameters) {
  // Reported: four identical JPEG frames with EXIF orientation 6 were refused as frames that
  // change size (header size before the turn, decoded size after).
  const std::string jpeg =
      file_uri(std::string(CLEF_TEST_DATA) + "/vision/decode/jpeg_exif_orient6.jpg", "image/jpeg");
  const Value list =
      Value::object({{"frames", Value::array({Value::string(jpeg), Value::string(jpeg),
                                              Value::string(jpeg), Value::string(jpeg)})},
                     {"fps", Value::integer(2)}});
  const rt::PreparedRequest p = engine().prepare(with_videos({list}));
  ASSERT_EQ(p.images.size(), 2u);
  const clef::media::RgbImage turned =
      clef::media::decode_image(clef::media::decode_base64(jpeg.substr(jpeg.find(',') + 1)));
  EXPECT_EQ(p.images[0].input_width, turned.width);
  EXPECT_EQ(p.images[0].input_height, turned.height);
  EXPECT_NO_THROW(engine().decide(p));
  // Reported: media-type parameters are legal in a data URI.
  const std::vector<std::uint8_t> clip = ct::write_clip(square_clip());
  EXPECT_EQ(engine()
                .decide(with_videos({Value::string("data:video/x-matroska;codecs=ffv1;base64," +
                                                   clef::media::encode_base64(clip))}))
                .body,
            engine().decide(with_videos({Value::string(video_uri(clip))})).body);
}

TEST_F(VideoEngineTest, AGoneClientStopsTheVideoBeingRead) {
  rt::Cancellation gone;
  gone.cancel();
  EXPECT_THROW(engine().prepare(
                   with_videos({Value::string(video_uri(ct::write_clip(square_clip())))}), gone),
               clef::DecisionCancelled);
  // Without a video nothing is read: the request is prepared (the decision itself checks later).
  EXPECT_NO_THROW(engine().prepare(clef::json::parse(kCard), gone));
}

TEST_F(VideoEngineTest, ReportedEdgeValuesAreClearRefusals) {
  // fps 0 in a frame list: "above 0", not an integer range.
  const std::string png =
      "data:image/png;base64," +
      clef::media::encode_base64(clef::media::encode_png(ct::moving_square(64, 48, 0)));
  Value zero = Value::object({{"frames", Value::array({Value::string(png), Value::string(png)})},
                              {"fps", Value::integer(0)}});
  expect_refused(engine(), with_videos({zero}), 400, "videos.0.fps", "above 0");
  // A frame rate so small that the frame count to sample is infinite: the reference fails
  // (int(inf)); a 400, not undefined behaviour.
  Value tiny = Value::object({{"frames", Value::array({Value::string(png), Value::string(png)})},
                              {"fps", Value::floating(1e-320)}});
  expect_refused(engine(), with_videos({tiny}), 400, "videos.0", "not finite");
  // A frame header over the video frame-pixel limit names the frame.
  std::vector<std::uint8_t> header = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                      0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  for (std::uint32_t v : {100000u, 100000u}) {
    for (int sh = 24; sh >= 0; sh -= 8) header.push_back(static_cast<std::uint8_t>(v >> sh));
  }
  for (std::uint8_t b : {8, 2, 0, 0, 0, 0, 0, 0, 0}) header.push_back(b);
  Value huge = Value::object(
      {{"frames",
        Value::array({Value::string(png), Value::string("data:image/png;base64," +
                                                        clef::media::encode_base64(header))})}});
  expect_refused(engine(), with_videos({huge}), 413, "videos.0.frames.1", "videos.0.frames.1");
}

TEST(VideoEngineRefusals, BadFilesLimitsUrlsAndNoMmproj) {
  const std::string clip = video_uri(ct::write_clip(square_clip()));
  {
    auto engine = rt::make_engine(ct::tiny_engine_config(false));
    expect_refused(engine, with_videos({Value::string(clip)}), 422, "videos", "no mmproj");
  }
  auto config = ct::tiny_engine_config();
  config.max_video_seconds = 1.5;
  config.max_video_frame_pixels = 100000;
  config.allow_media_urls = true;
  auto engine = rt::make_engine(config);
  expect_refused(engine, with_videos({Value::string(clip)}), 413, "videos.0", "limit is 1.5");
  ct::ClipSpec big = square_clip(2, 4);
  big.width = 512;
  big.height = 256;
  big.frame = [](int) { return ct::solid_frame(512, 256, 1, 2, 3); };
  expect_refused(engine, with_videos({Value::string(video_uri(ct::write_clip(big)))}), 413,
                 "videos.0", "131072 pixels");
  std::vector<std::uint8_t> bytes = ct::write_clip(square_clip(4, 4));
  expect_refused(engine,
                 with_videos({Value::string(
                     video_uri(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 50)))}),
                 400, "videos.0", "video");
  ct::ClipSpec huff = square_clip(4, 4);
  huff.codec = "huffyuv";
  huff.pixel_format = "yuv422p";
  expect_refused(engine, with_videos({Value::string(video_uri(ct::write_clip(huff)))}), 415,
                 "videos.0", "huffyuv");
  expect_refused(engine, with_videos({Value::string("data:video/ogg;base64,AAAA")}), 415,
                 "videos.0", "video/ogg");
  expect_refused(engine, with_videos({Value::string(video_uri(ct::write_clip(square_clip(1, 4))))}),
                 400, "videos.0", "t:1 must be larger than temporal_factor:2");
  for (const char* url : {"http://127.0.0.1:9/a.mp4", "http://169.254.169.254/latest/meta-data",
                          "http://10.1.2.3/v.webm"}) {
    expect_refused(engine, with_videos({Value::string(url)}), 400, "videos.0", "does not fetch");
  }
  expect_refused(engine, with_videos({Value::string("v.mp4")}), 400, "videos.0", "data URI");
  // A frame list whose frames differ in size.
  const auto png = [](int w, int h) {
    return Value::string(
        "data:image/png;base64," +
        clef::media::encode_base64(clef::media::encode_png(ct::solid_frame(w, h, 1, 1, 1))));
  };
  expect_refused(
      engine, with_videos({Value::object({{"frames", Value::array({png(32, 32), png(64, 32)})}})}),
      400, "videos.0.frames.1", "first frame's size");
  // The engine still answers afterwards.
  EXPECT_NO_THROW(engine.decide(clef::json::parse(kCard)));
  // Without URLs allowed: 422 with a stable code.
  auto no_urls = rt::make_engine(ct::tiny_engine_config());
  expect_refused(no_urls, with_videos({Value::string("https://example.com/v.mp4")}), 422,
                 "videos.0", "--allow-media-urls");
}

TEST(VideoEngineRefusals, AVideoThatCannotFitTheContextIs413) {
  auto config = ct::tiny_engine_config();
  config.backbone.context_size = 512;
  auto engine = rt::make_engine(config);
  // 8 frames, do_sample_frames off, at least 1,000,000 pixels: beta = sqrt(1e6 / (8 * 48 * 64))
  // -> 320 x 416, 4 patches of 10 x 13 = 520 tokens: over the context before any decoding.
  const Value big = with_videos({Value::string(video_uri(ct::write_clip(square_clip())))},
                                R"({"do_sample_frames": false,
                                    "size": {"shortest_edge": 1000000, "longest_edge": 9000000}})");
  expect_refused(engine, big, 413, "videos", "context size is 512");
  expect_refused(engine, big, 413, "videos", "videos.0: 4 temporal patches of 320x416 px");
  // Media that fit, with a schema that does not: the 413 names the videos.
  std::string words;
  for (int i = 0; i < 400; ++i) words += " word";
  Value long_schema = clef::json::parse(R"({"state": "s", "questions": {"q": {"type": "noul",
      "instructions": ")" + words + R"("}}})");
  long_schema.members().emplace_back(
      "videos", Value::array({Value::string(video_uri(ct::write_clip(square_clip())))}));
  expect_refused(engine, long_schema, 413, "videos", "for the images and videos");
}

using clef::test::run_command;

TEST_F(VideoEngineTest, ClefAskVideoGivesTheEngineAnswer) {
  ct::TempDir tmp;
  const std::string request = (tmp.path() / "card.json").string();
  const std::string video = (tmp.path() / "square.mkv").string();
  {
    std::FILE* f = std::fopen(request.c_str(), "wb");
    std::fputs(kCard, f);
    std::fclose(f);
    const std::vector<std::uint8_t> bytes = ct::write_clip(square_clip());
    f = std::fopen(video.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  const std::string base = std::string(CLEF_BINARY_DIR) + "/clef ask --model-dir " +
                           ct::tiny_model().backbone.parent_path().string() +
                           " -c 4096 -t 1 --request " + request;
  EXPECT_EQ(
      run_command(base + " --video " + video + " 2>/dev/null"),
      engine().decide(with_videos({Value::string(video_uri(ct::write_clip(square_clip())))})).body +
          "\n");
  // Not a video: refused, exit code != 0.
  EXPECT_NE(std::system((base + " --video " + request + " >/dev/null 2>&1").c_str()), 0);
}

}  // namespace
