// The vision tower receives the reference processor's pixel tensor bit for bit: for every image
// run of the coreai oracle whose image is shipped, the tensor clip's encoder graph gets ("inp_raw",
// captured through the eval callback), put in the processor's patch order, has the fixture's
// pixel_values_sha256. Plus: rows per image token, determinism, the one-ulp difference of
// llama.cpp's own float32 normalization that this path avoids, and the mean/std warning.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf.h"
#include "media/decode.hpp"
#include "sha256.hpp"
#include "support/test_files.hpp"
#include "support/tiny_model.hpp"
#include "util/error.hpp"
#include "vision/grid.hpp"
#include "vision/mmproj_info.hpp"
#include "vision/patches.hpp"
#include "vision/processor.hpp"
#include "vision/resample.hpp"
#include "vision/tower.hpp"

namespace clef::vision {
namespace {

using test::data_path;
using test::read_bytes;
using test::sha256_hex;

constexpr int kTinyEmbd = 64;  // the tiny preset's backbone n_embd (checked below)

/// A captured tower input: planar [3][height][width].
struct Captured {
  std::vector<float> planar;
  int width = 0;
  int height = 0;
};

TowerParams capturing(Captured& into) {
  TowerParams p;
  p.threads = 1;
  p.on_input = [&into](std::span<const float> planar, int width, int height) {
    into.planar.assign(planar.begin(), planar.end());
    into.width = width;
    into.height = height;
  };
  return p;
}

/// Planar [3][H][W] in the processor's pixel_values order (make_patches: merge block by merge
/// block, patches row-major inside a block; per row channel, temporal copy, pixels row-major).
std::vector<float> to_patch_order(const Captured& c, const ProcessorConfig& config) {
  const int p = config.patch_size, m = config.merge_size, T = config.temporal_patch_size;
  const int gh = c.height / p, gw = c.width / p;
  const std::size_t plane = static_cast<std::size_t>(c.width) * c.height;
  std::vector<float> out;
  out.reserve(plane * 3 * T);
  for (int bh = 0; bh < gh / m; ++bh) {
    for (int bw = 0; bw < gw / m; ++bw) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw) {
          const int y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
          for (int ch = 0; ch < 3; ++ch) {
            for (int t = 0; t < T; ++t) {
              for (int y = 0; y < p; ++y) {
                for (int x = 0; x < p; ++x) {
                  out.push_back(
                      c.planar[ch * plane + static_cast<std::size_t>(y0 + y) * c.width + (x0 + x)]);
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

rapidjson::Document load_fixture() {
  const auto bytes = read_bytes(data_path("oracle/coreai/fixture.json"));
  rapidjson::Document doc;
  doc.Parse(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (doc.HasParseError()) throw std::runtime_error("fixture.json does not parse");
  return doc;
}

TEST(VisionTower, ReceivesTheReferencePixelTensorForEveryOracleImageRun) {
  Captured captured;
  VisionTower tower(clef::test::tiny_model().mmproj.string(), kTinyEmbd, capturing(captured));
  ASSERT_EQ(tower.n_embd(), static_cast<int>(clef::test::tiny_model().preset.backbone.n_embd));
  const ProcessorConfig& config = tower.processor();
  EXPECT_EQ(config.min_pixels, ProcessorConfig{}.min_pixels);
  EXPECT_EQ(config.max_pixels, ProcessorConfig{}.max_pixels);

  const rapidjson::Document fx = load_fixture();
  int checked = 0;
  for (const auto& run : fx["runs"].GetArray()) {
    if (!run.HasMember("pixel_values_sha256") || !run["pixel_values_sha256"].IsString()) continue;
    const std::string file = run["image_files"][0].GetString();
    const std::string path = data_path("oracle/coreai/images/" + file);
    if (!std::filesystem::exists(path)) continue;
    const std::string arm = run["arm"].GetString();
    SCOPED_TRACE(std::string(run["id"].GetString()) + " " + arm + " " + file);
    media::RgbImage rgb = media::decode_image(read_bytes(path));
    if (arm != "native") {  // g256 / g448: the oracle resized with Pillow before the processor
      const int side = std::stoi(arm.substr(1));
      rgb = resize_bicubic(rgb, side, side, ResampleKind::pillow_bicubic);
    }
    const media::RgbImage resized = resize_for_processor(rgb, config);
    captured = {};
    const std::vector<float> rows = tower.encode(resized);
    ASSERT_EQ(captured.width, resized.width);
    ASSERT_EQ(captured.height, resized.height);
    const std::vector<float> patches = to_patch_order(captured, config);
    EXPECT_EQ(sha256_hex(patches.data(), patches.size() * 4),
              run["pixel_values_sha256"].GetString());
    // And the same floats as clef's own preprocess_image (the 30 hashes of coreai_pixels_test).
    const ProcessedImage ref = preprocess_image(rgb, config);
    EXPECT_TRUE(patches == ref.pixel_values.data);
    EXPECT_EQ(rows.size(), static_cast<std::size_t>(ref.grid.n_image_tokens()) * tower.n_embd());
    ++checked;
  }
  EXPECT_EQ(checked, 30);
}

TEST(VisionTower, RowsAreFiniteDeterministicAndDependOnTheirRegion) {
  VisionTower tower(clef::test::tiny_model().mmproj.string(), kTinyEmbd);
  media::RgbImage img(320, 256);  // 10 x 8 image tokens, no resize needed (81,920 px >= min_pixels)
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      std::uint8_t* p = img.pixel(x, y);
      p[0] = static_cast<std::uint8_t>(x);
      p[1] = static_cast<std::uint8_t>(y);
      p[2] = static_cast<std::uint8_t>((x * y) >> 4);
    }
  }
  ASSERT_EQ(resize_for_processor(img, tower.processor()).rgb, img.rgb);
  const std::vector<float> a = tower.encode(img);
  const std::vector<float> b = tower.encode(img);
  ASSERT_EQ(a.size(), 80u * tower.n_embd());
  EXPECT_TRUE(a == b) << "the same image twice gives identical rows";
  for (float v : a) ASSERT_TRUE(std::isfinite(v));

  media::RgbImage changed = img;
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) changed.pixel(x, y)[0] = 255;  // image token (0, 0)
  }
  const std::vector<float> c = tower.encode(changed);
  double diff_first = 0;
  for (int j = 0; j < tower.n_embd(); ++j) diff_first += std::fabs(double(c[j]) - a[j]);
  EXPECT_GT(diff_first, 1e-4) << "the changed region's token differs";
}

/// The weights are read at the first image (issue 44: a text-only server of Clef 27B held 0.9 GB
/// of mmproj weights it never used), and stay for the images after it; giving back compute
/// memory reloads them only when they were loaded.
TEST(VisionTower, ReadsItsWeightsAtTheFirstImage) {
  VisionTower tower(clef::test::tiny_model().mmproj.string(), kTinyEmbd);
  EXPECT_EQ(tower.n_embd(), kTinyEmbd) << "checked without the weights";
  EXPECT_FALSE(tower.loaded());
  tower.release_compute_memory();
  EXPECT_FALSE(tower.loaded()) << "nothing to give back";
  const media::RgbImage img(64, 64);
  const std::vector<float> first = tower.encode(img);
  EXPECT_TRUE(tower.loaded());
  tower.release_compute_memory();
  EXPECT_TRUE(tower.loaded());
  EXPECT_EQ(tower.encode(img), first) << "reloaded, the same rows";
  VisionTower fresh(clef::test::tiny_model().mmproj.string(), kTinyEmbd);
  EXPECT_EQ(fresh.encode(img), first) << "a lazy first load gives the rows an eager one gave";
}

TEST(VisionTower, RefusesSidesThatAreNotMultiplesOfTheFactor) {
  VisionTower tower(clef::test::tiny_model().mmproj.string(), kTinyEmbd);
  EXPECT_THROW(tower.encode(media::RgbImage(100, 64)), Error);
}

TEST(VisionTower, RefusesAProjectorOfAnotherWidthOrAFileThatIsNotOne) {
  try {
    VisionTower tower(clef::test::tiny_model().mmproj.string(), kTinyEmbd + 1);
    FAIL() << "a width mismatch must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::model_error);
    EXPECT_NE(std::string(e.what()).find("65"), std::string::npos) << e.what();
  }
  EXPECT_THROW(VisionTower(clef::test::tiny_model().backbone.string(), kTinyEmbd), Error);
  EXPECT_THROW(VisionTower("/nonexistent/mmproj.gguf", kTinyEmbd), Error);
}

TEST(VisionTower, Float32NormalizationOfLlamaCppDiffersFromTheReferenceOnHalfTheBytes) {
  // clip_image_f32::from_u8 + normalize: x / 255.0f, then (x - 0.5f) / 0.5f, in float32.
  int differ = 0;
  for (int x = 0; x < 256; ++x) {
    volatile float f = static_cast<float>(x) / 255.0f;
    f = (f - 0.5f) / 0.5f;
    if (f != normalize_sample(x)) ++differ;
  }
  EXPECT_EQ(differ, 128);  // why VisionTower feeds clip_image_f32 itself (tower.hpp)
}

struct GgufFree {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlFree {
  void operator()(ggml_context* c) const { ggml_free(c); }
};

/// A copy of the tiny mmproj named `name` in `dir`, its metadata changed by `edit` and each
/// tensor (name, data) by `edit_tensor` before it is added.
std::filesystem::path mmproj_copy(const std::filesystem::path& dir, const std::string& name,
                                  const std::function<void(gguf_context*)>& edit,
                                  const std::function<void(ggml_tensor*)>& edit_tensor = {}) {
  ggml_context* meta = nullptr;
  gguf_init_params params{};
  params.no_alloc = false;
  params.ctx = &meta;
  const std::unique_ptr<gguf_context, GgufFree> src(
      gguf_init_from_file(clef::test::tiny_model().mmproj.string().c_str(), params));
  const std::unique_ptr<ggml_context, GgmlFree> tensors(meta);
  if (!src) throw std::runtime_error("cannot read the tiny mmproj");
  const std::unique_ptr<gguf_context, GgufFree> copy(gguf_init_empty());
  gguf_set_kv(copy.get(), src.get());
  for (std::int64_t i = 0; i < gguf_get_n_tensors(src.get()); ++i) {
    ggml_tensor* t = ggml_get_tensor(meta, gguf_get_tensor_name(src.get(), i));
    if (edit_tensor) edit_tensor(t);
    gguf_add_tensor(copy.get(), t);
  }
  edit(copy.get());
  const auto out = dir / name;
  if (!gguf_write_to_file(copy.get(), out.string().c_str(), false)) {
    throw std::runtime_error("cannot write " + out.string());
  }
  return out;
}

/// A copy of the tiny mmproj with CLIP's image mean/std, as some converted files have.
std::filesystem::path clip_normalized_copy(const std::filesystem::path& dir) {
  return mmproj_copy(dir, "mmproj-clip-norm.gguf", [](gguf_context* g) {
    const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    const float sd[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    gguf_set_arr_data(g, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
    gguf_set_arr_data(g, "clip.vision.image_std", GGUF_TYPE_FLOAT32, sd, 3);
  });
}

/// The projector type is read in clip.cpp's order, as `clef info` reads it (issue 43: the two
/// readers tried the keys in opposite orders, so a file with both was refused by one and loaded
/// by the other).
TEST(VisionTower, ReadsTheProjectorTypeInClipsOrder) {
  clef::test::TempDir tmp;
  const auto clip_key_first = mmproj_copy(tmp.path(), "a.gguf", [](gguf_context* g) {
    gguf_set_val_str(g, "clip.projector_type", "qwen3vl_merger");
    gguf_set_val_str(g, "clip.vision.projector_type", "resampler");
  });
  EXPECT_EQ(clef::vision::read_mmproj_info(clip_key_first.string()).projector_type,
            "qwen3vl_merger");
  EXPECT_NO_THROW(VisionTower(clip_key_first.string(), kTinyEmbd));
  const auto other_first = mmproj_copy(tmp.path(), "b.gguf", [](gguf_context* g) {
    gguf_set_val_str(g, "clip.projector_type", "resampler");
    gguf_set_val_str(g, "clip.vision.projector_type", "qwen3vl_merger");
  });
  EXPECT_THROW(clef::vision::read_mmproj_info(other_first.string()), Error);
}

/// A tensor clip's loader takes as optional but its qwen3vl graph asserts on (renamed in the
/// header, as a bad-input run did) is refused when the tower is made, not by an abort of the
/// server at its first image.
TEST(VisionTower, RefusesAnMmprojWithoutATensorTheGraphAssertsOn) {
  clef::test::TempDir tmp;
  const auto path = mmproj_copy(
      tmp.path(), "no-position-embd.gguf", [](gguf_context*) {},
      [](ggml_tensor* t) {
        if (std::string(ggml_get_name(t)) == "v.position_embd.weight") {
          ggml_set_name(t, "v.position_embx.weight");
        }
      });
  try {
    VisionTower tower(path.string(), kTinyEmbd);
    FAIL() << "a tower without position embeddings was made";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("v.position_embd.weight"), std::string::npos) << e.what();
  }
}

/// Reported inputs: an mmproj whose metadata contradicts its tensors or clip's graph loaded, then
/// aborted the whole server at its first image (GGML_ASSERT, or SIGFPE for 0 heads). Each is
/// refused when the mmproj is read, naming the key.
TEST(VisionTower, RefusesMetadataClipsGraphWouldAbortOn) {
  clef::test::TempDir tmp;
  const float nan_mean[3] = {0.5f, std::nanf(""), 0.5f};
  const std::vector<std::pair<std::string, std::function<void(gguf_context*)>>> cases = {
      {"clip.vision.attention.head_count",
       [](gguf_context* g) { gguf_set_val_u32(g, "clip.vision.attention.head_count", 3); }},
      {"clip.vision.attention.head_count",
       [](gguf_context* g) { gguf_set_val_u32(g, "clip.vision.attention.head_count", 0); }},
      {"clip.vision.attention.layer_norm_epsilon",
       [](gguf_context* g) {
         gguf_set_val_f32(g, "clip.vision.attention.layer_norm_epsilon", -1.0f);
       }},
      {"clip.vision.patch_size",
       [](gguf_context* g) { gguf_set_val_u32(g, "clip.vision.patch_size", 7); }},
      {"clip.vision.embedding_length",
       [](gguf_context* g) { gguf_set_val_u32(g, "clip.vision.embedding_length", 48); }},
      {"clip.vision.image_mean",
       [&](gguf_context* g) {
         gguf_set_arr_data(g, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, nan_mean, 3);
       }},
  };
  int n = 0;
  for (const auto& [key, edit] : cases) {
    const auto path = mmproj_copy(tmp.path(), "bad" + std::to_string(n++) + ".gguf", edit);
    try {
      VisionTower tower(path.string(), kTinyEmbd);
      ADD_FAILURE() << key << ": a tower was made";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

TEST(VisionTower, OtherMeanAndStdAreWarnedAboutAndReplacedUnlessInsistedOn) {
  clef::test::TempDir tmp;
  const auto path = clip_normalized_copy(tmp.path());
  std::string warning;
  TowerParams p;
  p.on_warning = [&](const std::string& w) { warning += w; };
  VisionTower tower(path.string(), kTinyEmbd, p);
  EXPECT_NE(warning.find("0.481455"), std::string::npos) << warning;
  EXPECT_FALSE(tower.info().reference_normalization());
  EXPECT_EQ(tower.mean(), (std::array<float, 3>{0.5f, 0.5f, 0.5f}));
  media::RgbImage px(1, 1);
  px.rgb = {0, 128, 255};
  EXPECT_EQ(
      tower.normalized_pixels(px),
      (std::vector<float>{normalize_sample(0), normalize_sample(128), normalize_sample(255)}));

  warning.clear();
  p.use_file_normalization = true;
  VisionTower insisted(path.string(), kTinyEmbd, p);
  EXPECT_TRUE(warning.empty());
  EXPECT_FLOAT_EQ(insisted.mean()[0], 0.48145466f);
  EXPECT_EQ(insisted.normalized_pixels(px)[0],
            static_cast<float>((0.0 - double(0.48145466f)) / double(0.26862954f)));
}

}  // namespace
}  // namespace clef::vision

namespace clef::vision {
namespace {

media::RgbImage pattern(int width, int height, int seed) {
  media::RgbImage img(width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      std::uint8_t* p = img.pixel(x, y);
      p[0] = static_cast<std::uint8_t>(x * seed);
      p[1] = static_cast<std::uint8_t>(y + 7 * seed);
      p[2] = static_cast<std::uint8_t>((x ^ y) * (seed + 1));
    }
  }
  return img;
}

TEST(VisionTower, ATemporalPatchFeedsEachFrameToItsOwnSlot) {
  Captured captured;
  VisionTower tower(clef::test::tiny_model().mmproj.string(), kTinyEmbd, capturing(captured));
  const media::RgbImage a = pattern(96, 64, 1);
  const media::RgbImage b = pattern(96, 64, 3);
  // Two identical frames are a still image (which the tower repeats itself), bit for bit.
  const std::vector<float> still = tower.encode(a);
  EXPECT_TRUE(tower.encode(a, &a) == still);
  // Two different frames: the encoder's input holds both, first then second, each planar.
  const std::vector<float> pair = tower.encode(a, &b);
  const std::size_t plane = 96u * 64u * 3u;
  ASSERT_EQ(captured.planar.size(), 2 * plane);
  const std::vector<float> na = tower.normalized_pixels(a);
  const std::vector<float> nb = tower.normalized_pixels(b);
  for (std::size_t i = 0; i < 96u * 64u; ++i) {
    for (std::size_t c = 0; c < 3; ++c) {
      ASSERT_EQ(captured.planar[c * 96 * 64 + i], na[i * 3 + c]);
      ASSERT_EQ(captured.planar[plane + c * 96 * 64 + i], nb[i * 3 + c]);
    }
  }
  ASSERT_EQ(pair.size(), still.size());
  EXPECT_FALSE(pair == still);
  EXPECT_FALSE(pair == tower.encode(b));
  // The slots have their own kernels: swapping the frames changes the rows.
  EXPECT_FALSE(pair == tower.encode(b, &a));
  EXPECT_TRUE(pair == tower.encode(a, &b)) << "deterministic";
}

}  // namespace
}  // namespace clef::vision
