#pragma once
// Preparation: a parsed request body -> a PreparedRequest (validated, defaulted once, encoded into
// ids and spans, images and video frames decoded and resized, every budget checked), with the
// refusals that name the field at fault. Const over the loaded model: the server's HTTP threads
// share one while the deciding thread runs the model.

#include <cstddef>
#include <vector>

#include "json/value.hpp"
#include "record/encode.hpp"
#include "runtime/cancellation.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/prepared_request.hpp"
#include "runtime/video_inputs.hpp"
#include "vision/image_source.hpp"

namespace clef::runtime {

class Preparer {
 public:
  /// Prepares requests for `model` (kept alive by the caller longer than the preparer);
  /// `image_digests`: give each image its content digest (the state cache's key).
  Preparer(const LoadedModel& model, bool image_digests);

  /// Thread-safe: reads only the configuration, the tokenizer (llama_tokenize on a const
  /// vocabulary) and the mmproj's processor settings. Reading videos asks `cancellation` (a gone
  /// client stops it: DecisionCancelled), and the prepared request keeps it. Throws clef::Error
  /// for a request that cannot be decided (400/413/415/422), naming the field.
  PreparedRequest prepare(const json::Value& body, const Cancellation& cancellation) const;

 private:
  void check_image_budget(const std::vector<RequestImage>& images,
                          std::size_t video_text_tokens) const;
  void check_image_costs(const std::vector<RequestImage>& images, const std::string& detail) const;
  record::Record encode_with_images(const request::Request& req,
                                    const record::EncodeOptions& options,
                                    const std::vector<RequestImage>& images) const;
  void refuse_truncation(const request::Request& req, const record::Record& rec) const;

  const LoadedModel& model_;
  const bool image_digests_;
  vision::ImageSourcePolicy image_policy_;
  VideoSourcePolicy video_policy_;
};

}  // namespace clef::runtime
