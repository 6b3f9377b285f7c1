#include "transport/tls_context.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>

#include "util/error.hpp"

namespace clef::transport {

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
  struct stat info {};
  if (::stat(file.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    throw file_error(flag, file, "is a directory, not a PEM file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw file_error(flag, file, "cannot be read (missing or no permission)");
}

/// OpenSSL's passphrase callback: none is ever given, so an encrypted key fails at once instead of
/// OpenSSL asking for one on the terminal.
int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) {
  return 0;
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
  int fd = -1;
};

TlsSession::TlsSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsSession::~TlsSession() = default;
TlsSession::TlsSession(TlsSession&&) noexcept = default;
TlsSession& TlsSession::operator=(TlsSession&&) noexcept = default;

namespace {

/// Time left until `until`, ms, rounded up (0 when it passed).
int left_ms(std::chrono::steady_clock::time_point until) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<long long>(left.count(), 0));
}

/// Waits up to `ms` for the socket to show what `step` wants; false on a timeout or an error.
bool await(int fd, TlsStep step, int ms) {
  if (ms <= 0) return false;
  pollfd p{fd, static_cast<short>(step == TlsStep::want_write ? POLLOUT : POLLIN), 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, ms);
  } while (ready < 0 && errno == EINTR);
  return ready > 0;
}

/// What SSL_get_error says of a call that returned `result`, as a step (clears the error queue).
TlsStep step_of(SSL* ssl, int result) {
  const int error = SSL_get_error(ssl, result);
  ERR_clear_error();
  if (error == SSL_ERROR_WANT_READ) return TlsStep::want_read;
  if (error == SSL_ERROR_WANT_WRITE) return TlsStep::want_write;
  return TlsStep::failed;
}

/// SSL_read or SSL_peek's result `n` as this class's: bytes, 0 the peer closed, -1, or a step to
/// wait for.
ssize_t outcome(SSL* ssl, int n, TlsStep& wait) {
  wait = TlsStep::done;
  if (n > 0) return n;
  const int saved_errno = errno;
  const int error = SSL_get_error(ssl, n);
  ERR_clear_error();
  if (error == SSL_ERROR_ZERO_RETURN) return 0;  // close_notify
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
    wait = error == SSL_ERROR_WANT_READ ? TlsStep::want_read : TlsStep::want_write;
    return TlsSession::kTimedOut;
  }
  // SSL_ERROR_SYSCALL with no errno is an EOF without close_notify: the peer is gone.
  if (error == SSL_ERROR_SYSCALL && saved_errno == 0) return 0;
  return -1;  // a reset, a protocol error
}

}  // namespace

TlsStep TlsSession::handshake() {
  const int result = SSL_accept(impl_->ssl.get());
  if (result == 1) return TlsStep::done;
  return step_of(impl_->ssl.get(), result);
}

ssize_t TlsSession::read(char* data, std::size_t size, int wait_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  const int chunk = static_cast<int>(std::min<std::size_t>(size, 1 << 30));
  while (true) {
    TlsStep wait = TlsStep::done;
    const ssize_t n = outcome(impl_->ssl.get(), SSL_read(impl_->ssl.get(), data, chunk), wait);
    if (wait == TlsStep::done) return n;
    if (!await(impl_->fd, wait, left_ms(until))) return kTimedOut;
  }
}

ssize_t TlsSession::peek(char* data, std::size_t size) {
  const int chunk = static_cast<int>(std::min<std::size_t>(size, 1 << 30));
  TlsStep wait = TlsStep::done;
  return outcome(impl_->ssl.get(), SSL_peek(impl_->ssl.get(), data, chunk), wait);
}

ssize_t TlsSession::write(const char* data, std::size_t size, int wait_ms) {
  std::size_t done = 0;
  while (done < size) {
    const int n = SSL_write(impl_->ssl.get(), data + done,
                            static_cast<int>(std::min<std::size_t>(size - done, 1 << 30)));
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    const TlsStep wait = step_of(impl_->ssl.get(), n);
    if (wait == TlsStep::failed || !await(impl_->fd, wait, wait_ms)) return -1;
  }
  return static_cast<ssize_t>(size);
}

std::size_t TlsSession::pending() const {
  const int n = SSL_pending(impl_->ssl.get());
  if (n > 0) return static_cast<std::size_t>(n);
  // Bytes of a record read from the socket but not yet decrypted count too: the socket no
  // longer shows them.
  return SSL_has_pending(impl_->ssl.get()) == 1 ? 1 : 0;
}

void TlsSession::close_notify() {
  SSL_shutdown(impl_->ssl.get());
  ERR_clear_error();
}

struct TlsContext::Impl {
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx;
};

TlsContext::TlsContext(const std::string& cert_file, const std::string& key_file,
                       const std::string& tls12_ciphers)
    : impl_(std::make_unique<Impl>()) {
  require_readable("ssl-cert-file", cert_file);
  require_readable("ssl-key-file", key_file);
  impl_->ctx.reset(SSL_CTX_new(TLS_server_method()));
  if (!impl_->ctx)
    throw Error(ErrorKind::internal, "tls", "cannot make a TLS context: " + openssl_reason());
  SSL_CTX* ctx = impl_->ctx.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (SSL_CTX_set_cipher_list(ctx, tls12_ciphers.c_str()) != 1) {
    ERR_clear_error();
    throw invalid_request("--ssl-ciphers '" + tls12_ciphers +
                              "' names no TLS 1.2 cipher suite OpenSSL knows (an OpenSSL cipher "
                              "list, e.g. the default " +
                              std::string(kForwardSecretAeadCiphers) + ")",
                          "ssl-ciphers");
  }
  SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
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

std::unique_ptr<TlsSession> TlsContext::session(int fd) const {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return nullptr;
  auto impl = std::make_unique<TlsSession::Impl>();
  impl->fd = fd;
  impl->ssl.reset(SSL_new(impl_->ctx.get()));
  if (!impl->ssl || SSL_set_fd(impl->ssl.get(), fd) != 1) {
    ERR_clear_error();
    return nullptr;
  }
  SSL_set_accept_state(impl->ssl.get());
  return std::unique_ptr<TlsSession>(new TlsSession(std::move(impl)));
}

}  // namespace clef::transport
