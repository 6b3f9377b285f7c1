#include "runtime/loop/prepared_request.hpp"

namespace clef::runtime {

namespace {

json::Value span_value(const record::Span& span) {
  return json::Value::array({json::Value::integer(static_cast<std::int64_t>(span.begin)),
                             json::Value::integer(static_cast<std::int64_t>(span.end))});
}

json::Value size_value(int height, int width) {
  return json::Value::array(
      {json::Value::integer(std::int64_t{height}), json::Value::integer(std::int64_t{width})});
}

}  // namespace

json::Value record_trace(const PreparedRequest& prepared) {
  const record::Record& rec = prepared.record;
  std::vector<json::Value> ids;
  ids.reserve(rec.ids.size());
  for (const auto id : rec.ids) ids.push_back(json::Value::integer(id));
  std::vector<json::Value> questions;
  for (const auto& q : rec.questions) {
    std::vector<json::Value> options;
    for (std::size_t j = 0; j < q.option_spans.size(); ++j) {
      options.push_back(json::Value::object({{"option_id", json::Value::string(q.option_ids[j])},
                                             {"span", span_value(q.option_spans[j])}}));
    }
    questions.push_back(json::Value::object({{"id", json::Value::string(q.question_id)},
                                             {"question_span", span_value(q.question_span)},
                                             {"options", json::Value::array(std::move(options))}}));
  }
  std::vector<json::Value> blocks;
  for (std::size_t i = 0; i < rec.images.size() && i < prepared.images.size(); ++i) {
    const RequestImage& image = prepared.images[i];
    const vision::ImageGrid& g = image.grid;
    json::Value block = json::Value::object(
        {{"first_token",
          json::Value::integer(static_cast<std::int64_t>(rec.images[i].first_token))},
         {"n_tokens", json::Value::integer(static_cast<std::int64_t>(rec.images[i].n_tokens))},
         {"input_size", size_value(image.input_height, image.input_width)},
         {"resized_size", size_value(image.resized_height, image.resized_width)},
         {"merged_grid", size_value(g.merged_h, g.merged_w)}});
    // A video's temporal patch: which video (request order).
    if (rec.images[i].video >= 0) block.set("video", json::Value::integer(rec.images[i].video));
    blocks.push_back(std::move(block));
  }
  return json::Value::object({{"ids", json::Value::array(std::move(ids))},
                              {"questions", json::Value::array(std::move(questions))},
                              {"images", json::Value::array(std::move(blocks))}});
}

}  // namespace clef::runtime
