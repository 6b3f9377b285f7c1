#pragma once
// Preparation, the engine's Preparer: a parsed request body -> a PreparedRequest (validated,
// defaulted once, encoded into ids and spans, images and video frames decoded and resized, every
// budget checked), with the refusals that name the field at fault. Holds copies of what it reads
// and a share of the backbone's llama_model (the vocabulary), so it is const and may outlive the
// runner.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "json/value.hpp"
#include "media/image_source.hpp"
#include "record/encode.hpp"
#include "record/llama_tokenizer.hpp"
#include "runtime/engine/engine_config.hpp"
#include "runtime/loop/cancellation.hpp"
#include "runtime/loop/prepared_request.hpp"
#include "runtime/loop/preparer.hpp"
#include "runtime/prepare/video_inputs.hpp"
#include "vision/mmproj_info.hpp"

struct llama_vocab;

namespace clef::runtime {

/// The vision tower as preparation sees it: its mmproj settings and how it runs attention (what
/// an image's compute memory depends on), and the device named in a refusal ("" on the CPU).
struct TowerFacts {
  vision::MmprojInfo info;
  bool flash_attention = false;
  std::string device;
};

class EnginePreparer final : public Preparer {
 public:
  /// Prepares requests for `served` as `config` says, tokenizing with `vocabulary` (the
  /// backbone's, sharing its llama_model: Backbone::shared_vocab); `tower`: none without an mmproj;
  /// `image_digests`: give each image its content digest (the state cache's key).
  EnginePreparer(const EngineConfig& config, ServedModel served,
                 std::shared_ptr<const llama_vocab> vocabulary, std::optional<TowerFacts> tower,
                 bool image_digests);

  /// Thread-safe: reads only its own copies and the tokenizer (llama_tokenize on a const
  /// vocabulary). Reading videos asks `cancellation` (a gone client stops it: DecisionCancelled),
  /// and the prepared request keeps it. Throws clef::Error for a request that cannot be decided
  /// (400/413/415/422), naming the field.
  /// Once encoded, the request's state and rendered state are let go: the prepared request
  /// holds the record's ids, not the text they came from.
  PreparedRequest prepare(json::Value body, const Cancellation& cancellation = {},
                          const util::MemoryCharge& charge = {}) const override;

  const ServedModel& served() const override { return served_; }

 private:
  void check_image_budget(const std::vector<RequestImage>& images,
                          std::size_t video_text_tokens) const;
  void check_image_costs(const std::vector<RequestImage>& images, const std::string& detail) const;
  record::Record encode_with_images(const request::Request& req,
                                    const record::EncodeOptions& options,
                                    const std::vector<RequestImage>& images) const;
  void refuse_truncation(const request::Request& req, const record::Record& rec) const;

  int context_size() const { return served_.context_size; }

  const EngineConfig config_;
  const ServedModel served_;
  const std::shared_ptr<const llama_vocab> vocabulary_;  ///< what tokenizer_ reads
  const record::LlamaTokenizer tokenizer_;
  const std::optional<TowerFacts> tower_;
  const bool image_digests_;
  media::ImageSourcePolicy image_policy_;
  VideoSourcePolicy video_policy_;
};

}  // namespace clef::runtime
