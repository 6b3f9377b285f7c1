#include "media/data_uri.hpp"

#include <algorithm>
#include <cctype>

#include "media/base64.hpp"
#include "media/errors.hpp"

namespace clef::media {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

DataUri split_data_uri(std::string_view uri, const MediaKind& kind, std::size_t max_bytes,
                       const std::string& param, std::string_view example) {
  const std::string w(kind.noun);
  const std::string ex(example);
  const auto invalid = [&](const std::string& message) { return kind.invalid(message, param); };
  constexpr std::string_view kScheme = "data:";
  if (uri.size() < kScheme.size() || lower(uri.substr(0, kScheme.size())) != kScheme) {
    throw invalid(w + " must be a data URI (" + ex + ")");
  }
  const std::size_t comma = uri.find(',');
  if (comma == std::string_view::npos) throw invalid(w + " data URI has no ',' before its payload");
  const std::string header = lower(uri.substr(kScheme.size(), comma - kScheme.size()));
  constexpr std::string_view kBase64 = ";base64";
  if (header.size() < kBase64.size() ||
      header.compare(header.size() - kBase64.size(), kBase64.size(), kBase64) != 0) {
    throw invalid(w + " data URI must be base64-encoded (" + ex + ")");
  }
  DataUri out;
  out.media_type = header.substr(0, header.size() - kBase64.size());
  const std::string_view payload = uri.substr(comma + 1);
  const std::size_t size = base64_decoded_size(payload);
  if (size > max_bytes) {
    throw kind.too_large(
        w + " is " + std::to_string(size) + " bytes; the limit is " + std::to_string(max_bytes),
        param);
  }
  try {
    out.bytes = decode_base64(payload);
  } catch (const Error& e) {
    throw invalid(w + " " + e.what());
  }
  return out;
}

DataUri parse_data_uri(std::string_view uri, const DecodeLimits& limits, const std::string& param) {
  // The media type is checked before the payload is decoded.
  const std::size_t comma = uri.find(',');
  if (comma != std::string_view::npos && lower(uri.substr(0, 5)) == "data:") {
    std::string header = lower(uri.substr(5, comma - 5));
    constexpr std::string_view kBase64 = ";base64";
    if (header.size() >= kBase64.size() &&
        header.compare(header.size() - kBase64.size(), kBase64.size(), kBase64) == 0) {
      const std::string media = header.substr(0, header.size() - kBase64.size());
      if (media != "image/png" && media != "image/jpeg" && media != "image/webp") {
        throw media::kImageMedia.unsupported(
            "image media type '" + media +
                "' is not supported; use image/png, image/jpeg or image/webp",
            param);
      }
    }
  }
  return split_data_uri(uri, kImageMedia, limits.max_encoded_bytes, param,
                        "data:image/png;base64,...");
}

}  // namespace clef::media
