// The route table (src/server/routes.hpp) against what the server documents and serves: every
// route is in web/openapi.json under its method, every documented path is a route or an embedded
// file, the playground calls only routes, and the helpers the router, the light lane, the key
// check and the metrics read (find_endpoint, method_allowed, is_light_request, endpoint_label)
// follow the table.

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "json/parse.hpp"
#include "server/endpoints.hpp"
#include "server/routes.hpp"
#include "server/web_files.hpp"

namespace clef::server {
namespace {

json::Value openapi() {
  const WebFile* doc = find_web_file("/openapi.json");
  if (doc == nullptr) throw std::runtime_error("no embedded /openapi.json");
  return json::parse(doc->body);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

TEST(Routes, EveryRouteIsInTheOpenApiDocumentUnderItsMethod) {
  const json::Value doc = openapi();
  const json::Value* paths = doc.find("paths");
  ASSERT_NE(paths, nullptr);
  for (const Route& r : routes()) {
    if (r.path.empty()) continue;
    const json::Value* entry = paths->find(std::string(r.path));
    ASSERT_NE(entry, nullptr) << r.path << " is served but not in web/openapi.json";
    EXPECT_NE(entry->find(lower(r.method)), nullptr)
        << r.path << ": web/openapi.json lacks its " << r.method;
  }
}

TEST(Routes, EveryDocumentedPathIsARouteOrAnEmbeddedFile) {
  const json::Value doc = openapi();
  for (const auto& [path, entry] : doc.find("paths")->members()) {
    const Endpoint e = find_endpoint(path);
    EXPECT_NE(e, Endpoint::unknown) << path << " is documented but not served";
    for (const auto& [method, operation] : entry.members()) {
      (void)operation;
      EXPECT_TRUE(method_allowed(e, lower(method) == "post" ? "POST" : "GET"))
          << method << " " << path;
    }
  }
}

TEST(Routes, ThePlaygroundCallsOnlyRoutes) {
  const WebFile* app = find_web_file("/playground/app.js");
  ASSERT_NE(app, nullptr);
  const std::string js(app->body);
  const std::regex call(R"re(fetch\("(/[^"]*)")re");
  int calls = 0;
  for (std::sregex_iterator it(js.begin(), js.end(), call), end; it != end; ++it, ++calls) {
    const std::string path = (*it)[1];
    EXPECT_NE(find_endpoint(path), Endpoint::unknown) << "the playground calls " << path;
  }
  EXPECT_GE(calls, 2) << "the playground's calls were not found in app.js";
}

TEST(Routes, TheHelpersFollowTheTable) {
  std::set<std::string_view> labels;
  for (const Route& r : routes()) {
    EXPECT_TRUE(labels.insert(r.label).second) << "two routes labelled " << r.label;
    EXPECT_EQ(&route_of(r.endpoint), &r);
    EXPECT_EQ(endpoint_label(r.endpoint), r.label);
    if (r.path.empty()) continue;
    EXPECT_EQ(find_endpoint(r.path), r.endpoint);
    EXPECT_TRUE(method_allowed(r.endpoint, r.method));
    EXPECT_EQ(is_decision(r.endpoint), r.method == "POST") << r.path;
    EXPECT_EQ(r.get != nullptr, r.method == "GET") << r.path << ": a GET route needs a handler";
    const std::string head = std::string("GET ") + std::string(r.path) + "?x=1 HTTP/1.1\r\n";
    EXPECT_EQ(is_light_request(head), r.light) << r.path;
  }
  EXPECT_EQ(find_endpoint("/v1/nothing"), Endpoint::unknown);
  EXPECT_STREQ(allowed_methods_header(Endpoint::decisions), "POST");
  EXPECT_STREQ(allowed_methods_header(Endpoint::health), "GET, HEAD");
  EXPECT_FALSE(route_of(Endpoint::health).needs_key) << "load balancers probe without a key";
  EXPECT_TRUE(route_of(Endpoint::unknown).needs_key) << "keys before routing";
}

}  // namespace
}  // namespace clef::server
