#include "head/head_config.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <fstream>
#include <sstream>

#include "util/error.hpp"

namespace clef::head {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 20;  // sanity bound on any size
constexpr std::int64_t kMaxLayers = 1024;

std::int64_t required_int(const rapidjson::Document& doc, const char* key, std::int64_t min,
                          std::int64_t max, const std::string& source) {
  const auto it = doc.FindMember(key);
  if (it == doc.MemberEnd()) {
    throw model_error(source + ": missing \"" + key + "\"");
  }
  if (!it->value.IsInt64() || it->value.GetInt64() < min || it->value.GetInt64() > max) {
    throw model_error(source + ": \"" + key + "\" must be an integer in [" + std::to_string(min) +
                      ", " + std::to_string(max) + "]");
  }
  return it->value.GetInt64();
}

}  // namespace

std::string HeadConfig::describe() const {
  return "{hidden_size=" + std::to_string(hidden_size) + ", width=" + std::to_string(width) +
         ", routing_layers=" + std::to_string(routing_layers) +
         ", layers=" + std::to_string(layers) + ", heads=" + std::to_string(heads) +
         ", feedforward=" + std::to_string(feedforward) + "}";
}

void validate_head_config(const HeadConfig& c, const std::string& source) {
  const auto check = [&](const char* key, std::int64_t v, std::int64_t min, std::int64_t max) {
    if (v < min || v > max) {
      throw model_error(source + ": \"" + key + "\" is " + std::to_string(v) +
                        "; it must be an integer in [" + std::to_string(min) + ", " +
                        std::to_string(max) + "]");
    }
  };
  check("hidden_size", c.hidden_size, 1, kMaxDim);
  check("width", c.width, 1, kMaxDim);
  check("routing_layers", c.routing_layers, 0, kMaxLayers);
  check("layers", c.layers, 0, kMaxLayers);
  check("heads", c.heads, 1, kMaxDim);
  check("feedforward", c.feedforward, 1, kMaxDim);
  if (c.width % c.heads != 0) {
    throw model_error(source + ": \"width\" " + std::to_string(c.width) +
                      " is not divisible by \"heads\" " + std::to_string(c.heads));
  }
}

HeadConfig parse_head_config(std::string_view json, const std::string& source) {
  rapidjson::Document doc;
  // Iterative: the file may come from the internet (clef pull), and RapidJSON's default recursive
  // parser overflows the stack on deeply nested input (a crash before any check).
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError()) {
    throw model_error(source +
                      ": not valid JSON: " + rapidjson::GetParseError_En(doc.GetParseError()) +
                      " at byte " + std::to_string(doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) throw model_error(source + ": not a JSON object");
  HeadConfig c;
  c.hidden_size = required_int(doc, "hidden_size", 1, kMaxDim, source);
  c.width = required_int(doc, "width", 1, kMaxDim, source);
  c.routing_layers = required_int(doc, "routing_layers", 0, kMaxLayers, source);
  c.layers = required_int(doc, "layers", 0, kMaxLayers, source);
  c.heads = required_int(doc, "heads", 1, kMaxDim, source);
  c.feedforward = required_int(doc, "feedforward", 1, kMaxDim, source);
  if (c.width % c.heads != 0) {
    throw model_error(source + ": \"width\" " + std::to_string(c.width) +
                      " is not divisible by \"heads\" " + std::to_string(c.heads));
  }
  const auto dropout = doc.FindMember("dropout");
  if (dropout != doc.MemberEnd() && !dropout->value.IsNumber()) {
    throw model_error(source + ": \"dropout\" must be a number");
  }
  return c;
}

HeadConfig read_head_config(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw model_error("cannot open joint schema head config " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_head_config(ss.str(), path.string());
}

std::string head_config_json(const HeadConfig& c) {
  return "{\n  \"hidden_size\": " + std::to_string(c.hidden_size) +
         ",\n  \"width\": " + std::to_string(c.width) +
         ",\n  \"routing_layers\": " + std::to_string(c.routing_layers) +
         ",\n  \"layers\": " + std::to_string(c.layers) +
         ",\n  \"heads\": " + std::to_string(c.heads) +
         ",\n  \"feedforward\": " + std::to_string(c.feedforward) + "\n}\n";
}

}  // namespace clef::head
