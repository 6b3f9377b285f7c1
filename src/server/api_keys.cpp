#include "server/api_keys.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "server/http_exchange.hpp"
#include "util/digest.hpp"
#include "util/error.hpp"

namespace clef::server {

namespace {

/// The most an --api-key-file may hold (about 40,000 keys of 100 bytes).
constexpr std::size_t kMaxKeyFileBytes = 4u << 20;

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool valid_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

/// Printable ASCII without spaces (what a header value carries unchanged), 1..1024 characters.
bool valid_key(std::string_view key) {
  return !key.empty() && key.size() <= 1024 &&
         std::all_of(key.begin(), key.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

std::string sha256_hex(std::string_view text) {
  util::Digest digest(util::Digest::Kind::sha256);
  digest.update(std::span<const char>(text.data(), text.size()));
  return digest.hex();
}

/// a == b over two digests of equal length, in time independent of where they differ.
bool same_digest(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

Error file_error(std::string_view file, std::string message) {
  std::string text = "--api-key-file ";
  text.append(file).append(": ").append(message);
  return invalid_request(std::move(text), "api-key-file");
}

}  // namespace

std::vector<ApiKey> parse_api_key_file(std::string_view text, std::string_view file,
                                       bool may_be_empty) {
  std::vector<ApiKey> keys;
  std::set<std::string, std::less<>> names;
  int number = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  for (std::size_t pos = 0; pos <= text.size();) {
    ++number;
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty() || line.front() == '#') continue;
    const std::string where = "line " + std::to_string(number);
    ApiKey entry;
    // NAME KEY (two fields) or a bare KEY. A single field holding ':' is refused: it may be the
    // old `name:key` form or a key with a colon, and guessing would log half a secret as a name.
    const std::size_t gap = line.find_first_of(" \t");
    if (gap != std::string_view::npos) {
      entry.name = std::string(line.substr(0, gap));
      entry.key = std::string(trim(line.substr(gap + 1)));
      if (!valid_name(entry.name)) {
        throw file_error(file, where +
                                   ": a key's name is 1 to 64 of A-Z a-z 0-9 . _ - (the "
                                   "form is NAME KEY, or a bare KEY)");
      }
    } else if (line.find(':') != std::string_view::npos) {
      throw file_error(file, where +
                                 ": a single field with ':' is ambiguous (the old name:key "
                                 "form, or a key holding ':'); write NAME KEY with a space "
                                 "between (a key may hold ':')");
    } else {
      entry.name = "line-" + std::to_string(number);
      entry.key = std::string(line);
    }
    if (!valid_key(entry.key)) {
      throw file_error(file, where +
                                 ": a key is 1 to 1024 printable ASCII characters without "
                                 "spaces");
    }
    if (!names.insert(entry.name).second) {
      throw file_error(file, where + ": the name '" + entry.name +
                                 "' is used twice (a bare key is named line-N after its line)");
    }
    keys.push_back(std::move(entry));
  }
  if (keys.empty() && !may_be_empty) {
    throw file_error(file, "holds no key (one a line, NAME KEY or a bare KEY)");
  }
  return keys;
}

PresentedKey presented_key(const std::vector<std::string>& authorization,
                           const std::vector<std::string>& x_api_key) {
  PresentedKey out;
  auto refuse = [&out](int status, std::string problem) {
    out.key.clear();
    out.status = status;
    out.problem = std::move(problem);
    return out;
  };
  // RFC 6750 section 3.1: more than one way of sending the token is an invalid request.
  if (authorization.size() > 1)
    return refuse(400, "the request has more than one Authorization header");
  if (x_api_key.size() > 1) return refuse(400, "the request has more than one X-API-Key header");
  const std::string header = x_api_key.empty() ? "" : std::string(trim(x_api_key.front()));
  std::string bearer;
  if (!authorization.empty()) {
    const std::string_view auth = trim(authorization.front());
    const std::size_t space = auth.find(' ');
    const std::string_view scheme = auth.substr(0, space);
    if (!same_name(scheme, "Bearer") && header.empty()) {
      // Another scheme (Basic, for a gateway) is fine beside X-API-Key; alone it is no key.
      // Nothing of the header is echoed: without a scheme, its first word is the key itself.
      return refuse(401,
                    "Authorization is not of the Bearer scheme; this server takes "
                    "Authorization: Bearer KEY (or X-API-Key: KEY)");
    }
    if (same_name(scheme, "Bearer") && space != std::string_view::npos) {
      bearer = std::string(trim(auth.substr(space + 1)));
    }
  }
  if (!bearer.empty() && !header.empty() && bearer != header) {
    return refuse(400, "Authorization and X-API-Key carry different keys; send one");
  }
  out.key = bearer.empty() ? header : bearer;
  return out;
}

ApiKeys::ApiKeys(const std::vector<std::string>& flag_keys, std::string file)
    : file_(std::move(file)) {
  for (std::size_t i = 0; i < flag_keys.size(); ++i) {
    if (!valid_key(flag_keys[i])) {
      throw invalid_request(
          "--api-key: a key is 1 to 1024 printable ASCII characters without spaces", "api-key");
    }
    std::string digest = sha256_hex(flag_keys[i]);
    const bool twice = std::any_of(flag_entries_.begin(), flag_entries_.end(),
                                   [&](const Entry& e) { return e.digest == digest; });
    if (twice) throw invalid_request("--api-key: the same key is given twice", "api-key");
    flag_entries_.push_back({"key-" + std::to_string(i + 1), std::move(digest)});
  }
  set_ = load();
}

std::shared_ptr<const ApiKeys::Set> ApiKeys::load() const {
  auto set = std::make_shared<Set>(flag_entries_);
  if (file_.empty()) return set;
  std::error_code ec;
  const auto status = std::filesystem::status(file_, ec);  // follows a symlink
  if (ec || !std::filesystem::exists(status)) throw file_error(file_, "cannot be read (missing?)");
  if (!std::filesystem::is_regular_file(status)) {
    // A FIFO or a device would block the start or a SIGHUP, or never end (/dev/zero).
    throw file_error(file_, "is not a regular file (a directory, FIFO or device)");
  }
  std::ifstream in(file_, std::ios::binary);
  if (!in) throw file_error(file_, "cannot be read (no permission?)");
  std::string text(kMaxKeyFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw file_error(file_, "cannot be read");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxKeyFileBytes) {
    throw file_error(file_, "is larger than " + std::to_string(kMaxKeyFileBytes >> 20) + " MiB");
  }
  // With --api-key keys an empty file is fine: it revokes every key it held.
  const bool may_be_empty = !flag_entries_.empty();
  std::map<std::string, std::string, std::less<>> names;    // name -> where from
  std::map<std::string, std::string, std::less<>> digests;  // digest -> name
  for (const Entry& e : flag_entries_) {
    names.emplace(e.name, "--api-key");
    digests.emplace(e.digest, e.name);
  }
  for (ApiKey& key : parse_api_key_file(text, file_, may_be_empty)) {
    if (names.count(key.name) != 0) {
      throw file_error(file_, "the name '" + key.name + "' is also an --api-key's");
    }
    Entry entry{std::move(key.name), sha256_hex(key.key)};
    if (const auto same = digests.find(entry.digest); same != digests.end()) {
      throw file_error(file_, "the key named '" + entry.name + "' is also '" + same->second +
                                  "' (one key, one name: metrics and logs could not tell them "
                                  "apart)");
    }
    names.emplace(entry.name, file_);
    digests.emplace(entry.digest, entry.name);
    set->push_back(std::move(entry));
  }
  return set;
}

bool ApiKeys::enabled() const {
  return size() > 0;
}

std::size_t ApiKeys::size() const {
  std::lock_guard lock(mutex_);
  return set_->size();
}

std::string ApiKeys::names(std::size_t most) const {
  std::shared_ptr<const Set> set;
  {
    std::lock_guard lock(mutex_);
    set = set_;
  }
  std::string out;
  for (std::size_t i = 0; i < set->size() && i < most; ++i) {
    if (!out.empty()) out += ", ";
    out += (*set)[i].name;
  }
  if (set->size() > most) out += " and " + std::to_string(set->size() - most) + " more";
  return out;
}

std::optional<std::string> ApiKeys::match(std::string_view presented) const {
  if (presented.empty()) return std::nullopt;
  std::shared_ptr<const Set> set;
  {
    std::lock_guard lock(mutex_);
    set = set_;
  }
  const std::string digest = sha256_hex(presented);
  const Entry* found = nullptr;
  for (const Entry& entry : *set) {  // no early exit: the time does not say which key matched
    if (same_digest(digest, entry.digest) && found == nullptr) found = &entry;
  }
  if (found == nullptr) return std::nullopt;
  return found->name;
}

std::string ApiKeys::reload() {
  if (file_.empty()) return "";
  try {
    std::shared_ptr<const Set> set = load();
    std::lock_guard lock(mutex_);
    set_ = std::move(set);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace clef::server
