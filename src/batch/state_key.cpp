#include "batch/state_key.hpp"

#include "json/render.hpp"
#include "util/digest.hpp"

namespace clef::batch {

std::string state_key(const json::Value& request) {
  const json::Value* state = request.find("state");
  if (state == nullptr) return "";
  util::Digest d(util::Digest::Kind::sha256);
  const std::string rendered = json::render(*state);
  d.update(rendered);
  if (const json::Value* images = request.find("images"); images != nullptr && images->is_array()) {
    for (const json::Value& image : images->items()) {
      d.update(std::string_view("\n"));
      if (image.is_string()) d.update(image.as_string());
    }
  }
  return d.hex().substr(0, 32);
}

}  // namespace clef::batch
