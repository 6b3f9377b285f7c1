#include "vision/tower.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>

// Internal headers of the pinned llama.cpp tree (tools/mtmd): clip_init, clip_image_f32 and
// clip_image_batch_encode. See tower.hpp for why clef does not go through mtmd_tokenize.
#include "clip-impl.h"
#include "clip.h"
#include "ggml-backend.h"
#include "util/error.hpp"
#include "vision/grid.hpp"

namespace clef::vision {
namespace {

/// clip's load-time advice about its own qwen3vl minimum of image tokens: clef does not use clip's
/// preprocessing (the reference's min/max pixels apply), so the advice does not apply.
bool is_min_tokens_advice(const char* text) {
  return std::strstr(text, "image tokens to function correctly") != nullptr ||
         std::strstr(text, "--image-min-tokens") != nullptr ||
         std::strstr(text, "llama.cpp/issues/16842") != nullptr;
}

void clip_log(ggml_log_level level, const char* text, void* user_data) {
  const bool verbose = *static_cast<const bool*>(user_data);
  if (!verbose && is_min_tokens_advice(text)) return;
  if (verbose || level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
    std::fputs(text, stderr);
  }
}

/// Routes clip's process-wide log sink once (as backbone::ensure_llama_backend does for llama).
void ensure_clip_log(bool verbose) {
  static std::once_flag once;
  static bool verbose_flag = false;
  std::call_once(once, [&] {
    verbose_flag = verbose;
    mtmd_log_set(clip_log, &verbose_flag);
  });
}

/// Finds clip's input image tensor among the sources of the graph nodes.
const ggml_tensor* raw_input_source(const ggml_tensor* t) {
  for (const ggml_tensor* src : t->src) {
    if (src != nullptr && std::string_view(src->name) == "inp_raw") return src;
  }
  return nullptr;
}

std::string channel_values(const std::array<float, 3>& v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "(%g, %g, %g)", v[0], v[1], v[2]);
  return buf;
}

}  // namespace

struct VisionTower::Impl {
  TowerParams params;
  MmprojInfo info;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> std_dev{0.5f, 0.5f, 0.5f};
  clip_ctx* ctx = nullptr;
  int n_embd = 0;
  bool input_seen = false;  ///< set by the eval callback while one encode() runs
  /// {width, height, frames} of the first image encoded since the last load: with
  /// quirks.stale_descriptor_reads, the only size its compute memory was reserved for (an image it
  /// does not cover loads afresh and becomes the first).
  std::optional<std::array<int, 3>> reserved_for;

  std::string path;  ///< the mmproj file, for load()

  ~Impl() {
    if (ctx != nullptr) clip_free(ctx);
  }

  /// (Re)creates the clip context from `path` with `params` (`no_alloc`: metadata and tensor
  /// list only, no weights read); throws model_error when it fails.
  void load(bool no_alloc = false) {
    if (ctx != nullptr) {
      clip_free(ctx);
      ctx = nullptr;
    }
    clip_context_params cp{};
    cp.use_gpu = params.use_gpu;
    cp.device = params.use_gpu ? params.device : nullptr;
    cp.flash_attn_type =
        params.flash_attention ? CLIP_FLASH_ATTN_TYPE_ENABLED : CLIP_FLASH_ATTN_TYPE_DISABLED;
    cp.image_min_tokens = 0;  // unused: clef never calls clip's own preprocessing
    cp.image_max_tokens = 0;
    cp.warmup = params.warmup;
    cp.cb_eval = params.on_input ? &Impl::eval_callback : nullptr;
    cp.cb_eval_user_data = this;
    cp.no_alloc = no_alloc;
    cp.progress_callback = nullptr;
    cp.progress_callback_user_data = nullptr;
    reserved_for.reset();
    clip_init_result res = clip_init(path.c_str(), cp);
    if (res.ctx_a != nullptr) clip_free(res.ctx_a);
    if (res.ctx_gen_a != nullptr) clip_free(res.ctx_gen_a);
    ctx = res.ctx_v;
    if (ctx == nullptr) {
      throw model_error("cannot load the vision tower of mmproj '" + path + "' (see log above)");
    }
  }

  /// ggml_backend_sched eval callback: asks for the first node that reads inp_raw, then hands
  /// inp_raw's contents to params.on_input.
  static bool eval_callback(ggml_tensor* t, bool ask, void* user_data) {
    auto* self = static_cast<Impl*>(user_data);
    const ggml_tensor* raw = raw_input_source(t);
    if (ask) return raw != nullptr && !self->input_seen;
    if (raw != nullptr && !self->input_seen) {
      self->input_seen = true;
      std::vector<float> data(static_cast<std::size_t>(ggml_nelements(raw)));
      ggml_backend_tensor_get(raw, data.data(), 0, ggml_nbytes(raw));
      self->params.on_input(data, static_cast<int>(raw->ne[0]), static_cast<int>(raw->ne[1]));
    }
    return true;
  }
};

VisionTower::VisionTower(const std::string& mmproj_path, int text_n_embd, TowerParams params)
    : impl_(std::make_unique<Impl>()) {
  ensure_clip_log(params.verbose);
  Impl& s = *impl_;
  s.params = std::move(params);
  s.path = mmproj_path;
  s.info = read_mmproj_info(mmproj_path);
  if (s.info.reference_normalization() || s.params.use_file_normalization) {
    s.mean = s.info.image_mean;
    s.std_dev = s.info.image_std;
  } else {
    const std::string warning =
        "warning: mmproj '" + mmproj_path + "' says image_mean " +
        channel_values(s.info.image_mean) + " and image_std " + channel_values(s.info.image_std) +
        "; the reference processor uses 0.5 / 0.5, which clef uses (contract section 7)\n";
    if (s.params.on_warning) {
      s.params.on_warning(warning);
    } else {
      std::fputs(warning.c_str(), stderr);
    }
  }

  // The weights load at the first image (encode): a server that never sees one never holds them
  // (0.9 GB for Clef 27B's f16 mmproj). What can be checked without them is checked now.
  s.load(/*no_alloc=*/true);
  s.n_embd = clip_n_mmproj_embd(s.ctx);
  clip_free(s.ctx);
  s.ctx = nullptr;
  // The check mtmd_init_from_file makes against the text model.
  if (s.n_embd != text_n_embd) {
    throw model_error("mmproj '" + mmproj_path + "' projects to " + std::to_string(s.n_embd) +
                      " values but the backbone's input width is " + std::to_string(text_n_embd) +
                      " (wrong mmproj for this backbone?)");
  }
}

VisionTower::~VisionTower() = default;

const MmprojInfo& VisionTower::info() const noexcept {
  return impl_->info;
}
int VisionTower::n_embd() const noexcept {
  return impl_->n_embd;
}
void VisionTower::release_compute_memory() {
  if (impl_->ctx != nullptr) impl_->load();  // never loaded: nothing to give back
}

bool VisionTower::loaded() const noexcept {
  return impl_->ctx != nullptr;
}

bool VisionTower::flash_attention() const noexcept {
  return impl_->params.flash_attention;
}

const std::array<float, 3>& VisionTower::mean() const noexcept {
  return impl_->mean;
}
const std::array<float, 3>& VisionTower::std_dev() const noexcept {
  return impl_->std_dev;
}

std::vector<float> VisionTower::normalized_pixels(const media::RgbImage& resized) const {
  std::array<std::array<float, 256>, 3> lut{};
  for (int c = 0; c < 3; ++c) {
    const double mean = impl_->mean[c];
    const double sd = impl_->std_dev[c];
    for (int x = 0; x < 256; ++x) {
      lut[c][x] = static_cast<float>((static_cast<double>(x) / 255.0 - mean) / sd);
    }
  }
  std::vector<float> out(resized.rgb.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = lut[i % 3][resized.rgb[i]];
  return out;
}

std::vector<float> VisionTower::encode(const media::RgbImage& resized) {
  return encode(resized, nullptr);
}

std::vector<float> VisionTower::encode(const media::RgbImage& first,
                                       const media::RgbImage* second) {
  Impl& s = *impl_;
  if (s.ctx == nullptr) s.load();  // the first image, or a fresh load that failed: say why
  const ImageGrid grid = image_grid(first.height, first.width, s.info.processor);
  clip_image_f32_batch batch;
  for (const media::RgbImage* frame : {&first, second}) {
    if (frame == nullptr) continue;
    if (frame->rgb.size() != static_cast<std::size_t>(frame->width) * frame->height * 3 ||
        frame->width != first.width || frame->height != first.height) {
      throw invalid_request("image buffer does not match its size");
    }
    batch.entries.emplace_back();
    clip_image_f32& img = batch.entries.back();
    img.set_size({frame->width, frame->height}, /*is_placeholder=*/false, /*is_audio=*/false);
    img.cpy_buf(normalized_pixels(*frame));
  }

  const std::size_t n_tokens = static_cast<std::size_t>(grid.n_image_tokens());
  const clip_image_f32& img = batch.entries.front();
  if (clip_n_output_tokens(s.ctx, &img) != static_cast<int>(n_tokens)) {
    throw Error(ErrorKind::internal, "vision_failed",
                "the vision tower would give " + std::to_string(clip_n_output_tokens(s.ctx, &img)) +
                    " rows for a " + std::to_string(grid.merged_h) + " x " +
                    std::to_string(grid.merged_w) + " grid");
  }
  if (s.params.quirks.stale_descriptor_reads) {
    const std::array<int, 3> size{first.width, first.height,
                                  static_cast<int>(batch.entries.size())};
    const auto& r = s.reserved_for;
    if (r && ((*r)[0] < size[0] || (*r)[1] < size[1] || (*r)[2] < size[2])) s.load();
    if (!r) s.reserved_for = size;
  }
  std::vector<float> out(n_tokens * static_cast<std::size_t>(s.n_embd));
  s.input_seen = false;
  const int threads = std::max(1, s.params.threads);
  if (!clip_image_batch_encode(s.ctx, threads, &batch, out)) {
    throw Error(ErrorKind::internal, "vision_failed", "the vision tower failed to encode an image");
  }
  if (out.size() != n_tokens * static_cast<std::size_t>(s.n_embd)) {
    throw Error(ErrorKind::internal, "vision_failed", "the vision tower returned a wrong size");
  }
  return out;
}

}  // namespace clef::vision
