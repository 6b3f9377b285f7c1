#include "artifact/reference.hpp"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <tuple>

namespace clef::artifact {
namespace {

head::HeadConfig published_config(std::int64_t hidden_size) {
  head::HeadConfig c;
  c.hidden_size = hidden_size;
  c.width = 1024;
  c.routing_layers = 2;
  c.layers = 4;
  c.heads = 16;
  c.feedforward = 4096;
  return c;
}

/// (field name, value) of every config field, in joint_head_config.json's order.
std::array<std::pair<const char*, std::int64_t>, 6> fields(const head::HeadConfig& c) {
  return {{{"hidden_size", c.hidden_size},
           {"width", c.width},
           {"routing_layers", c.routing_layers},
           {"layers", c.layers},
           {"heads", c.heads},
           {"feedforward", c.feedforward}}};
}

}  // namespace

const PublishedHead* published_head_with_sha256(std::string_view sha256) {
  for (const PublishedHead& h : published_heads()) {
    if (h.head_sha256 == sha256) return &h;
  }
  return nullptr;
}

std::span<const PublishedHead> published_heads() {
  static const std::array<PublishedHead, 2> heads{{
      {"clef-flash", "clef-flash", "Cloudflare/clef-flash", published_config(4096),
       "19cdcec8c81dc9212be320fff47462ab342fbc1278be4368fb3da71241cf5ba0"},
      {"Clef 27B", "clef", "Cloudflare/clef", published_config(5120),
       "a010ac04f078e699988e4049cbea5e62c962393f59fec366640b64e8d69a4953"},
  }};
  return heads;
}

std::string served_model_id(const head::HeadConfig& config) {
  const HeadMatch match = match_published_head(config);
  return match.exact ? match.head->id : published_heads()[0].id;
}

HeadMatch match_published_head(const head::HeadConfig& config) {
  const auto rank = [&](const PublishedHead& p) {
    int differing = 0;
    const auto a = fields(config);
    const auto b = fields(p.config);
    for (std::size_t i = 0; i < a.size(); ++i) differing += a[i].second != b[i].second ? 1 : 0;
    return std::make_tuple(differing, std::llabs(config.hidden_size - p.config.hidden_size));
  };
  const PublishedHead* best = nullptr;
  for (const PublishedHead& p : published_heads()) {
    if (best == nullptr || rank(p) < rank(*best)) best = &p;
  }
  return {best, std::get<0>(rank(*best)) == 0};
}

std::string describe_head_config(const HeadMatch& m) {
  return m.exact ? m.head->model + "'s published config (" + m.head->repository + ")"
                 : "none of the published configs (nearest: " + m.head->model + "'s, " +
                       m.head->repository + ")";
}

std::vector<std::string> config_differences(const head::HeadConfig& c) {
  const HeadMatch match = match_published_head(c);
  const auto mine = fields(c);
  const auto theirs = fields(match.head->config);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (mine[i].second != theirs[i].second) {
      out.push_back(std::string("head ") + mine[i].first + " " + std::to_string(mine[i].second) +
                    " (" + match.head->model + " " + std::to_string(theirs[i].second) + ")");
    }
  }
  return out;
}

}  // namespace clef::artifact
