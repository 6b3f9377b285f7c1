#include "util/digest.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "util/error.hpp"

namespace clef::util {

struct Digest::Impl {
  struct Free {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx{EVP_MD_CTX_new()};
};

Digest::Digest(Kind kind, std::uint64_t size) : impl_(std::make_unique<Impl>()) {
  const EVP_MD* md = kind == Kind::sha256 ? EVP_sha256() : EVP_sha1();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx.get(), md, nullptr) != 1) {
    throw Error(ErrorKind::internal, "internal", "OpenSSL digest initialisation failed");
  }
  if (kind == Kind::git_blob_sha1) {
    const std::string header = "blob " + std::to_string(size);
    update({header.data(), header.size() + 1});  // with the terminating NUL
  }
}

Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::update(std::span<const char> bytes) {
  if (!bytes.empty()) EVP_DigestUpdate(impl_->ctx.get(), bytes.data(), bytes.size());
}

std::string Digest::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(impl_->ctx.get(), md, &n);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (unsigned int i = 0; i < n; ++i) {
    s += kHex[md[i] >> 4];
    s += kHex[md[i] & 15];
  }
  return s;
}

void digest_file(Digest& digest, const std::filesystem::path& path, std::uint64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw model_error("cannot read " + path.string());
  std::vector<char> buf(std::size_t{1} << 20);
  while (bytes > 0) {
    const auto k = static_cast<std::streamsize>(std::min<std::uint64_t>(buf.size(), bytes));
    if (!in.read(buf.data(), k)) throw model_error("cannot read " + path.string());
    digest.update({buf.data(), static_cast<std::size_t>(k)});
    bytes -= static_cast<std::uint64_t>(k);
  }
}

std::string sha256_file(const std::filesystem::path& path) {
  Digest d(Digest::Kind::sha256);
  digest_file(d, path, std::filesystem::file_size(path));
  return d.hex();
}

}  // namespace clef::util
