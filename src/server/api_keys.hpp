#pragma once
// API keys (`clef serve --api-key KEY`, `--api-key-file FILE`): which keys the server accepts,
// under which names, and the check of a request's credentials. Keys are kept only as SHA-256
// digests and compared in constant time; logs and metrics name a key, never show it.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clef::server {

/// One accepted key.
struct ApiKey {
  std::string name;  ///< for logs and metrics: [A-Za-z0-9._-], 1..64 characters
  std::string key;   ///< the secret: printable ASCII without spaces, 1..1024 characters
};

/// The keys of an --api-key-file's text: one a line, `NAME KEY` (separated by spaces or tabs) or
/// a bare `KEY` (then named "line-N" after its line number); `#` starts a comment line; blank
/// lines and the spaces around a line are ignored, and so is a UTF-8 byte order mark. A single
/// field holding ':' is refused as ambiguous (the old `name:key` form, or a key with a colon):
/// no part of a key ever becomes a name.
/// Throws clef::Error (invalid_request, param "api-key-file") naming `file` and the line for a
/// malformed line, a name used twice, or (unless `may_be_empty`) a file without any key.
std::vector<ApiKey> parse_api_key_file(std::string_view text, std::string_view file,
                                       bool may_be_empty = false);

/// What a request presents as its API key.
struct PresentedKey {
  std::string key;  ///< "" when it carries none
  /// Why the credentials cannot be used ("" when they can): 400 for a header given twice or
  /// Authorization and X-API-Key with different keys; 401 for an Authorization of another scheme
  /// than Bearer without an X-API-Key.
  std::string problem;
  int status = 0;  ///< 400 or 401 with a problem
};

/// The key a request presents: `Authorization: Bearer KEY` (scheme case-insensitive, RFC 6750
/// section 2.1) or `X-API-Key: KEY` (each header's values as received; both may be sent with the
/// same key).
PresentedKey presented_key(const std::vector<std::string>& authorization,
                           const std::vector<std::string>& x_api_key);

/// The accepted keys of a server. Thread-safe: match() may run on any HTTP thread while reload()
/// replaces the set whole (requests in flight keep the set they were checked against).
class ApiKeys {
 public:
  /// `flag_keys` (--api-key, named "key-1", "key-2", ... in order) plus the keys of `file`
  /// (--api-key-file, "" for none), read now. Throws clef::Error (invalid_request) naming the
  /// flag for a key that is not printable ASCII without spaces, and as parse_api_key_file for
  /// the file (also when it cannot be read).
  ApiKeys(const std::vector<std::string>& flag_keys, std::string file);

  /// True when any key is set: every endpoint but the public ones needs one.
  bool enabled() const;
  /// How many keys are accepted now.
  std::size_t size() const;
  /// Their names, comma-separated, in order (for the log): the first `most`, then "and N more".
  std::string names(std::size_t most = 20) const;
  /// The name of the key `presented` is, nullopt when it is none of them (also for ""). Every
  /// accepted key is compared, each in constant time over its SHA-256 digest.
  std::optional<std::string> match(std::string_view presented) const;
  /// Re-reads the file (SIGHUP); the flags' keys stay. "" when the new set is in place, else why
  /// not (the old set stays). Does nothing without a file.
  std::string reload();
  /// The file given at construction ("" for none).
  const std::string& file() const { return file_; }

 private:
  struct Entry {
    std::string name;
    std::string digest;  ///< SHA-256 hex of the key
  };
  using Set = std::vector<Entry>;

  /// The flags' entries followed by the file's (read now).
  std::shared_ptr<const Set> load() const;

  Set flag_entries_;  ///< --api-key, digested
  std::string file_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Set> set_;
};

}  // namespace clef::server
