#pragma once
// How long one connection may take at each stage, in seconds: what `clef serve`'s --*-timeout
// flags set (server::ServerConfig) and the connection loop enforces (ConnectionLimits), one
// struct from the flag to the socket.

namespace clef::transport {

struct ConnectionTimeouts {
  int read_s = 10;       ///< one read() may wait this long (--read-timeout)
  int write_s = 10;      ///< one write() may wait this long (--write-timeout)
  int keep_alive_s = 5;  ///< idle time before the next request's first byte (--keep-alive-timeout)
  /// First byte of a request -> its headers complete, else 408 and close (--header-timeout): a
  /// client sending headers slowly holds a connection at most this long.
  int header_s = 10;
  int body_s = 30;  ///< headers complete -> body read; reads fail afterwards (--body-timeout)
};

}  // namespace clef::transport
