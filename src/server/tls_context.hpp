#pragma once
// HTTPS for `clef serve --ssl-cert-file F --ssl-key-file K`: the certificate and key loaded and
// checked once at start (OpenSSL, the library clef's HTTP clients already use), and one TLS
// session per accepted connection, which the connection loop reads and writes instead of the bare
// socket (connection_loop.hpp).

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <sys/types.h>

namespace clef::server {

/// One TLS connection over an accepted socket (the socket stays the caller's). Move-only.
class TlsSession {
 public:
  ~TlsSession();
  TlsSession(TlsSession&&) noexcept;
  TlsSession& operator=(TlsSession&&) noexcept;

  /// SSL_read: > 0 bytes read, 0 the peer closed (close_notify or EOF), -1 an error or timeout.
  ssize_t read(char* data, std::size_t size);
  /// SSL_write of all `size` bytes: `size`, or -1 on an error.
  ssize_t write(const char* data, std::size_t size);
  /// Decrypted bytes OpenSSL holds that the socket no longer shows as readable (SSL_pending).
  std::size_t pending() const;
  /// Sends close_notify (best effort; no wait for the peer's).
  void close_notify();

 private:
  friend class TlsContext;
  struct Impl;
  explicit TlsSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The server's certificate chain and private key. Thread-safe after construction: sessions for
/// many connections may be made at once.
class TlsContext {
 public:
  /// Loads the PEM certificate chain `cert_file` and private key `key_file`. Throws clef::Error
  /// (invalid_request, param "ssl-cert-file" or "ssl-key-file") naming the file when it is
  /// missing, unreadable, not a PEM certificate / key, or when the key is not the certificate's.
  TlsContext(const std::string& cert_file, const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// The TLS handshake as server on socket `fd` (TLS 1.2 or 1.3), waiting at most `timeout` for
  /// the client's first bytes; nullptr when it fails (not TLS, a timeout, the client refused our
  /// certificate).
  std::unique_ptr<TlsSession> accept(int fd, std::chrono::milliseconds timeout) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clef::server
