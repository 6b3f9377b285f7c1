#include "runtime/engine.hpp"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "artifact/backbone_loader.hpp"
#include "artifact/open_model.hpp"
#include "backbone/backbone.hpp"
#include "cache/prefix_points.hpp"
#include "cache/state_cache.hpp"
#include "decision/calibration.hpp"
#include "decision/confidence.hpp"
#include "decision/response.hpp"
#include "device/device.hpp"
#include "head/head_weights.hpp"
#include "head/joint_schema_head.hpp"
#include "lexical/lexical_table.hpp"
#include "record/encode.hpp"
#include "record/llama_tokenizer.hpp"
#include "record/llama_vocab.hpp"
#include "request/parse.hpp"
#include "runtime/decision_loop.hpp"
#include "runtime/head_inputs.hpp"
#include "runtime/image_inputs.hpp"
#include "runtime/sequence_slots.hpp"
#include "runtime/video_inputs.hpp"
#include "util/error.hpp"
#include "util/physical_memory.hpp"
#include "vision/tower.hpp"
#include "vision/tower_memory.hpp"

namespace clef::runtime {
namespace {

using Clock = std::chrono::steady_clock;

using util::physical_memory_bytes;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// The decision pipeline over loaded model files (contract sections 1-6).
class Engine final : public Decider {
 public:
  explicit Engine(const EngineConfig& config) : Engine(config, open(config)) {}

  using Decider::decide;

  /// Thread-safe: reads only the configuration, the tokenizer (llama_tokenize on a const
  /// vocabulary) and the mmproj's processor settings.
  PreparedRequest prepare(const json::Value& body) const override {
    return prepare(body, Cancellation{});
  }

  /// As prepare(body); reading videos asks `cancellation` (a gone client stops it), and the
  /// prepared request keeps it.
  PreparedRequest prepare(const json::Value& body,
                          const Cancellation& cancellation) const override {
    const auto t0 = Clock::now();
    const std::function<bool()> cancelled = cancellation.as_check();
    request::RequestLimits limits;
    limits.max_questions = static_cast<std::size_t>(config_.max_questions);
    limits.max_options = static_cast<std::size_t>(config_.max_options);
    limits.max_images = static_cast<std::size_t>(config_.max_images);
    limits.max_videos = static_cast<std::size_t>(config_.max_videos);
    limits.max_listed_frames = static_cast<std::size_t>(config_.max_video_frames);
    PreparedRequest out;
    out.cancellation = cancellation;
    out.request = request::parse_request(body, limits, config_.model_name);

    // Images and videos: loaded and gridded from their headers first, so the token budget is
    // checked before any pixel is decoded.
    const bool media = !out.request.images.empty() || !out.request.videos.empty();
    if (media && !tower_) {
      // 422 with a stable code: well formed, but this server has no vision tower (another may).
      const bool images = !out.request.images.empty();
      throw Error(ErrorKind::unprocessable,
                  images ? "images_not_supported" : "videos_not_supported",
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
      image_processor = image_config(tower_->processor(), out.request.media_kwargs);
      video_processor = video_config(tower_->processor(), out.request.media_kwargs);
      const auto tv = Clock::now();
      out.images = load_images(out.request.images, image_policy_, image_processor);
      videos =
          load_videos(out.request.videos, video_policy_, image_policy_, video_processor, cancelled);
      out.image_prepare_ms += ms_since(tv);
    }
    const std::size_t n_still = out.images.size();

    record::EncodeOptions options;
    // A request's own max_length, bounded by the served context; its max_state_tokens as given.
    options.max_length = static_cast<std::size_t>(std::min(
        backbone_.context_size(), out.request.max_length.value_or(backbone_.context_size())));
    options.max_state_tokens = static_cast<std::size_t>(out.request.max_state_tokens.value_or(0));
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
    const bool own_max_length =
        out.request.max_length && *out.request.max_length < backbone_.context_size();
    try {
      out.record = encode_with_images(out.request, options, out.images);
    } catch (const Error& e) {
      if (e.code() != "context_length_exceeded" || !own_max_length) throw;
      throw Error(e.kind(), e.code(), std::string(e.what()) + " (the request's max_length)",
                  "max_length");
    }
    if (out.record.state_truncated && config_.truncation == Truncation::refuse && !own_max_length) {
      refuse_truncation(out.request, out.record);  // unless its max_state_tokens alone cut it
    }
    refuse_empty_question_spans(out.record);
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
        if (cache_.enabled()) {
          image.digest =
              cache::image_digest(image.image.width, image.image.height, image.image.rgb);
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

  /// The one loop with this decision alone (decide_alone(): begin(), step() in whole layout
  /// batches until prefilled, finish()). Checks `prepared.cancellation` before the vision tower
  /// and between its images, and through the backbone between and during prefill batches.
  /// Resumes from the longest cached prefix of the record and caches the record's snapshot points
  /// it prefilled (start_decision()).
  Decision decide(const PreparedRequest& prepared) override {
    return decide_alone(*this, prepared);
  }

  int parallel() const override { return backbone_.params().parallel; }

  /// Takes the lowest free sequence (so that records decoded together tend to sit on
  /// consecutive ones, which llama.cpp puts in one ubatch) and does what decide() does before
  /// the prefill.
  std::unique_ptr<DecisionInProgress> begin(const PreparedRequest& prepared) override {
    return start_decision(prepared, sequences_.take());
  }

  /// A prefill under way gives its memory to the backbone to keep (Backbone::suspend); one still
  /// at its images has nothing in the context. Either way its sequence is free until resume().
  void suspend(DecisionInProgress& decision) override {
    auto& p = static_cast<Pending&>(decision);
    if (p.suspended || p.prefilled()) {
      throw Error(ErrorKind::internal, "internal",
                  "suspend() of a decision that is suspended or prefilled");
    }
    if (p.prefill) backbone_.suspend(*p.prefill);
    sequences_.give_back(p.seq);
    p.suspended = true;
    p.suspended_at = Clock::now();
  }

  void resume(DecisionInProgress& decision) override {
    auto& p = static_cast<Pending&>(decision);
    if (!p.suspended)
      throw Error(ErrorKind::internal, "internal", "resume() of a running decision");
    const int seq = sequences_.take();
    if (p.prefill) {
      try {
        backbone_.resume(*p.prefill, seq);
      } catch (...) {
        sequences_.give_back(seq);
        throw;
      }
    }
    p.seq = seq;
    p.suspended = false;
    p.paused_ms += ms_since(p.suspended_at);
    ++p.out.suspensions;
  }

  /// At most one vision-tower image per step (an encode cannot be interrupted), so a request
  /// with images holds the others up for one image at a time, as with --parallel 1; a decision
  /// whose images are all encoded starts its prefill and steps with the others.
  void step(std::span<DecisionInProgress* const> decisions, int most_tokens) override {
    bool encoded = false;
    for (DecisionInProgress* d : decisions) {
      auto& p = static_cast<Pending&>(*d);
      if (p.suspended) throw Error(ErrorKind::internal, "internal", "step() of a suspended one");
      if (p.prefill || p.error) continue;
      try {
        if (!encoded && p.next_image < p.prepared.images.size()) {
          encode_next_image(p);
          encoded = true;
        }
        if (p.next_image == p.prepared.images.size()) start_prefill(p);
      } catch (...) {
        p.error = std::current_exception();  // this decision only
      }
    }
    std::vector<backbone::Prefill*> prefills;
    for (DecisionInProgress* d : decisions) {
      auto& p = static_cast<Pending&>(*d);
      if (p.prefill && !p.prefill->done()) prefills.push_back(&*p.prefill);
    }
    backbone_.step(prefills, most_tokens);
  }

  Decision finish(DecisionInProgress& decision) override {
    auto& p = static_cast<Pending&>(decision);
    if (p.error) std::rethrow_exception(p.error);
    if (!p.prefill || !p.prefill->done()) {
      throw Error(ErrorKind::internal, "internal", "finish() before the prefill is done");
    }
    if (p.prefill->cancelled()) {
      keep_abandoned(p);
      throw_cancelled_at(p.prefill->cancelled_at());
    }
    return complete(p, p.prefill->take());
  }

 private:
  /// A decision between start_decision() and complete(): what its prefill refers to (spans,
  /// tower rows, snapshot points, the cache hit) lives here, on the heap, so it stays put. Holds
  /// its backbone sequence until destroyed.
  struct Pending final : DecisionInProgress {
    /// Holds sequence `sequence` of `slots` while it lasts (given back when suspended).
    Pending(const PreparedRequest& p, SequenceSlots& slots, int sequence)
        : prepared(p), sequences(slots), seq(sequence) {}
    ~Pending() override {
      if (!suspended) sequences.give_back(seq);
    }
    Pending(const Pending&) = delete;
    Pending& operator=(const Pending&) = delete;
    bool prefilled() const override { return error || (prefill && prefill->done()); }
    int tokens_left() const override {
      if (prefilled()) return 0;
      const int total = static_cast<int>(prepared.record.ids.size());
      return prefill ? total - prefill->prefilled() : total - hit.tokens;
    }

    const PreparedRequest& prepared;
    SequenceSlots& sequences;
    int seq;                 ///< the sequence it holds (its prefill's), unless suspended
    bool suspended = false;  ///< suspend()ed: holds no sequence
    Clock::time_point suspended_at;
    Decision out;
    Clock::time_point t0;
    Clock::time_point t1;  ///< the prefill started
    std::function<bool()> cancelled;
    std::vector<int> points;  ///< snapshot points cutting the layout
    int state_end = 0;        ///< the point that keeps the recurrent checkpoints, or 0
    std::vector<backbone::EmbeddingSpan> spans;
    std::vector<std::size_t> image_starts;
    std::vector<std::string> digests;
    std::vector<std::vector<float>> rows;  ///< the tower's rows per image
    cache::CacheHit hit;
    std::vector<int> snapshot_at;
    std::vector<int> checkpoint_at;
    double paused_ms = 0;  ///< time suspended
    double paused_before_prefill = 0;
    backbone::PrefillOptions reuse;  ///< what the prefill starts with
    std::size_t next_image = 0;      ///< the first image whose tower rows are not made yet
    std::optional<backbone::Prefill> prefill;  ///< started once every image is encoded
    std::exception_ptr error;  ///< what failed it before its prefill (begin()'s images), if so
  };

  [[noreturn]] static void throw_cancelled_at(int token) {
    throw DecisionCancelled(
        "the client closed the connection; the decision was cancelled at token " +
        std::to_string(token));
  }

  /// Everything before the prefill's batches on sequence `seq` (taken from sequences_; the
  /// decision holds it): the cache lookup and the snapshot points. Its images go through the
  /// vision tower in step() (one per step, checking `prepared.cancellation` before each), then
  /// Backbone::start. Resumes from the
  /// longest cached prefix of the record (the tower then skips the images inside it) and asks for
  /// the record's snapshot points it will prefill. The points cut the prefill layout only where
  /// they can be used (a state cache, or flash attention, whose kernels depend on the layout); they
  /// are placed so that, with flash attention off, the hidden states are the same with or without
  /// them, so the answer bytes never depend on the cache.
  std::unique_ptr<Pending> start_decision(const PreparedRequest& prepared, int seq) {
    std::unique_ptr<Pending> p;
    try {
      p = std::make_unique<Pending>(prepared, sequences_, seq);
    } catch (...) {
      sequences_.give_back(seq);
      throw;
    }
    p->t0 = Clock::now();
    const record::Record& rec = prepared.record;
    p->cancelled = prepared.cancellation.as_check();
    Decision& out = p->out;
    out.timings.tokenize_ms = prepared.tokenize_ms;
    out.timings.vision_ms = prepared.image_prepare_ms;

    // The prefill layout, cut at the record's snapshot points when a cache may keep them (with
    // flash attention always, so that the cache setting changes no answer). Without a cache the
    // cuts would only make more, smaller batches: each reads all the weights once more.
    p->points = cache_.enabled() || backbone_.params().flash_attention ? cache::snapshot_points(rec)
                                                                       : std::vector<int>{};
    // Which snapshot, if any, is the state's end (the one that keeps the recurrent checkpoints).
    p->state_end = cache_.enabled() ? cache::state_end_point(rec) : 0;
    for (std::size_t i = 0; i < prepared.images.size(); ++i) {
      p->spans.push_back({static_cast<int>(rec.images[i].first_token),
                          static_cast<int>(rec.images[i].n_tokens),
                          {}});
      p->image_starts.push_back(rec.images[i].first_token);
      p->digests.push_back(prepared.images[i].digest);
    }
    std::vector<int> boundaries;
    for (const backbone::PrefillBatch& b :
         backbone::prefill_batches(static_cast<int>(rec.ids.size()), p->spans,
                                   backbone_.params().chunk_tokens, p->points)) {
      boundaries.push_back(b.start);
    }
    p->hit = cache_.find(rec.ids, boundaries, p->image_starts, p->digests,
                         cache::fixed_prefix_tokens(rec));
    const int resumed = p->hit.tokens;

    // The vision tower's rows for every image block after the resumed prefix (deferred: one per
    // step(), then the prefill starts there). Images are in record order: those inside the
    // resumed prefix come first and need no rows.
    p->rows.resize(prepared.images.size());
    p->next_image =
        static_cast<std::size_t>(std::lower_bound(p->image_starts.begin(), p->image_starts.end(),
                                                  static_cast<std::size_t>(resumed)) -
                                 p->image_starts.begin());
    if (!prepared.images.empty() && !tower_) {
      throw Error(ErrorKind::internal, "internal", "images prepared without a tower");
    }

    // Snapshots at the points after the resumed part that are worth keeping and not kept yet;
    // with the last one, recurrent-only checkpoints at the layout boundaries inside the state.
    if (cache_.enabled()) {
      for (int point : p->points) {
        if (point <= resumed || point < kMinCachedTokens) continue;
        const auto ids =
            std::span<const std::int32_t>(rec.ids).first(static_cast<std::size_t>(point));
        if (!cache_.contains(ids, digests_before(*p, static_cast<std::size_t>(point)))) {
          p->snapshot_at.push_back(point);
        }
      }
      if (p->state_end > 0 && !p->snapshot_at.empty() && p->snapshot_at.back() == p->state_end) {
        std::vector<int> candidates;
        for (int b : boundaries) {
          if (b > resumed && b > static_cast<int>(rec.state_span.begin) && b < p->state_end &&
              b >= kMinCachedTokens) {
            candidates.push_back(b);
          }
        }
        // At most kMaxCheckpoints (each holds every Gated DeltaNet state: ~53 MB on the 9B),
        // evenly spaced and always the last one (an appended state resumes from it). Any subset
        // of the layout's boundaries is safe: a resume point only has to be one of them.
        const std::size_t stride = (candidates.size() + kMaxCheckpoints - 1) / kMaxCheckpoints;
        for (std::size_t i = candidates.size(); i > 0 && stride > 0; i -= std::min(i, stride)) {
          p->checkpoint_at.insert(p->checkpoint_at.begin(), candidates[i - 1]);
        }
      }
    }
    backbone::PrefillOptions& reuse = p->reuse;
    reuse.cuts = p->points;
    reuse.snapshot_at = p->snapshot_at;
    reuse.checkpoint_at = p->checkpoint_at;
    if (cache_.enabled()) {
      // Each decision in progress may hold one progress snapshot: together within the cache's
      // budget (a long record on a small cache, or many at once, take none).
      reuse.progress_every = std::chrono::milliseconds(config_.resume_snapshot_ms);
      reuse.progress_max_bytes =
          cache_.budget() / static_cast<std::size_t>(std::max(1, backbone_.params().parallel));
    }
    if (p->hit) {
      reuse.resume = &p->hit.entry->memory;
      reuse.resume_checkpoint = p->hit.checkpoint;
      reuse.resume_rows = std::span<const float>(p->hit.entry->rows)
                              .first(static_cast<std::size_t>(resumed) *
                                     static_cast<std::size_t>(backbone_.n_embd()));
    }
    return p;
  }

  /// Encodes `p`'s next image (p.next_image < its images) with the vision tower, checking its
  /// cancellation first; one encode cannot be interrupted (clip has no abort hook). Throws
  /// DecisionCancelled, or what the tower throws.
  void encode_next_image(Pending& p) {
    const std::vector<RequestImage>& images = p.prepared.images;
    const std::size_t i = p.next_image;
    if (p.cancelled()) {
      throw DecisionCancelled("the decision was cancelled before the vision tower's image " +
                              std::to_string(i));
    }
    const auto tv = Clock::now();
    note_vision_memory(images[i]);  // first: a cancelled encode keeps it at peak
    const RequestImage& block = images[i];
    p.rows[i] =
        tower_->encode(block.image, block.second_frame.width > 0 ? &block.second_frame : nullptr);
    p.spans[i].rows = p.rows[i];
    p.out.timings.vision_ms += ms_since(tv);
    ++p.next_image;
  }

  /// Backbone::start for `p` once its images are encoded.
  void start_prefill(Pending& p) {
    p.paused_before_prefill = p.paused_ms;
    p.t1 = Clock::now();
    p.prefill.emplace(backbone_.start(p.prepared.record.ids, p.prepared.positions, p.spans, p.reuse,
                                      p.cancelled, p.seq));
  }

  /// The digests of the images whose blocks start among the first `n` tokens (a prefix's key).
  static std::span<const std::string> digests_before(const Pending& p, std::size_t n) {
    const auto inside =
        std::lower_bound(p.image_starts.begin(), p.image_starts.end(), n) - p.image_starts.begin();
    return std::span<const std::string>(p.digests).first(static_cast<std::size_t>(inside));
  }

  /// The state cache's entry for the first `memory.tokens` tokens of `p`'s record: their ids, the
  /// digests of the images among them, their rows of `hidden` and the backbone memory there.
  static cache::CachedPrefix prefix_entry(const Pending& p, const backbone::HiddenStates& hidden,
                                          backbone::MemorySnapshot memory) {
    const record::Record& rec = p.prepared.record;
    const auto n = static_cast<std::size_t>(memory.tokens);
    cache::CachedPrefix entry;
    entry.ids.assign(rec.ids.begin(), rec.ids.begin() + static_cast<std::ptrdiff_t>(n));
    const auto before = digests_before(p, n);
    entry.image_digests.assign(before.begin(), before.end());
    entry.rows.assign(hidden.data.begin(),
                      hidden.data.begin() + static_cast<std::ptrdiff_t>(n * hidden.n_embd));
    entry.memory = std::move(memory);
    return entry;
  }

  /// A cancelled prefill (its client went away, e.g. an SDK attempt that timed out and will be
  /// retried): the snapshots it took and its latest progress snapshot go into the state cache
  /// with the rows before them, so the same record resumes there (the points are batch
  /// boundaries of its layout, so its answer is the same bytes as a cold one).
  void keep_abandoned(Pending& p) {
    if (!cache_.enabled() || !p.prefill) return;
    backbone::HiddenStates partial = p.prefill->take();
    const int prefilled = p.prefill->prefilled();
    auto keep = [&](backbone::MemorySnapshot& m) {
      if (m.tokens <= p.hit.tokens || m.tokens < kMinCachedTokens || m.tokens > prefilled) return;
      cache_.insert(prefix_entry(p, partial, std::move(m)));
    };
    for (backbone::MemorySnapshot& m : partial.snapshots) keep(m);
    if (partial.progress.tokens > 0) keep(partial.progress);
  }

  /// After the prefill: the joint schema head, the response, and the record's snapshots kept in
  /// the state cache (only once the whole decision has succeeded).
  Decision complete(Pending& p, backbone::HiddenStates hidden) {
    const PreparedRequest& prepared = p.prepared;
    const record::Record& rec = prepared.record;
    Decision out = std::move(p.out);
    out.timings.backbone_ms = ms_since(p.t1) - (p.paused_ms - p.paused_before_prefill);
    out.timings.paused_ms = p.paused_ms;
    out.cached_tokens = p.hit.tokens;

    const auto t2 = Clock::now();
    const HeadInputs inputs = make_head_inputs(rec, lexical_);
    const auto logits = head_.forward(hidden.data, hidden.rows, inputs.questions, inputs.lexical);
    out.timings.head_ms = ms_since(t2);

    out.input_tokens = prepared.input_tokens();
    out.response =
        decision::build_response(prepared.request, logits, rec.input_tokens(), answer_options_);
    out.logits = logits;
    out.body = decision::response_body(out.response);

    const int resumed = p.hit.tokens;
    for (backbone::MemorySnapshot& m : hidden.snapshots) {
      const bool state_end = m.tokens == p.state_end;
      cache::CachedPrefix entry = prefix_entry(p, hidden, std::move(m));
      if (state_end) {
        // The resumed entry's checkpoints up to the resume point hold for this record too.
        if (p.hit) {
          for (const auto& c : p.hit.entry->checkpoints) {
            if (c->tokens <= resumed && c->tokens > static_cast<int>(rec.state_span.begin)) {
              entry.checkpoints.push_back(c);
            }
          }
        }
        for (backbone::MemorySnapshot& c : hidden.checkpoints) {
          entry.checkpoints.push_back(
              std::make_shared<const backbone::MemorySnapshot>(std::move(c)));
        }
      }
      cache_.insert(std::move(entry));
    }
    out.timings.total_ms =
        prepared.tokenize_ms + prepared.image_prepare_ms + ms_since(p.t0) - p.paused_ms;
    return out;
  }

 public:
  cache::StateCacheStats state_cache_stats() const override { return cache_.stats(); }

  AnswerSettings answer_settings() const override {
    return {config_.calibration_path, config_.confidence};
  }

  const std::string& model_name() const override { return config_.model_name; }
  /// After a large image or a long record: the tower's compute buffers (kept by ggml at their
  /// peak size) are released, the backbone's context is made anew (a long record touched pages
  /// of its compute buffers that would otherwise stay resident), and freed heap - the request's
  /// pixels included, in whichever thread's arena they were made - is returned to the system
  /// (malloc_trim), so RSS goes back near its idle size instead of staying at the largest
  /// request's.
  void idle() override {
    const bool backbone = backbone_.longest_record() > kBackboneKeepTokens;
    if (!release_pending_ && !backbone) return;
    if (release_pending_) tower_->release_compute_memory();
    if (backbone) backbone_.release_compute_memory();
    release_pending_ = false;
    ::malloc_trim(0);
  }

  ServedLimits limits() const override {
    ServedLimits l;
    l.context_size = backbone_.context_size();
    l.max_questions = config_.max_questions;
    l.max_options = config_.max_options;
    l.max_images = tower_ ? config_.max_images : 0;
    l.max_image_tokens = config_.max_image_tokens;
    l.max_request_image_tokens = config_.max_request_image_tokens;
    l.max_vision_memory = tower_ ? vision_memory_ : 0;
    l.image_urls = tower_ && config_.allow_image_urls;
    l.max_videos = tower_ ? config_.max_videos : 0;
    l.max_video_frames = config_.max_video_frames;
    l.max_video_seconds = config_.max_video_seconds;
    l.max_video_frame_pixels = config_.max_video_frame_pixels;
    l.max_video_bytes = config_.max_video_bytes;
    l.parallel = backbone_.params().parallel;
    l.sequence_bytes = backbone_.sequence_memory().per_sequence;
    return l;
  }
  int context_size() const override { return backbone_.context_size(); }

  std::string sequence_memory() const override {
    const int n = backbone_.params().parallel;
    return "parallel " + std::to_string(n) + " x context " +
           std::to_string(backbone_.context_size()) + ": " +
           backbone::describe_sequence_memory(backbone_.sequence_memory(), n);
  }

  std::string placement() const override {
    if (placement_.gpu == nullptr) {
      const int threads = backbone::resolved_threads(config_.backbone);
      return "CPU, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
    }
    const int layers = backbone_.n_layer();
    const int offloaded = placement_.gpu_layers < 0 || placement_.gpu_layers > layers
                              ? layers
                              : placement_.gpu_layers;
    return device::describe(placement_) + ": backbone " + std::to_string(offloaded) + "/" +
           std::to_string(layers) + " layers" + (tower_ ? ", vision tower" : "") +
           ", joint schema head on " + head_device_;
  }

 private:
  /// Reads the model in whatever layout it is (artifact::open_model): head weights checked
  /// against the backbone, a tied or missing LM head refused before the backbone loads.
  static artifact::OpenedModel open(const EngineConfig& config) {
    artifact::ModelPaths paths;
    paths.gguf = config.backbone_path;
    if (!config.mmproj_path.empty()) paths.mmproj = config.mmproj_path;
    if (!config.head_path.empty()) paths.head_weights = config.head_path;
    if (!config.head_config_path.empty()) paths.head_config = config.head_config_path;
    return artifact::open_model(paths);
  }

  // `opened` is taken by value: the f32 head weights are freed once uploaded to the head's
  // backend buffer.
  Engine(const EngineConfig& config, artifact::OpenedModel opened)
      : config_(config),
        placement_(device::resolve(config.backbone.device, config.backbone.gpu_layers)),
        lexical_(opened.lexical_gguf.string()),
        overrides_(record::pretokenizer_overrides(record::PreTokenizer::qwen2)),
        backbone_(load_backbone(opened, config.backbone, overrides_)),
        head_(make_head(opened.head, placement_, backbone::resolved_threads(config.backbone),
                        head_device_)),
        tokenizer_(backbone_.vocab(), record::Normalization::nfc),
        cache_(state_cache_bytes(config.state_cache_mb)),
        sequences_(config.backbone.parallel) {
    if (lexical_.n_embd() != backbone_.n_embd()) {
      throw model_error("output.weight rows have " + std::to_string(lexical_.n_embd()) +
                        " values but the backbone's n_embd is " +
                        std::to_string(backbone_.n_embd()));
    }
    image_policy_.allow_urls = config.allow_image_urls;
    image_policy_.url.allow_loopback_for_tests = config.allow_loopback_image_urls_for_tests;
    image_policy_.url.timeout = std::chrono::milliseconds(config.image_fetch_timeout_ms);
    video_policy_.allow_urls = config.allow_image_urls;
    video_policy_.url = image_policy_.url;
    video_policy_.limits.max_encoded_bytes = static_cast<std::size_t>(config.max_video_bytes);
    video_policy_.limits.max_duration_s = config.max_video_seconds;
    video_policy_.limits.max_sampled_frames = config.max_video_frames;
    video_policy_.limits.max_frame_pixels =
        static_cast<std::uint64_t>(config.max_video_frame_pixels);
    video_policy_.limits.decode_timeout = std::chrono::milliseconds(config.video_decode_timeout_ms);
    if (!config.mmproj_path.empty()) {
      vision::TowerParams tp;
      tp.threads = backbone::resolved_threads(config.backbone);
      tp.use_gpu = placement_.gpu != nullptr;
      tp.device = placement_.gpu;
      tp.flash_attention = config.backbone.flash_attention;
      tp.verbose = config.verbose;
      tp.use_file_normalization = config.mmproj_file_normalization;
      tower_ = std::make_unique<vision::VisionTower>(
          config.mmproj_path, llama_model_n_embd_inp(backbone_.model()), std::move(tp));
    }
    vision_memory_ =
        config.max_vision_memory > 0 ? config.max_vision_memory : default_vision_memory(placement_);
    answer_options_.confidence = decision::parse_confidence_kind(config.confidence);
    if (!config.calibration_path.empty()) {
      calibration_ = decision::load_calibration(config.calibration_path);
      answer_options_.calibration = &*calibration_;
    }
  }

  /// The image blocks alone (<|vision_start|> + N + <|vision_end|> each, then "\n") must fit the
  /// context: 413 naming every image's tokens and the context size, before any image is encoded.
  void check_image_budget(const std::vector<RequestImage>& images,
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
    if (total > static_cast<std::size_t>(backbone_.context_size())) {
      throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                  std::string(videos ? "the images and videos need " : "the images need ") +
                      std::to_string(total) + " tokens (" + detail + ") but the context size is " +
                      std::to_string(backbone_.context_size()),
                  videos ? "videos" : "images");
    }
  }

  /// The server's own bounds on one request's image work (EngineConfig::max_image_tokens,
  /// max_request_image_tokens, max_vision_memory): 413 naming the image, before any pixel is
  /// decoded. `detail` lists every image's size and tokens.
  void check_image_costs(const std::vector<RequestImage>& images, const std::string& detail) const {
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
          vision::tower_compute_bytes(g, tower_->info(), tower_->flash_attention());
      if (bytes > vision_memory_) {
        throw Error(ErrorKind::payload_too_large, "image_too_large",
                    image.param + " is " + size + ": the vision tower would need about " +
                        gib(bytes) + " of memory for it, over the " + gib(vision_memory_) +
                        " this server allows (--max-vision-memory" +
                        (config_.max_vision_memory == 0 && placement_.gpu != nullptr
                             ? "; by default what " + placement_.info.name + " has free"
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

  /// Remembers an image whose tower work takes more than kVisionKeepBytes: idle() gives that
  /// memory back.
  void note_vision_memory(const RequestImage& image) {
    if (vision::tower_compute_bytes(image.grid, tower_->info(), tower_->flash_attention()) >
        kVisionKeepBytes) {
      release_pending_ = true;
    }
  }
  static constexpr std::uint64_t kVisionKeepBytes = std::uint64_t{256} << 20;
  /// Prefixes shorter than this are prefilled again rather than cached (cheaper to recompute than
  /// to keep; the 36-token system prefix is just over it).
  static constexpr int kMinCachedTokens = 32;
  /// Recurrent-only checkpoints kept with one cached state (see decide()).
  static constexpr std::size_t kMaxCheckpoints = 8;
  /// Records up to this many tokens keep the backbone's context as it is when the server goes
  /// idle; a longer one has it made anew (docs/performance.md: what that costs and gives back).
  static constexpr int kBackboneKeepTokens = 2048;

  /// The joint schema head on the placement's GPU when that backend runs every op of its graph,
  /// else on the CPU with `threads`; `where` says which and why.
  static head::JointSchemaHead make_head(const head::HeadWeights& weights,
                                         const device::Placement& placement, int threads,
                                         std::string& where) {
    if (placement.gpu != nullptr) {
      ggml_backend_ptr backend(ggml_backend_dev_init(placement.gpu, nullptr));
      if (backend) {
        head::JointSchemaHead head(weights, std::move(backend));
        const std::vector<std::string> missing = head.unsupported_ops();
        if (missing.empty()) {
          where = head.backend_name();
          return head;
        }
        where = "CPU (" + placement.info.name + " lacks";
        for (const std::string& op : missing) where += " " + op;
        where += ")";
      } else {
        where = "CPU (" + placement.info.name + " gave no backend)";
      }
    } else {
      where = "CPU";
    }
    return head::JointSchemaHead(weights, threads);
  }

  /// The vision tower's memory for one image by default: a quarter of physical memory, and on a
  /// device at most what the device has free once the backbone and the head are on it (an image
  /// over that is a 413 naming it, not a failed allocation on the device).
  static std::uint64_t default_vision_memory(const device::Placement& placement) {
    std::uint64_t bytes = physical_memory_bytes() / 4;
    if (placement.gpu != nullptr) {
      std::size_t free = 0, total = 0;
      ggml_backend_dev_memory(placement.gpu, &free, &total);
      if (free > 0) bytes = std::min<std::uint64_t>(bytes, free);
    }
    return bytes;
  }

  static std::string gib(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
    return text;
  }

  /// encode_record; with images, a record whose fixed part does not fit the context is a 413 that
  /// names the image tokens (the images, not the schema, are what the client can shrink).
  record::Record encode_with_images(const request::Request& req,
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

  static backbone::Backbone load_backbone(const artifact::OpenedModel& opened,
                                          const backbone::BackboneParams& params,
                                          std::span<const llama_model_kv_override> overrides) {
    backbone::validate(params);
    const llama_model_params mp = backbone::Backbone::model_params(params, overrides);
    artifact::OwnedLlamaModel model = artifact::load_backbone(opened.backbone, mp);
    return backbone::Backbone(backbone::LlamaModelPtr(model.release()), params,
                              opened.backbone.gguf.string());
  }

  /// A question whose id is "" and that has no instructions renders to no tokens (the
  /// reference encodes it so, then averages an empty span: NaN logits). Refused with a 400
  /// before any model work instead of answering garbage.
  static void refuse_empty_question_spans(const record::Record& rec) {
    for (const record::QuestionRecord& q : rec.questions) {
      if (q.question_span.size() == 0) {
        throw invalid_request("question \"" + q.question_id +
                                  "\" has an empty id and no instructions, so its question span "
                                  "is empty and cannot be decided; give it instructions",
                              "questions." + q.question_id + ".instructions");
      }
    }
  }

  /// Under --truncation refuse: 413 for a record whose state, cut to the request's
  /// max_state_tokens if it has one, does not fit the served context; nothing when it would (the
  /// client's own cut is what was made).
  void refuse_truncation(const request::Request& req, const record::Record& rec) const {
    std::size_t full_state = tokenizer_.tokenize(rec.rendered_state).size();
    if (req.max_state_tokens) {
      full_state = std::min(full_state, static_cast<std::size_t>(*req.max_state_tokens));
    }
    const std::size_t full = rec.input_tokens() - rec.state_span.size() + full_state;
    if (full <= static_cast<std::size_t>(backbone_.context_size())) return;
    throw Error(ErrorKind::payload_too_large, "context_length_exceeded",
                "the record needs " + std::to_string(full) + " tokens but the context size is " +
                    std::to_string(backbone_.context_size()) +
                    " (the server refuses to truncate the state)",
                "state");
  }

  /// EngineConfig::state_cache_mb in bytes: -1 a sixteenth of physical memory, at most 4 GiB.
  static std::size_t state_cache_bytes(std::int64_t mb) {
    if (mb >= 0) return static_cast<std::size_t>(mb) << 20;
    return static_cast<std::size_t>(
        std::min<std::uint64_t>(physical_memory_bytes() / 16, std::uint64_t{4096} << 20));
  }

  EngineConfig config_;
  device::Placement placement_;  ///< where the backbone, the tower and the head run
  std::string head_device_;      ///< the head's backend, and why when it is not placement_'s
  lexical::LexicalTable lexical_;
  std::vector<llama_model_kv_override> overrides_;
  backbone::Backbone backbone_;
  head::JointSchemaHead head_;
  record::LlamaTokenizer tokenizer_;
  vision::ImageSourcePolicy image_policy_;
  VideoSourcePolicy video_policy_;
  std::unique_ptr<vision::VisionTower> tower_;  ///< null without an mmproj
  cache::StateCache cache_;
  std::optional<decision::Calibration> calibration_;  ///< --calibration, if given
  decision::AnswerOptions answer_options_;            ///< points into calibration_
  std::uint64_t vision_memory_ = 0;                   ///< bytes the tower may take for one image
  bool release_pending_ = false;                      ///< a large image ran since the last idle()
  SequenceSlots sequences_;  ///< the backbone sequences (parallel()) and who holds them
};

}  // namespace

std::unique_ptr<Decider> make_engine(const EngineConfig& config) {
  backbone::ensure_llama_backend(config.verbose);
  return std::make_unique<Engine>(config);
}

}  // namespace clef::runtime
