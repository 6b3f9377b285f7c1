#pragma once
// HTTPS for `clef serve --ssl-cert-file F --ssl-key-file K`: the certificate and key loaded and
// checked once at start (OpenSSL, the library clef's HTTP clients already use), and one TLS
// session per accepted connection, which the connection loop reads and writes instead of the bare
// socket (connection_loop.hpp).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <sys/types.h>

namespace clef::transport {

/// Where a non-blocking TLS operation stands.
enum class TlsStep {
  done,        ///< finished
  want_read,   ///< waits for the socket to be readable
  want_write,  ///< waits for the socket to be writable
  failed,      ///< not TLS, a protocol error, the peer gone
};

/// One TLS connection over an accepted socket, which it switches to non-blocking (the socket
/// stays the caller's). Every call waits at most the time it is given, so a peer that sends a
/// record a byte at a time cannot hold the caller past its deadline. Move-only; one thread at a
/// time.
class TlsSession {
 public:
  /// read()/peek() found no whole record within the time given.
  static constexpr ssize_t kTimedOut = -2;

  ~TlsSession();
  TlsSession(TlsSession&&) noexcept;
  TlsSession& operator=(TlsSession&&) noexcept;

  /// One step of the server handshake (TLS 1.2 or 1.3), never waiting.
  TlsStep handshake();
  /// SSL_read of up to `size` bytes, waiting at most `wait_ms` in all: > 0 bytes read, 0 the peer
  /// closed (close_notify or EOF), -1 an error, kTimedOut.
  ssize_t read(char* data, std::size_t size, int wait_ms);
  /// Up to `size` decrypted bytes left unread (SSL_peek), never waiting: > 0, 0 the peer closed,
  /// -1 an error, kTimedOut when no whole record is there yet.
  ssize_t peek(char* data, std::size_t size);
  /// SSL_write of all `size` bytes, each stall waiting at most `wait_ms`: `size`, or -1.
  ssize_t write(const char* data, std::size_t size, int wait_ms);
  /// Decrypted bytes OpenSSL holds that the socket no longer shows as readable (SSL_pending);
  /// at least 1 when it holds bytes of a record not decrypted yet (SSL_has_pending).
  std::size_t pending() const;
  /// Sends close_notify (best effort; no wait for the peer's).
  void close_notify();

 private:
  friend class TlsContext;
  struct Impl;
  explicit TlsSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// clef's TLS 1.2 suites by default: forward secrecy (ECDHE) and authenticated encryption (GCM,
/// ChaCha20-Poly1305) only, as Mozilla's "intermediate" profile; no CBC, no static RSA key
/// exchange.
inline constexpr std::string_view kForwardSecretAeadCiphers = "ECDHE+AESGCM:ECDHE+CHACHA20";

/// The server's certificate chain and private key. Thread-safe after construction: sessions for
/// many connections may be made at once.
class TlsContext {
 public:
  /// Loads the PEM certificate chain `cert_file` and private key `key_file`; TLS 1.2 offers the
  /// OpenSSL cipher list `tls12_ciphers` (TLS 1.3's suites are all ECDHE + AEAD and stay as they
  /// are). Throws clef::Error (invalid_request, param "ssl-cert-file", "ssl-key-file" or
  /// "ssl-ciphers") naming the file when it is missing, unreadable, not a PEM certificate / key,
  /// or when the key is not the certificate's, and for a cipher list OpenSSL matches no suite of.
  TlsContext(const std::string& cert_file, const std::string& key_file,
             const std::string& tls12_ciphers = std::string(kForwardSecretAeadCiphers));
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// A server session on the accepted socket `fd`, made non-blocking; the handshake is still to
  /// do (TlsSession::handshake). nullptr when OpenSSL cannot make one.
  std::unique_ptr<TlsSession> session(int fd) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clef::transport
