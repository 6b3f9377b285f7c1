#include "server/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <cerrno>
#include <fstream>

#include "util/error.hpp"

namespace clef::server {

namespace {

/// OpenSSL's reason for the last failure ("" when it gave none); clears its error queue.
std::string openssl_reason() {
  std::string reason;
  while (unsigned long code = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    reason = text;  // the last one is the most specific
  }
  return reason;
}

Error file_error(const char* flag, const std::string& file, const std::string& what) {
  std::string message = "--";
  message.append(flag).append(" ").append(file).append(": ").append(what);
  return invalid_request(std::move(message), flag);
}

void require_readable(const char* flag, const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw file_error(flag, file, "cannot be read (missing or no permission)");
}

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};

}  // namespace

struct TlsSession::Impl {
  std::unique_ptr<SSL, SslFree> ssl;
};

TlsSession::TlsSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsSession::~TlsSession() = default;
TlsSession::TlsSession(TlsSession&&) noexcept = default;
TlsSession& TlsSession::operator=(TlsSession&&) noexcept = default;

ssize_t TlsSession::read(char* data, std::size_t size) {
  while (true) {
    const int n =
        SSL_read(impl_->ssl.get(), data, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
    if (n > 0) return n;
    const int error = SSL_get_error(impl_->ssl.get(), n);
    ERR_clear_error();
    if (error == SSL_ERROR_ZERO_RETURN) return 0;  // close_notify
    if (error == SSL_ERROR_SYSCALL && errno == EINTR) continue;
    // SSL_ERROR_SYSCALL with no errno is an EOF without close_notify: the peer is gone.
    if (error == SSL_ERROR_SYSCALL && errno == 0) return 0;
    return -1;  // a timeout (SO_RCVTIMEO), a reset, a protocol error
  }
}

ssize_t TlsSession::write(const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const int n = SSL_write(impl_->ssl.get(), data + done,
                            static_cast<int>(std::min<std::size_t>(size - done, 1 << 30)));
    if (n <= 0) {
      ERR_clear_error();
      return -1;
    }
    done += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(size);
}

std::size_t TlsSession::pending() const {
  const int n = SSL_pending(impl_->ssl.get());
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

void TlsSession::close_notify() {
  SSL_shutdown(impl_->ssl.get());
  ERR_clear_error();
}

struct TlsContext::Impl {
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx;
};

TlsContext::TlsContext(const std::string& cert_file, const std::string& key_file)
    : impl_(std::make_unique<Impl>()) {
  require_readable("ssl-cert-file", cert_file);
  require_readable("ssl-key-file", key_file);
  impl_->ctx.reset(SSL_CTX_new(TLS_server_method()));
  if (!impl_->ctx)
    throw Error(ErrorKind::internal, "tls", "cannot make a TLS context: " + openssl_reason());
  SSL_CTX* ctx = impl_->ctx.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // A write may be retried with a moved buffer (the connection loop writes from its own).
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_AUTO_RETRY);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    throw file_error("ssl-cert-file", cert_file,
                     "is not a PEM certificate (" + openssl_reason() + ")");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL 3 checks the pair here already (X509_R_KEY_VALUES_MISMATCH).
    const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    if (mismatch) {
      throw file_error("ssl-key-file", key_file,
                       "is not the private key of the certificate in " + cert_file + " (" +
                           openssl_reason() + ")");
    }
    throw file_error("ssl-key-file", key_file,
                     "is not a PEM private key without a passphrase (" + openssl_reason() + ")");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    throw file_error("ssl-key-file", key_file,
                     "is not the private key of the certificate in " + cert_file + " (" +
                         openssl_reason() + ")");
  }
}

TlsContext::~TlsContext() = default;

std::unique_ptr<TlsSession> TlsContext::accept(int fd, std::chrono::milliseconds timeout) const {
  pollfd p{fd, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return nullptr;  // no ClientHello in time
  auto impl = std::make_unique<TlsSession::Impl>();
  impl->ssl.reset(SSL_new(impl_->ctx.get()));
  if (!impl->ssl || SSL_set_fd(impl->ssl.get(), fd) != 1) {
    ERR_clear_error();
    return nullptr;
  }
  // The socket blocks with SO_RCVTIMEO/SO_SNDTIMEO (the read and write timeouts), which bound a
  // handshake that stalls half way.
  if (SSL_accept(impl->ssl.get()) != 1) {
    ERR_clear_error();
    return nullptr;
  }
  return std::unique_ptr<TlsSession>(new TlsSession(std::move(impl)));
}

}  // namespace clef::server
