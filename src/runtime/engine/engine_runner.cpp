#include "runtime/engine/engine_runner.hpp"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "backbone/backbone.hpp"
#include "cache/state_cache_manager.hpp"
#include "decision/response.hpp"
#include "head/joint_schema_head.hpp"
#include "runtime/engine/head_inputs.hpp"
#include "runtime/engine/loaded_model.hpp"
#include "runtime/engine/sequence_slots.hpp"
#include "runtime/engine/served_model.hpp"
#include "runtime/loop/decision_loop.hpp"
#include "runtime/loop/request_image.hpp"
#include "util/elapsed.hpp"
#include "util/error.hpp"
#include "util/physical_memory.hpp"
#include "vision/tower.hpp"
#include "vision/tower_memory.hpp"

namespace clef::runtime {
namespace {

using Clock = std::chrono::steady_clock;

using util::ms_since;

/// The joint schema head's compute on the backend of the device its weights are on.
head::JointSchemaHead make_head(const LoadedModel& m) {
  if (m.head_gpu == nullptr) {
    return head::JointSchemaHead(m.head, backbone::resolved_threads(m.config.backbone));
  }
  ggml_backend_t backend = ggml_backend_dev_init(m.head_gpu, nullptr);
  if (backend == nullptr) {
    throw Error(ErrorKind::internal, "internal",
                "no backend for the joint schema head on " + m.head_device);
  }
  return head::JointSchemaHead(m.head, ggml_backend_ptr(backend), m.placement.info.quirks);
}

/// The vision tower of `m`'s mmproj where the backbone runs; null without one.
std::unique_ptr<vision::VisionTower> make_tower(const LoadedModel& m) {
  const EngineConfig& c = m.config;
  if (c.mmproj_path.empty()) return nullptr;
  vision::TowerParams tp;
  tp.threads = backbone::resolved_threads(c.backbone);
  tp.use_gpu = m.placement.gpu != nullptr;
  tp.device = m.placement.gpu;
  tp.flash_attention = c.backbone.flash_attention;
  tp.verbose = c.debug_log;
  tp.use_file_normalization = c.mmproj_file_normalization;
  tp.quirks = m.placement.info.quirks;
  return std::make_unique<vision::VisionTower>(
      c.mmproj_path, llama_model_n_embd_inp(m.backbone->model()), std::move(tp));
}

/// The running side of the decision pipeline over a loaded model (contract sections 1-6).
class EngineRunner final : public Runner {
 public:
  explicit EngineRunner(std::shared_ptr<const LoadedModel> model)
      : model_(std::move(model)),
        backbone_(model_->backbone, model_->config.backbone),
        head_(make_head(*model_)),
        tower_(make_tower(*model_)),
        cache_(model_->memory.state_cache, backbone_.params(), backbone_.n_embd(),
               std::chrono::milliseconds(model_->config.resume_snapshot_ms)),
        sequences_(model_->config.backbone.parallel) {}

  /// What load_runner() says of it.
  LoadedRunner describe() const {
    return {model_, served_model(*model_, backbone_, tower_ != nullptr), tower_.get(),
            cache_.enabled(), nullptr};
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
    if (p.suspended() || p.prefilled()) {
      throw Error(ErrorKind::internal, "internal",
                  "suspend() of a decision that is suspended or prefilled");
    }
    if (p.prefill) backbone_.suspend(*p.prefill);
    sequences_.give_back(p.seq);
    p.since = Clock::now();
  }

  void resume(DecisionInProgress& decision) override {
    auto& p = static_cast<Pending&>(decision);
    if (!p.suspended())
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
    p.paused_ms += ms_since(*p.since);
    p.since.reset();
    ++p.out.suspensions;
  }

  StepShape step_shape() const override {
    const backbone::BackboneParams& params = backbone_.params();
    return {params.parallel, params.chunk_tokens, params.flash_attention, true};
  }

  /// The image the plan names first (one encode cannot be interrupted), the prefills it starts,
  /// then every prefill of the step decodes its piece.
  void step(const StepOrders& orders) override {
    for (DecisionInProgress* d : orders.advance) {
      if (static_cast<Pending&>(*d).suspended()) {
        throw Error(ErrorKind::internal, "internal", "step() of a suspended one");
      }
    }
    if (orders.encode != nullptr) {
      auto& p = static_cast<Pending&>(*orders.encode);
      if (!p.error && !p.prefill) {
        try {
          encode_next_image(p);
        } catch (...) {
          p.error = std::current_exception();  // this decision only
        }
      }
    }
    for (DecisionInProgress* d : orders.start) {
      auto& p = static_cast<Pending&>(*d);
      if (p.prefill || p.error) continue;
      if (p.next_image != p.prepared.images.size()) {
        throw Error(ErrorKind::internal, "internal", "a prefill started before its images");
      }
      try {
        start_prefill(p);
      } catch (...) {
        p.error = std::current_exception();  // this decision only
      }
    }
    std::vector<backbone::Prefill*> prefills;
    for (DecisionInProgress* d : orders.advance) {
      auto& p = static_cast<Pending&>(*d);
      if (p.prefill && !p.prefill->done()) prefills.push_back(&*p.prefill);
    }
    backbone_.step(prefills, orders.most_tokens);
  }

  Decision finish(DecisionInProgress& decision) override {
    auto& p = static_cast<Pending&>(decision);
    if (p.error) std::rethrow_exception(p.error);
    if (!p.prefill || !p.prefill->done()) {
      throw Error(ErrorKind::internal, "internal", "finish() before the prefill is done");
    }
    if (p.prefill->cancelled()) {
      keep_abandoned(p);
      backbone::throw_cancelled(p.prefill->cancelled_at());
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
      if (!suspended()) sequences.give_back(seq);
    }
    Pending(const Pending&) = delete;
    Pending& operator=(const Pending&) = delete;
    bool prefilled() const override { return error || (prefill && prefill->done()); }
    int tokens_left() const override {
      if (prefilled()) return 0;
      const int total = static_cast<int>(prepared.record.ids.size());
      return prefill ? total - prefill->prefilled() : total - cached.resumed();
    }
    int images_left() const override {
      return prefill || error ? 0 : static_cast<int>(prepared.images.size() - next_image);
    }
    bool prefilling() const override { return prefill.has_value(); }

    const PreparedRequest& prepared;
    SequenceSlots& sequences;
    std::optional<Clock::time_point> suspended_at() const override { return since; }

    int seq;  ///< the sequence it holds (its prefill's), unless suspended
    std::optional<Clock::time_point> since;  ///< suspend()ed then: it holds no sequence
    Decision out;
    Clock::time_point t0;
    Clock::time_point t1;  ///< the prefill started
    std::function<bool()> cancelled;
    std::vector<backbone::EmbeddingSpan> spans;
    std::vector<std::vector<float>> rows;  ///< the tower's rows per image
    cache::RecordCachePlan cached;         ///< the layout's cuts, the resumed prefix, the snapshots
    double paused_ms = 0;                  ///< time suspended
    double paused_before_prefill = 0;
    std::size_t next_image = 0;  ///< the first image whose tower rows are not made yet
    std::optional<backbone::Prefill> prefill;  ///< started once every image is encoded
    std::exception_ptr error;  ///< what failed it before its prefill (begin()'s images), if so
  };

  /// Everything before the prefill's batches on sequence `seq` (taken from sequences_; the
  /// decision holds it): the state cache's plan (the layout's cuts, the cached prefix it resumes
  /// from, the snapshots it takes: cache::StateCacheManager::plan). Its images after the resumed
  /// prefix go through the vision tower in step() (one per step, checking `prepared.cancellation`
  /// before each), then Backbone::start.
  std::unique_ptr<Pending> start_decision(const PreparedRequest& prepared, int seq) {
    std::unique_ptr<Pending> p;
    try {
      p = std::make_unique<Pending>(prepared, sequences_, seq);
    } catch (...) {
      sequences_.give_back(seq);
      throw;
    }
    if (kv_poisoned_ && sequences_.all_free_but(seq)) {
      // A record gave non-finite hidden states (complete()): its KV cells still hold them, and
      // llama.cpp's masked attention (a score + -inf) does not hide a NaN from the next record on
      // that sequence. A fresh context, once no other record holds memory in this one.
      backbone_.release_compute_memory();
      kv_poisoned_ = false;
    }
    p->t0 = Clock::now();
    const record::Record& rec = prepared.record;
    p->cancelled = prepared.cancellation.as_check();
    Decision& out = p->out;
    out.timings.tokenize_ms = prepared.tokenize_ms;
    out.timings.vision_ms = prepared.image_prepare_ms;

    std::vector<std::string> digests;
    for (std::size_t i = 0; i < prepared.images.size(); ++i) {
      p->spans.push_back({static_cast<int>(rec.images[i].first_token),
                          static_cast<int>(rec.images[i].n_tokens),
                          {}});
      digests.push_back(prepared.images[i].digest);
    }
    cache_.plan(rec, p->spans, digests, p->cached);
    // The vision tower's rows for every image block after the resumed prefix (deferred: one per
    // step(), then the prefill starts there). Images are in record order: those inside the
    // resumed prefix come first and need no rows.
    p->rows.resize(prepared.images.size());
    p->next_image = p->cached.first_image_to_encode();
    if (!prepared.images.empty() && !tower_) {
      throw Error(ErrorKind::internal, "internal", "images prepared without a tower");
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
    p.prefill.emplace(backbone_.start(p.prepared.record.ids, p.prepared.positions, p.spans,
                                      p.cached.options, p.cancelled, p.seq));
  }

  /// A cancelled prefill: what it took goes into the state cache
  /// (cache::StateCacheManager::keep_abandoned).
  void keep_abandoned(Pending& p) {
    if (!cache_.enabled() || !p.prefill) return;
    const int prefilled = p.prefill->prefilled();
    cache_.keep_abandoned(p.prepared.record, p.cached, p.prefill->take(), prefilled);
  }

  /// After the prefill: the joint schema head, the response, and the record's snapshots kept in
  /// the state cache (only once the whole decision has succeeded).
  Decision complete(Pending& p, backbone::HiddenStates hidden) {
    const PreparedRequest& prepared = p.prepared;
    const record::Record& rec = prepared.record;
    Decision out = std::move(p.out);
    out.timings.backbone_ms = ms_since(p.t1) - (p.paused_ms - p.paused_before_prefill);
    out.timings.paused_ms = p.paused_ms;
    out.cached_tokens = p.cached.resumed();

    const auto finite = [](float v) { return std::isfinite(v); };
    if (!std::all_of(hidden.data.begin(), hidden.data.end(), finite)) {
      kv_poisoned_ = true;
      throw Error(ErrorKind::internal, "non_finite_hidden_states",
                  "the backbone gave non-finite hidden states for this record (a corrupt weight in "
                  "the backbone or the mmproj?); no answer is given");
    }
    const auto t2 = Clock::now();
    const HeadInputs inputs = make_head_inputs(rec, model_->lexical);
    const auto logits = head_.forward(hidden.data, hidden.rows, inputs.questions, inputs.lexical);
    out.timings.head_ms = ms_since(t2);
    for (const auto& question : logits) {
      if (!std::all_of(question.begin(), question.end(), finite)) {
        throw Error(ErrorKind::internal, "non_finite_logits",
                    "the joint schema head gave non-finite logits (a corrupt head weight?); no "
                    "answer is given");
      }
    }

    out.input_tokens = prepared.input_tokens();
    out.response = decision::build_response(prepared.request, logits, rec.input_tokens(),
                                            model_->answer_options);
    out.logits = logits;
    out.body = decision::response_body(out.response);
    if (prepared.keep_head_rows) {
      out.head_rows = std::make_shared<const HeadRows>(HeadRows{hidden.rows, hidden.data, inputs});
    }

    cache_.keep_decided(rec, p.cached, hidden);
    out.timings.total_ms =
        prepared.tokenize_ms + prepared.image_prepare_ms + ms_since(p.t0) - p.paused_ms;
    return out;
  }

 public:
  cache::StateCacheStats state_cache_stats() const override { return cache_.stats(); }

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

 private:
  /// Remembers an image whose tower work takes more than kVisionKeepBytes: idle() gives that
  /// memory back.
  void note_vision_memory(const RequestImage& image) {
    if (vision::tower_compute_bytes(image.grid, tower_->info(), tower_->flash_attention()) >
        kVisionKeepBytes) {
      release_pending_ = true;
    }
  }
  static constexpr std::uint64_t kVisionKeepBytes = std::uint64_t{256} << 20;
  /// Records up to this many tokens keep the backbone's context as it is when the server goes
  /// idle; a longer one has it made anew (docs/performance.md: what that costs and gives back).
  static constexpr int kBackboneKeepTokens = 2048;

  std::shared_ptr<const LoadedModel> model_;    ///< the weights it borrows
  backbone::Backbone backbone_;                 ///< its context on model_->backbone
  head::JointSchemaHead head_;                  ///< its compute over model_->head
  std::unique_ptr<vision::VisionTower> tower_;  ///< null without an mmproj
  cache::StateCacheManager cache_;
  SequenceSlots sequences_;       ///< the backbone sequences (parallel()) and who holds them
  bool release_pending_ = false;  ///< a large image ran since the last idle()
  /// A record gave non-finite hidden states: the context is made anew before the next record
  /// that starts while no other holds memory (start_decision).
  bool kv_poisoned_ = false;
};

}  // namespace

LoadedRunner load_runner(std::shared_ptr<const LoadedModel> model) {
  if (!model) throw Error(ErrorKind::internal, "internal", "load_runner: no model");
  auto runner = std::make_unique<EngineRunner>(std::move(model));
  LoadedRunner out = runner->describe();
  out.runner = std::move(runner);
  return out;
}

}  // namespace clef::runtime
