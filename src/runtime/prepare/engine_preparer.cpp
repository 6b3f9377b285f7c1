#include "runtime/prepare/engine_preparer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "cache/state_cache.hpp"
#include "request/parse.hpp"
#include "runtime/prepare/image_inputs.hpp"
#include "util/byte_size.hpp"
#include "util/elapsed.hpp"
#include "util/error.hpp"
#include "vision/tower_memory.hpp"

namespace clef::runtime {

namespace {

using Clock = std::chrono::steady_clock;

using util::ms_since;

/// A question whose id is "" and that has no instructions renders to no tokens (the
/// reference encodes it so, then averages an empty span: NaN logits). Refused with a 400
/// before any model work instead of answering garbage.
void refuse_empty_question_spans(const record::Record& rec) {
  for (const record::QuestionRecord& q : rec.questions) {
    if (q.question_span.size() == 0) {
      throw invalid_request("question \"" + q.question_id +
                                "\" has an empty id and no instructions, so its question span "
                                "is empty and cannot be decided; give it instructions",
                            "questions." + q.question_id + ".instructions");
    }
  }
}

}  // namespace

EnginePreparer::EnginePreparer(const EngineConfig& config, ServedModel served,
                         std::shared_ptr<const llama_vocab> vocabulary,
                         std::optional<TowerFacts> tower, bool image_digests)
    : config_(config),
      served_(std::move(served)),
      vocabulary_(std::move(vocabulary)),
      tokenizer_(vocabulary_.get(), record::Normalization::nfc),
      tower_(std::move(tower)),
      image_digests_(image_digests) {
  image_policy_.allow_urls = config.allow_media_urls;
  image_policy_.url.allow_loopback_for_tests = config.allow_loopback_media_urls_for_tests;
  image_policy_.url.timeout = std::chrono::milliseconds(config.image_fetch_timeout_ms);
  video_policy_.allow_urls = config.allow_media_urls;
  video_policy_.url = image_policy_.url;
  video_policy_.limits.max_encoded_bytes = static_cast<std::size_t>(config.max_video_bytes);
  video_policy_.limits.max_duration_s = config.max_video_seconds;
  video_policy_.limits.max_sampled_frames = config.max_video_frames;
  video_policy_.limits.max_frame_pixels = static_cast<std::uint64_t>(config.max_video_frame_pixels);
  video_policy_.limits.decode_timeout = std::chrono::milliseconds(config.video_decode_timeout_ms);
}

PreparedRequest EnginePreparer::prepare(json::Value body, const Cancellation& cancellation,
                                        const util::MemoryCharge& charge) const {
  const auto t0 = Clock::now();
  const std::function<bool()> cancelled = cancellation.as_check();
  request::RequestLimits limits;
  limits.max_questions = static_cast<std::size_t>(config_.max_questions);
  limits.max_options = static_cast<std::size_t>(config_.max_options);
  limits.max_images = static_cast<std::size_t>(config_.max_images);
  limits.max_videos = static_cast<std::size_t>(config_.max_videos);
  limits.max_listed_frames = static_cast<std::size_t>(config_.max_video_frames);
  limits.unknown_fields = config_.unknown_fields;
  PreparedRequest out;
  out.cancellation = cancellation;
  out.request = request::parse_request(std::move(body), limits, served_.name);

  // Images and videos: loaded and gridded from their headers first, so the token budget is
  // checked before any pixel is decoded.
  const bool media = !out.request.images.empty() || !out.request.videos.empty();
  if (media && !tower_) {
    // 422 with a stable code: well formed, but this server has no vision tower (another may).
    const bool images = !out.request.images.empty();
    throw Error(ErrorKind::unprocessable, images ? "images_not_supported" : "videos_not_supported",
                std::string("this model has no mmproj (vision projector), so requests with ") +
                    (images ? "images" : "videos") +
                    " cannot be decided; load one with --mmproj or put mmproj*.gguf in the "
                    "model directory",
                images ? "images" : "videos");
  }
  vision::ProcessorConfig image_processor;
  video::VideoProcessorConfig video_processor;
  std::vector<RequestVideo> videos;
  if (media) {
    image_processor = image_config(tower_->info.processor, out.request.media_kwargs);
    video_processor = video_config(tower_->info.processor, out.request.media_kwargs);
    const auto tv = Clock::now();
    out.images = load_images(out.request.images, image_policy_, image_processor);
    videos =
        load_videos(out.request.videos, video_policy_, image_policy_, video_processor, cancelled);
    out.image_prepare_ms += ms_since(tv);
  }
  const std::size_t n_still = out.images.size();

  record::EncodeOptions options;
  // A request's own max_length, bounded by the served context; its max_state_tokens as given.
  options.max_length = static_cast<std::size_t>(
      std::min(context_size(), out.request.max_length.value_or(context_size())));
  options.max_state_tokens = static_cast<std::size_t>(out.request.max_state_tokens.value_or(0));
  // Charged with the rendered state, then before each piece of it is tokenized: between pieces
  // is also where a client that left stops its preparation (a long state takes seconds; a state
  // of one piece is prepared, as a request without videos always was, and the decision checks).
  options.charge = [&charge, &cancelled, charges = 0](std::ptrdiff_t bytes) mutable {
    if (bytes > 0 && ++charges > 2 && cancelled && cancelled()) {
      throw DecisionCancelled("the client closed the connection while its state was tokenized");
    }
    if (charge) charge(bytes);
  };
  for (const RequestImage& d : out.images) {
    options.image_tokens.push_back(static_cast<std::size_t>(d.grid.n_image_tokens()));
  }
  // Each video's temporal patches as blocks without pixels yet: their budget is known now.
  std::size_t video_text_tokens = 0;
  for (const RequestVideo& v : videos) {
    options.videos.push_back(v.groups);
    video_text_tokens += 2;  // the placeholder's own <|vision_start|> / <|vision_end|>
    for (const record::VideoGroup& g : v.groups) {
      video_text_tokens += tokenizer_.tokenize(g.timestamp).size();
      out.images.push_back(patch_block(v));
    }
  }
  check_image_budget(out.images, video_text_tokens);
  // The request's own max_length is what a schema that does not fit it overflowed.
  const bool own_max_length = out.request.max_length && *out.request.max_length < context_size();
  try {
    out.record = encode_with_images(out.request, options, out.images);
  } catch (const Error& e) {
    if (e.code() != "context_length_exceeded") throw;
    // The contract's words, then what they count: the state comes before the schema in the
    // record, and it is the one part that would have been cut to fit.
    const std::string what = std::string(e.what()) +
                             " (the tokens of everything but the state: prefix, images, schema "
                             "and suffix; the state would get what is left)";
    if (!own_max_length) throw Error(e.kind(), e.code(), what, e.param());
    throw Error(e.kind(), e.code(), what + " (the request's max_length)", "max_length");
  }
  if (out.record.state_truncated && config_.truncation == Truncation::refuse && !own_max_length) {
    refuse_truncation(out.request, out.record);  // unless its max_state_tokens alone cut it
  }
  refuse_empty_question_spans(out.record);
  // What the ids came from is not needed any more (a large state would be held while queued).
  out.request.state = json::Value();
  std::string().swap(out.record.rendered_state);
  out.tokenize_ms = ms_since(t0) - out.image_prepare_ms;

  // Pixels: decoded, oriented and resized to the tower's input now (video frames decoded,
  // resized and paired in temporal patches), so the runtime thread only runs the tower.
  if (!out.images.empty()) {
    const auto tv = Clock::now();
    std::size_t next_block = n_still;
    for (RequestVideo& v : videos) {
      for (RequestImage& block :
           video_blocks(v, video_policy_, image_policy_, video_processor, cancelled)) {
        out.images[next_block++] = std::move(block);
      }
    }
    std::vector<vision::ImageGrid> grids;
    for (std::size_t i = 0; i < out.images.size(); ++i) {
      RequestImage& image = out.images[i];
      if (i < n_still) prepare_pixels(image, image_policy_, image_processor);
      if (image_digests_) {
        image.digest = cache::image_digest(image.image.width, image.image.height, image.image.rgb);
        if (image.second_frame.width > 0) {
          image.digest += cache::image_digest(image.second_frame.width, image.second_frame.height,
                                              image.second_frame.rgb);
        }
      }
      grids.push_back(image.grid);
    }
    out.positions = record_positions(out.record, grids);
    out.image_prepare_ms += ms_since(tv);
  }
  out.prepared_at = Clock::now();
  return out;
}

/// The image blocks alone (<|vision_start|> + N + <|vision_end|> each, then "\n") must fit the
/// context: 413 naming every image's tokens and the context size, before any image is encoded.
void EnginePreparer::check_image_budget(const std::vector<RequestImage>& images,
                                        std::size_t video_text_tokens) const {
  if (images.empty()) return;
  std::size_t total = tokenizer_.tokenize("\n").size() + video_text_tokens;
  std::string detail;
  bool videos = false;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const vision::ImageGrid& g = images[i].grid;
    total += static_cast<std::size_t>(g.n_image_tokens()) + 2;
    if (images[i].video >= 0) {
      videos = true;
      // One entry per video: its temporal patches.
      std::size_t n = 1;
      while (i + n < images.size() && images[i + n].video == images[i].video) ++n;
      detail += (detail.empty() ? "" : ", ") + images[i].param + ": " + std::to_string(n) +
                " temporal patches of " + std::to_string(images[i].resized_height) + "x" +
                std::to_string(images[i].resized_width) +
                " px = " + std::to_string(n * static_cast<std::size_t>(g.n_image_tokens())) +
                " tokens";
      total += (n - 1) * (static_cast<std::size_t>(g.n_image_tokens()) + 2);
      i += n - 1;
      continue;
    }
    detail += (detail.empty() ? "" : ", ") + std::string("image ") + std::to_string(i) + ": " +
              std::to_string(images[i].resized_height) + "x" +
              std::to_string(images[i].resized_width) + " px = " + std::to_string(g.merged_h) +
              " x " + std::to_string(g.merged_w) + " = " + std::to_string(g.n_image_tokens()) +
              " tokens";
  }
  check_image_costs(images, detail);  // first: it names the image at fault
  if (total > static_cast<std::size_t>(context_size())) {
    throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                std::string(videos ? "the images and videos need " : "the images need ") +
                    std::to_string(total) + " tokens (" + detail + ") but the context size is " +
                    std::to_string(context_size()),
                videos ? "videos" : "images");
  }
}

/// The server's own bounds on one request's image work (EngineConfig::max_image_tokens,
/// max_request_image_tokens, max_vision_memory): 413 naming the image, before any pixel is
/// decoded. `detail` lists every image's size and tokens.
void EnginePreparer::check_image_costs(const std::vector<RequestImage>& images,
                                       const std::string& detail) const {
  std::int64_t request_tokens = 0;
  for (const RequestImage& image : images) {
    const vision::ImageGrid& g = image.grid;
    const std::string size =
        std::to_string(image.resized_height) + "x" + std::to_string(image.resized_width) +
        " px after resizing = " + std::to_string(g.n_image_tokens()) + " image tokens";
    request_tokens += g.n_image_tokens();
    if (config_.max_image_tokens > 0 && g.n_image_tokens() > config_.max_image_tokens) {
      throw Error(ErrorKind::payload_too_large, "image_too_large",
                  image.param + " is " + size + "; this server takes at most " +
                      std::to_string(config_.max_image_tokens) +
                      " per image (--max-image-tokens): send a smaller image",
                  image.param);
    }
    const std::uint64_t bytes =
        vision::tower_compute_bytes(g, tower_->info, tower_->flash_attention);
    if (bytes > served_.limits.max_vision_memory) {
      throw Error(ErrorKind::payload_too_large, "image_too_large",
                  image.param + " is " + size + ": the vision tower would need about " +
                      util::human_bytes(bytes) + " of memory for it, over the " +
                      util::human_bytes(served_.limits.max_vision_memory) +
                      " this server allows (--max-vision-memory" +
                      (config_.max_vision_memory == 0
                           ? "; by default what the memory plan leaves" +
                                 (tower_->device.empty() ? std::string() : " on " + tower_->device)
                           : std::string()) +
                      "); send a smaller image",
                  image.param);
    }
  }
  if (config_.max_request_image_tokens > 0 && request_tokens > config_.max_request_image_tokens) {
    const bool videos = std::any_of(images.begin(), images.end(),
                                    [](const RequestImage& b) { return b.video >= 0; });
    throw Error(ErrorKind::payload_too_large, "image_too_large",
                std::string(videos ? "the images and videos have " : "the images have ") +
                    std::to_string(request_tokens) + " vision tokens together (" + detail +
                    "); this server takes at most " +
                    std::to_string(config_.max_request_image_tokens) +
                    " per request (--max-request-image-tokens)",
                videos ? "videos" : "images");
  }
}

/// encode_record; with images, a record whose fixed part does not fit the context is a 413 that
/// names the image tokens (the images, not the schema, are what the client can shrink).
record::Record EnginePreparer::encode_with_images(const request::Request& req,
                                                  const record::EncodeOptions& options,
                                                  const std::vector<RequestImage>& images) const {
  try {
    return record::encode_record(req, tokenizer_, options);
  } catch (const Error& e) {
    if (images.empty() || e.code() != "context_length_exceeded") throw;
    std::size_t image_tokens = 0;
    for (std::size_t n : options.image_tokens) image_tokens += n + 2;
    if (options.videos.empty()) {
      throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                  std::string(e.what()) + " (" + std::to_string(image_tokens) +
                      " of them for the " + std::to_string(images.size()) +
                      " image(s); send smaller images or fewer)",
                  "images");
    }
    std::size_t video_tokens = 0;
    for (const auto& groups : options.videos) {
      for (const record::VideoGroup& g : groups) video_tokens += g.n_tokens + 2;
    }
    throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                std::string(e.what()) + " (" + std::to_string(image_tokens + video_tokens) +
                    " and their timestamps for the images and videos; send shorter videos, "
                    "a lower fps or fewer frames)",
                "videos");
  }
}

/// Under --truncation refuse: 413 for a record whose state, cut to the request's
/// max_state_tokens if it has one, does not fit the served context; nothing when it would (the
/// client's own cut is what was made).
void EnginePreparer::refuse_truncation(const request::Request& req,
                                       const record::Record& rec) const {
  std::size_t full_state = rec.state_span.size() + rec.state_tokens_cut;
  if (req.max_state_tokens) {
    full_state = std::min(full_state, static_cast<std::size_t>(*req.max_state_tokens));
  }
  const std::size_t full = rec.input_tokens() - rec.state_span.size() + full_state;
  if (full <= static_cast<std::size_t>(context_size())) return;
  throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
              "the record needs " + std::to_string(full) + " tokens but the context size is " +
                  std::to_string(context_size()) +
                  " (--truncation refuse: the state is not cut to fit; a larger --context-size "
                  "takes it)",
              "state");
}

}  // namespace clef::runtime
