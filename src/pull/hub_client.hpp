#pragma once
// clef::pull::HubClient: the few requests `clef pull` makes to a Hugging Face-style hub, over
// cpp-httplib (HTTPS through OpenSSL), following redirects (the hub sends LFS files to a CDN):
//   GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=true   (paginated by Link: next)
//   GET {endpoint}/{repo}/resolve/{revision}/{path}                   (Range: bytes=N- to resume)
// A token from the environment variable HF_TOKEN, when set, is sent as "Authorization: Bearer".

#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "pull/hub_files.hpp"

namespace clef::pull {

class HubClient {
 public:
  /// `endpoint`: "https://huggingface.co", "http://127.0.0.1:8080", optionally with a path prefix
  /// ("https://mirror.example/hf"). Throws clef::Error (invalid_request, param "endpoint") for a
  /// URL that is not http(s)://host[:port][/path].
  explicit HubClient(const std::string& endpoint, std::string revision = "main");
  ~HubClient();
  HubClient(const HubClient&) = delete;
  HubClient& operator=(const HubClient&) = delete;

  /// Every file of `repo`. Throws clef::Error: model_error when the repository does not exist
  /// (404) or the listing is malformed, unavailable (code "hub_unreachable") on network failure.
  std::vector<HubFile> list_files(const std::string& repo);

  /// The first `n` bytes of `file` (fewer if the file is shorter). Throws like list_files.
  std::string read_prefix(const std::string& repo, const HubFile& file, std::uint64_t n);

  /// Downloads `file` to `dest`, through `dest` + ".part": an existing .part is resumed with an
  /// HTTP Range request, and a dropped connection is resumed the same way (up to 5 attempts). The
  /// result is verified against the hub's size and sha256 (LFS) or git blob sha1 before it is
  /// renamed to `dest`; a mismatch removes the .part and throws model_error naming both digests.
  /// An existing `dest` that verifies is kept ("already there"). Progress goes to `progress`.
  void download(const std::string& repo, const HubFile& file, const std::filesystem::path& dest,
                std::ostream& progress);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Verifies `path` against `file` (size, then sha256 or git blob sha1; a file with neither
/// digest is checked by size only). Returns an empty string when it matches, else the reason.
std::string verify_file(const std::filesystem::path& path, const HubFile& file);

}  // namespace clef::pull
