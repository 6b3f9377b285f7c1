#pragma once
// Where a request image comes from: a data URI, an http(s) URL (only when the engine allows
// URLs), or, for `clef ask --image`, a local file turned into a data URI by the CLI.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "media/image.hpp"
#include "media/image_url.hpp"
#include "media/limits.hpp"

namespace clef::media {

/// What request images may be and how large.
struct ImageSourcePolicy {
  bool allow_urls = false;  ///< http(s) URLs are fetched only when true (server --allow-image-urls)
  UrlFetchPolicy url;       ///< limits of URL fetching
  DecodeLimits limits;      ///< encoded size and pixel limits of every image
};

/// What a request media string is: a data URI ("data:", any case), an http(s) URL, or neither.
enum class SourceKind { data_uri, url, other };
SourceKind source_kind(std::string_view source) noexcept;

/// The encoded bytes of request image `source`: a data URI's payload (parse_data_uri: media type
/// image/png|jpeg|webp else 415, size limit 413), or an allowed URL's body; refusals as
/// load_request_image. Nothing is decoded.
std::vector<std::uint8_t> load_request_bytes(std::string_view source,
                                             const ImageSourcePolicy& policy,
                                             const std::string& param);

/// load_request_bytes then decode_image: request image `source` as RGB (decode_image: Pillow's RGB
/// with EXIF orientation). `data:image/png|jpeg|webp;base64,...` is decoded; `http://` / `https://`
/// is fetched with fetch_media_url when policy.allow_urls, else refused (400) before any network
/// access; anything else (file paths, other schemes) is a 400 naming the accepted forms. Errors are
/// clef::Error naming `param` (e.g. "images.0"): 400 bad URI / URL / image, 413 too large, 415
/// other formats.
RgbImage load_request_image(std::string_view source, const ImageSourcePolicy& policy,
                            const std::string& param);

/// A data URI of the image file at `path` for `clef ask --image`: the media type comes from the
/// file's bytes (PNG, JPEG or WebP, else 415). Throws clef::Error (400 unreadable file, 413 over
/// limits.max_encoded_bytes) naming `param`.
std::string image_file_data_uri(const std::filesystem::path& path, const DecodeLimits& limits,
                                const std::string& param);

}  // namespace clef::media
