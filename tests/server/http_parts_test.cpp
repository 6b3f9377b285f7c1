// Header checks, routes, health/models bodies, request ids.

#include <gtest/gtest.h>

#include <set>

#include "server/endpoints.hpp"
#include "server/http_exchange.hpp"

namespace clef::server {
namespace {

TEST(HttpChecks, JsonContentTypes) {
  EXPECT_TRUE(is_json_content_type("application/json"));
  EXPECT_TRUE(is_json_content_type("Application/JSON; charset=utf-8"));
  EXPECT_TRUE(is_json_content_type("application/vnd.clef+json"));
  EXPECT_TRUE(is_json_content_type(""));
  EXPECT_FALSE(is_json_content_type("text/plain"));
  EXPECT_FALSE(is_json_content_type("application/x-www-form-urlencoded"));
  EXPECT_FALSE(is_json_content_type("application/jsonx"));
  EXPECT_FALSE(is_json_content_type("multipart/form-data; boundary=x"));
}

TEST(HttpChecks, ContentLength) {
  EXPECT_EQ(parse_content_length("0"), 0u);
  EXPECT_EQ(parse_content_length(" 16777217 "), 16777217u);
  EXPECT_FALSE(parse_content_length("").has_value());
  EXPECT_FALSE(parse_content_length("-1").has_value());
  EXPECT_FALSE(parse_content_length("12a").has_value());
  EXPECT_FALSE(parse_content_length("99999999999999999999999").has_value());
}

TEST(HttpChecks, Charset) {
  EXPECT_EQ(content_type_charset("application/json"), "");
  EXPECT_EQ(content_type_charset("application/json; charset=UTF-8"), "utf-8");
  EXPECT_EQ(content_type_charset("application/json;foo=1; charset=\"ISO-8859-1\" "), "iso-8859-1");
}

TEST(HttpChecks, Framing) {
  EXPECT_EQ(framing_problem({}, ""), "");
  EXPECT_EQ(framing_problem({"12"}, ""), "");
  EXPECT_EQ(framing_problem({"12", " 12"}, ""), "");  // repeated, same value
  EXPECT_EQ(framing_problem({}, "Chunked"), "");
  EXPECT_NE(framing_problem({"-5"}, ""), "");
  EXPECT_NE(framing_problem({"+5"}, ""), "");
  EXPECT_NE(framing_problem({"99999999999999999999999"}, ""), "");
  EXPECT_NE(framing_problem({"12", "5"}, ""), "");
  EXPECT_NE(framing_problem({"12"}, "chunked"), "");
  EXPECT_NE(framing_problem({}, "gzip"), "");
  EXPECT_NE(framing_problem({}, "gzip, chunked"), "");
}

TEST(Routes, KnownPathsAndMethods) {
  EXPECT_EQ(find_endpoint("/v1/systemone"), Endpoint::systemone);
  EXPECT_EQ(find_endpoint("/v1/decisions"), Endpoint::decisions);
  EXPECT_EQ(find_endpoint("/health"), Endpoint::health);
  EXPECT_EQ(find_endpoint("/v1/models"), Endpoint::models);
  EXPECT_EQ(find_endpoint("/metrics"), Endpoint::metrics);
  EXPECT_EQ(find_endpoint("/v1/decisions/"), Endpoint::unknown);
  EXPECT_EQ(find_endpoint("/v1xmodels"), Endpoint::unknown);
  EXPECT_TRUE(method_allowed(Endpoint::decisions, "POST"));
  EXPECT_FALSE(method_allowed(Endpoint::decisions, "GET"));
  EXPECT_TRUE(method_allowed(Endpoint::health, "HEAD"));
  EXPECT_FALSE(method_allowed(Endpoint::metrics, "POST"));
  EXPECT_STREQ(endpoint_label(Endpoint::unknown), "other");
}

TEST(InfoBodies, HealthStates) {
  EXPECT_EQ(health_of(runtime::QueueState::loading, false), Health::loading);
  EXPECT_EQ(health_of(runtime::QueueState::ready, false), Health::ok);
  EXPECT_EQ(health_of(runtime::QueueState::ready, true), Health::draining);
  EXPECT_EQ(health_of(runtime::QueueState::draining, false), Health::draining);
  EXPECT_EQ(health_of(runtime::QueueState::failed, false), Health::failed);
  EXPECT_EQ(health_status(Health::ok), 200);
  EXPECT_EQ(health_status(Health::loading), 503);
  EXPECT_EQ(health_status(Health::draining), 503);
  EXPECT_EQ(health_body(Health::ok), R"({"status":"ok"})");
  EXPECT_EQ(health_body(Health::loading), R"({"status":"loading"})");
  EXPECT_EQ(health_body(Health::draining), R"({"status":"draining"})");
}

TEST(InfoBodies, ModelsList) {
  runtime::ServedModel model;
  model.name = "clef-flash";
  model.context_size = 16384;
  model.load_seconds = 1.0;
  const std::string reference_answers =
      R"("answers":{"calibration":null,"confidence":"reference"})";
  // TypeSafe's SDKs read `models` (their ModelCard): the same model, after the OpenAI list.
  const std::string card =
      R"(,"models":[{"name":"clef-flash","description":"typed decisions served by clef",)"
      R"("release_date":""}]})";
  EXPECT_EQ(models_body(model), R"({"object":"list","data":[{"id":"clef-flash","object":"model",)"
                                R"("owned_by":"clef","context_size":16384,)" +
                                    reference_answers + "}]" + card);
  // A model that states its limits: they are listed (issue 13: the image caps a client meets).
  model.limits = {16384, 64, 255, 4, 4096, 8192, std::uint64_t{6} << 30};
  EXPECT_EQ(models_body(model),
            R"({"object":"list","data":[{"id":"clef-flash","object":"model",)"
            R"("owned_by":"clef","context_size":16384,"limits":{"max_questions":64,)"
            R"("max_options":255,"max_images":4,"max_image_tokens":4096,)"
            R"("max_request_image_tokens":8192,"max_vision_memory_bytes":6442450944,)"
            R"("max_videos":0,"max_video_frames":0,"max_video_seconds":0.0,)"
            R"("max_video_frame_pixels":0,"max_video_bytes":0,"parallel":1},)"
            R"("capabilities":{"images":true,"image_urls":false,"videos":false,)"
            R"("video_files":false},)" +
                reference_answers + "}]" + card);
  // Issue 18: a decider that takes videos says so and states their limits.
  model.limits.max_videos = 2;
  model.limits.max_video_frames = 768;
  model.limits.max_video_seconds = 600;
  EXPECT_NE(
      models_body(model).find(R"("max_videos":2,"max_video_frames":768,)"
                              R"("max_video_seconds":600.0,"max_video_frame_pixels":0,)"
                              R"("max_video_bytes":0,"parallel":1},"capabilities":{"images":true,)"
                              R"("image_urls":false,"videos":true,"video_files":false})"),
      std::string::npos)
      << models_body(model);
  // Issue 53: frame lists taken, files too only where FFmpeg's module is there.
  model.limits.video_files = true;
  EXPECT_NE(models_body(model).find(R"("videos":true,"video_files":true})"), std::string::npos)
      << models_body(model);
  // Issue 14: an active calibration and another confidence are said.
  model.limits = {};
  model.answers = {"/etc/clef/cal.json", "entropy"};
  EXPECT_EQ(models_body(model),
            R"({"object":"list","data":[{"id":"clef-flash","object":"model",)"
            R"("owned_by":"clef","context_size":16384,"answers":{"calibration":)"
            R"("/etc/clef/cal.json","confidence":"entropy"}}])" +
                card);
  // Issue 15: where the model runs.
  model.answers = {};
  model.placement = "CPU, 2 threads";
  EXPECT_EQ(models_body(model), R"({"object":"list","data":[{"id":"clef-flash","object":"model",)"
                                R"("owned_by":"clef","context_size":16384,)"
                                R"("device":"CPU, 2 threads",)" +
                                    reference_answers +
                                    R"(}],"models":[{"name":"clef-flash","description":)"
                                    R"j("typed decisions served by clef (CPU, 2 threads)",)j"
                                    R"("release_date":""}]})");
}

TEST(RequestIds, UniqueAndClientIdsKeptWhenSane) {
  RequestIds ids;
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(ids.next()).second);
  EXPECT_EQ(seen.begin()->rfind("req-", 0), 0u);
  EXPECT_EQ(ids.for_request("trace-42.a_b:c"), "trace-42.a_b:c");
  EXPECT_NE(ids.for_request("bad id with spaces"), "bad id with spaces");
  EXPECT_NE(ids.for_request(std::string(65, 'a')), std::string(65, 'a'));
  EXPECT_EQ(ids.for_request("").rfind("req-", 0), 0u);
}

}  // namespace
}  // namespace clef::server
