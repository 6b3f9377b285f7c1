#include "media/image_source.hpp"

#include <cctype>
#include <fstream>
#include <iterator>
#include <vector>

#include "media/base64.hpp"
#include "media/data_uri.hpp"
#include "media/decode.hpp"
#include "media/errors.hpp"

namespace clef::media {

SourceKind source_kind(std::string_view source) noexcept {
  const auto starts_with_ci = [&](std::string_view prefix) {
    if (source.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(source[i])) != prefix[i]) return false;
    }
    return true;
  };
  if (starts_with_ci("data:")) return SourceKind::data_uri;
  if (starts_with_ci("http://") || starts_with_ci("https://")) return SourceKind::url;
  return SourceKind::other;
}

std::vector<std::uint8_t> load_request_bytes(std::string_view source,
                                             const ImageSourcePolicy& policy,
                                             const std::string& param) {
  const SourceKind kind = source_kind(source);
  if (kind == SourceKind::data_uri) return parse_data_uri(source, policy.limits, param).bytes;
  if (kind == SourceKind::url) {
    if (!policy.allow_urls) {
      // 422 with a stable code: well formed, but this server does not fetch (another may).
      throw Error(
          ErrorKind::unprocessable, "image_urls_disabled",
          param +
              ": image URLs are not enabled on this server (it must be started with "
              "--allow-media-urls, formerly --allow-image-urls); send the image as a data URI",
          param);
    }
    UrlFetchPolicy url = policy.url;
    url.max_bytes = std::min(url.max_bytes, policy.limits.max_encoded_bytes);
    return fetch_media_url(source, url, param);
  }
  throw invalid_request(param +
                            ": an image must be a data URI (data:image/png|jpeg|webp;base64,...) "
                            "or, where the server allows it, an http(s) URL",
                        param);
}

RgbImage load_request_image(std::string_view source, const ImageSourcePolicy& policy,
                            const std::string& param) {
  return decode_image(load_request_bytes(source, policy, param), policy.limits, param);
}

std::string image_file_data_uri(const std::filesystem::path& path, const DecodeLimits& limits,
                                const std::string& param) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw invalid_request("cannot read image file '" + path.string() + "'", param);
  if (size > limits.max_encoded_bytes) {
    throw media::kImageMedia.too_large("image file '" + path.string() + "' is " +
                                           std::to_string(size) + " bytes; the limit is " +
                                           std::to_string(limits.max_encoded_bytes),
                                       param);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_request("cannot read image file '" + path.string() + "'", param);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  const auto format = sniff_image_format(bytes);
  if (!format) {
    throw media::kImageMedia.unsupported(
        "image file '" + path.string() + "' is not a PNG, JPEG or WebP image", param);
  }
  const char* media = *format == ImageFormat::png    ? "image/png"
                      : *format == ImageFormat::jpeg ? "image/jpeg"
                                                     : "image/webp";
  return std::string("data:") + media + ";base64," + encode_base64(bytes);
}

}  // namespace clef::media
