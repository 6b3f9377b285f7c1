// The loaded model is the weights, const and shared; runners borrow it and hold only what they
// compute with (llama.cpp's llama_model beside its llama_contexts): two engines over one load
// share the backbone's and the head's weights, decide on two threads at once, and give what a
// cold engine over its own load gives, byte for byte.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "json/parse.hpp"
#include "media/decode.hpp"
#include "media/image_source.hpp"
#include "runtime/engine/loaded_model.hpp"
#include "runtime/make_engine.hpp"
#include "support/ticket_requests.hpp"
#include "support/tiny_engine_config.hpp"

namespace {

using clef::json::Value;
namespace rt = clef::runtime;

/// The ticket with the oracle's 300-token image: the second runner's vision tower runs too.
Value ticket_with_image() {
  const std::string image =
      std::string(CLEF_TEST_DATA) + "/oracle/coreai/images/arrows_640x480.png";
  return clef::test::ticket_request(
      "Production database is down", clef::test::kTicketQuestionsA,
      {clef::media::image_file_data_uri(image, clef::media::DecodeLimits{}, "image")});
}

TEST(LoadedModel, TwoRunnersBorrowOneLoadAndDecideAsAColdEngine) {
  const std::vector<Value> requests = {
      clef::test::ticket_request("Production database is down", clef::test::kTicketQuestionsB),
      ticket_with_image()};
  std::vector<std::string> cold;
  {
    rt::Engine alone = rt::make_engine(clef::test::tiny_engine_config());
    for (const Value& r : requests) cold.push_back(alone.decide(r).body);
  }

  const std::shared_ptr<const rt::LoadedModel> model =
      rt::LoadedModel::load(clef::test::tiny_engine_config());
  rt::Engine first = rt::make_engine(model);
  rt::Engine second = rt::make_engine(model);
  // One load: the model and its two runners hold the same weights (each runner's backbone
  // context and head compute borrow them; nothing is loaded twice).
  EXPECT_EQ(model->backbone.use_count(), 3);
  EXPECT_EQ(model->head.use_count(), 3);

  // Both runners at once, each on its own thread, each deciding both requests.
  std::vector<std::string> a(requests.size()), b(requests.size());
  std::thread other([&] {
    for (std::size_t i = 0; i < requests.size(); ++i) b[i] = second.decide(requests[i]).body;
  });
  for (std::size_t i = 0; i < requests.size(); ++i) a[i] = first.decide(requests[i]).body;
  other.join();
  EXPECT_EQ(a, cold);
  EXPECT_EQ(b, cold);

  // One runner gone, the other still decides from the shared weights.
  first = {};
  EXPECT_EQ(model->backbone.use_count(), 2);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(second.decide(requests[i]).body, cold[i]);
  }
}

}  // namespace
