#pragma once
// Streaming digests: SHA-256 (downloads of Git LFS files against the hub's `lfs.oid`; the state
// cache's image keys) and the git blob SHA-1 (small files stored in git, the hub's `oid`:
// sha1("blob " + size + "\0" + content)). OpenSSL EVP underneath.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace clef::util {

/// An incremental digest.
class Digest {
 public:
  enum class Kind { sha256, git_blob_sha1 };
  /// For git_blob_sha1, `size` is the blob's full size (it goes into the header first).
  Digest(Kind kind, std::uint64_t size = 0);
  ~Digest();
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;

  void update(std::span<const char> bytes);
  /// Lower-case hex of the digest; the object cannot be updated afterwards.
  std::string hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Feeds the first `bytes` bytes of `path` into `digest`. Throws clef::Error (model_error) if the
/// file is shorter or unreadable.
void digest_file(Digest& digest, const std::filesystem::path& path, std::uint64_t bytes);

/// Lower-case hex SHA-256 of the whole file at `path`. Throws like digest_file.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace clef::util
