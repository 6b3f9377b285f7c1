#pragma once
// The JSON error answer: {"error": {"message", "type", "code", "param"}, "detail": message} with
// its HTTP status (OpenAI-style error object; `param` is the dotted request field at fault or
// null; `detail`, the same message, is where FastAPI-style clients such as TypeSafe's n8n node
// read it).

#include <string>

#include "util/error.hpp"

namespace clef::server {

/// One error answer, before serialization.
struct ErrorReply {
  int status = 500;
  std::string type;     ///< "invalid_request_error", "not_found_error", "server_error", ...
  std::string code;     ///< machine-readable: "invalid_json", "queue_full", ...
  std::string message;  ///< for a person
  std::string param;    ///< field at fault; empty -> null

  /// The answer for a clef::Error: its status(), code(), what(), param(); type from its kind.
  /// Except: code "context_length_exceeded" is always 413 (invalid_request_error), whichever
  /// part of the request (schema, text, images) overflowed the served context.
  static ErrorReply from(const Error& error);
  /// 404 for a path no endpoint serves.
  static ErrorReply not_found(const std::string& method, const std::string& path);
  /// 405 for a known path asked with another method; `allowed` e.g. "POST".
  static ErrorReply method_not_allowed(const std::string& method, const std::string& path,
                                       const std::string& allowed);
  /// The answer for a status httplib produced itself (bad request line, body read failure ...).
  static ErrorReply for_status(int status);
  /// `status` (429 or 503) for a request no HTTP worker could take in time: overloaded_error,
  /// code "server_busy".
  static ErrorReply busy(int status);
  /// 500 for a fault inside clef; the message names the request id to look up in the log.
  static ErrorReply internal(const std::string& request_id);

  /// {"error":{"message":...,"type":...,"code":...,"param":...},"detail":message} (keys in this
  /// order).
  std::string body() const;
};

/// OpenAI-style error type for an error kind: invalid_request_error (400/413/415/422),
/// overloaded_error (429), unavailable_error (503), server_error (500).
const char* error_type(ErrorKind kind) noexcept;

}  // namespace clef::server
