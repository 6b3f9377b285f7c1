#pragma once
// clef::Error: the one exception type that crosses module boundaries for bad input or unusable
// models. It carries what the server needs to answer (HTTP status, machine-readable code, the
// request field at fault) and a message a person can act on.

#include <stdexcept>
#include <string>

namespace clef {

/// Error kinds, mapped to HTTP statuses by the server (see status()).
enum class ErrorKind {
  invalid_request,         ///< 400: malformed JSON, wrong field types, bad values
  payload_too_large,       ///< 413: body/record/image over a configured limit
  unsupported_media_type,  ///< 415: not JSON, image format not supported
  unprocessable,           ///< 422: well-formed but cannot be decided (reserved)
  overloaded,              ///< 429: queue full
  unavailable,             ///< 503: model not loaded / shutting down
  model_error,             ///< model files clef cannot use (CLI exit code 2)
  internal,                ///< 500: a real fault in clef
};

/// Thrown for any input clef refuses. `param` is the dotted field path
/// (e.g. "questions.urgency.criteria"), empty when no single field is at fault.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string code, std::string message, std::string param = {})
      : std::runtime_error(std::move(message)),
        kind_(kind),
        code_(std::move(code)),
        param_(std::move(param)) {}

  ErrorKind kind() const noexcept { return kind_; }
  /// Machine-readable code, e.g. "invalid_request", "context_length_exceeded".
  const std::string& code() const noexcept { return code_; }
  /// Dotted path of the field at fault, or empty.
  const std::string& param() const noexcept { return param_; }
  /// HTTP status for this kind (400, 413, 415, 422, 429, 503, 500).
  int status() const noexcept {
    switch (kind_) {
      case ErrorKind::invalid_request:
        return 400;
      case ErrorKind::payload_too_large:
        return 413;
      case ErrorKind::unsupported_media_type:
        return 415;
      case ErrorKind::unprocessable:
        return 422;
      case ErrorKind::overloaded:
        return 429;
      case ErrorKind::unavailable:
        return 503;
      case ErrorKind::model_error:
        return 500;
      case ErrorKind::internal:
        return 500;
    }
    return 500;
  }

 private:
  ErrorKind kind_;
  std::string code_;
  std::string param_;
};

/// A decision stopped because whoever asked for it no longer wants the answer (the client closed
/// its connection). Code "client_closed_request"; callers recognise it by type, not by code.
class DecisionCancelled : public Error {
 public:
  explicit DecisionCancelled(std::string message)
      : Error(ErrorKind::invalid_request, "client_closed_request", std::move(message)) {}
};

/// Shorthand for a 400 invalid_request error naming `param`.
inline Error invalid_request(std::string message, std::string param = {}) {
  return Error(ErrorKind::invalid_request, "invalid_request", std::move(message), std::move(param));
}

/// Shorthand for a model file clef cannot use.
inline Error model_error(std::string message) {
  return Error(ErrorKind::model_error, "model_error", std::move(message));
}

}  // namespace clef
