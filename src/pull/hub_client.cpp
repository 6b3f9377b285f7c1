#include "pull/hub_client.hpp"

#include <httplib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>

#include "pull/progress.hpp"
#include "util/digest.hpp"
#include "util/error.hpp"
#include "util/http_url.hpp"

namespace clef::pull {

namespace {

constexpr int kAttempts = 5;

Error unreachable(const std::string& message) {
  return Error(ErrorKind::unavailable, "hub_unreachable", message);
}

/// Percent-encodes one path segment (RFC 3986 unreserved characters kept).
std::string encode_segment(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

/// "a/b c/d" -> "a/b%20c/d".
std::string encode_path(std::string_view path) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const auto slash = path.find('/', start);
    out += encode_segment(path.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    out += '/';
    start = slash + 1;
  }
  return out;
}

/// The `rel="next"` URL of a Link header, or "".
std::string next_link(const std::string& link) {
  static const std::regex re(R"(<([^>]+)>\s*;\s*rel="?next"?)");
  std::smatch m;
  return std::regex_search(link, m, re) ? m[1].str() : std::string();
}

std::string describe(const httplib::Result& r) {
  if (!r) return httplib::to_string(r.error());
  return "HTTP " + std::to_string(r->status);
}

}  // namespace

struct HubClient::Impl {
  std::string origin;  ///< scheme://host[:port]
  std::string base;    ///< path prefix, no trailing slash
  std::string revision;
  httplib::Headers auth;
  std::unique_ptr<httplib::Client> client;

  httplib::Headers headers(httplib::Headers extra = {}) const {
    for (const auto& h : auth) extra.insert(h);
    return extra;
  }

  std::string file_url(const std::string& repo, const HubFile& f) const {
    return base + "/" + repo + "/resolve/" + encode_segment(revision) + "/" + encode_path(f.path);
  }
};

HubClient::HubClient(const std::string& endpoint, std::string revision)
    : impl_(std::make_unique<Impl>()) {
  const util::HttpUrl url = util::parse_http_url(endpoint, "endpoint");
  impl_->origin = url.origin();
  impl_->base = url.path;
  while (!impl_->base.empty() && impl_->base.back() == '/') impl_->base.pop_back();
  impl_->revision = std::move(revision);
  if (const char* token = std::getenv("HF_TOKEN"); token != nullptr && *token != '\0') {
    impl_->auth.emplace("Authorization", std::string("Bearer ") + token);
  }
  impl_->client = std::make_unique<httplib::Client>(impl_->origin);
  if (!impl_->client->is_valid()) {
    throw invalid_request("cannot make an HTTP client for " + endpoint, "endpoint");
  }
  impl_->client->set_follow_location(true);
  impl_->client->set_connection_timeout(30, 0);
  impl_->client->set_read_timeout(60, 0);
  impl_->client->set_keep_alive(true);
}

HubClient::~HubClient() = default;

std::vector<HubFile> HubClient::list_files(const std::string& repo) {
  std::vector<HubFile> out;
  std::string url = impl_->base + "/api/models/" + repo + "/tree/" +
                    encode_segment(impl_->revision) + "?recursive=true";
  for (int page = 0; !url.empty(); ++page) {
    if (page > 1000) throw model_error("the hub's file listing of " + repo + " never ends");
    const auto r = impl_->client->Get(url, impl_->headers());
    if (!r) throw unreachable("cannot reach " + impl_->origin + ": " + describe(r));
    if (r->status == 404 || r->status == 401) {
      throw model_error("repository " + repo + " (revision " + impl_->revision + ") not found on " +
                        impl_->origin + " (" + describe(r) +
                        "; a private or gated repository needs HF_TOKEN)");
    }
    if (r->status != 200) {
      throw unreachable("listing " + repo + " on " + impl_->origin + " failed: " + describe(r));
    }
    auto files = parse_tree_listing(r->body);
    out.insert(out.end(), files.begin(), files.end());
    url = next_link(r->get_header_value("Link"));
    if (url.starts_with(impl_->origin)) url = url.substr(impl_->origin.size());
    if (!url.empty() && !url.starts_with("/")) {
      throw model_error("the hub's next listing page is on another host: " + url);
    }
  }
  return out;
}

std::string HubClient::read_prefix(const std::string& repo, const HubFile& file, std::uint64_t n) {
  if (n == 0) return {};
  const auto r = impl_->client->Get(
      impl_->file_url(repo, file), impl_->headers({{"Range", "bytes=0-" + std::to_string(n - 1)}}));
  if (!r) throw unreachable("cannot read " + file.path + ": " + describe(r));
  if (r->status != 206 && r->status != 200) {
    throw model_error("cannot read " + repo + "/" + file.path + ": " + describe(r));
  }
  std::string body = r->body;
  if (body.size() > n) body.resize(n);
  return body;
}

std::string verify_file(const std::filesystem::path& path, const HubFile& file) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return "cannot read " + path.string();
  if (size != file.size) {
    return "size " + std::to_string(size) + " bytes, the hub says " + std::to_string(file.size);
  }
  if (file.sha256) {
    util::Digest d(util::Digest::Kind::sha256);
    util::digest_file(d, path, size);
    const std::string got = d.hex();
    if (got != *file.sha256) return "sha256 " + got + ", the hub says " + *file.sha256;
  } else if (!file.git_oid.empty()) {
    util::Digest d(util::Digest::Kind::git_blob_sha1, size);
    util::digest_file(d, path, size);
    const std::string got = d.hex();
    if (got != file.git_oid) return "git blob sha1 " + got + ", the hub says " + file.git_oid;
  }
  return {};
}

void HubClient::download(const std::string& repo, const HubFile& file,
                         const std::filesystem::path& dest, std::ostream& progress) {
  ProgressBar bar(progress, file.name(), file.size);
  std::error_code ec;
  if (std::filesystem::is_regular_file(dest, ec)) {
    if (verify_file(dest, file).empty()) {
      bar.finish("already there, verified");
      return;
    }
    std::filesystem::remove(dest, ec);  // a stale or damaged copy: fetch it again
  }
  const std::filesystem::path part = dest.string() + ".part";
  std::string last_failure;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::uint64_t have =
        std::filesystem::is_regular_file(part, ec) ? std::filesystem::file_size(part, ec) : 0;
    if (have > file.size) {
      std::filesystem::remove(part, ec);
      have = 0;
    }
    if (have == file.size) break;
    bar.update(have);
    std::ofstream out(part, std::ios::binary | std::ios::app);
    if (!out) throw model_error("cannot write " + part.string());
    bool restart = false;
    int status = 0;
    int write_errno = 0;  // why writing the .part failed (ENOSPC: the store is full)
    std::uint64_t done = have;
    const auto r = impl_->client->Get(
        impl_->file_url(repo, file),
        impl_->headers(have > 0 ? httplib::Headers{{"Range", "bytes=" + std::to_string(have) + "-"}}
                                : httplib::Headers{}),
        [&](const httplib::Response& response) {
          status = response.status;
          restart = status == 200 && have > 0;  // the server ignored the Range: start over
          return !restart;
        },
        [&](const char* data, std::size_t n) {
          if (status != 200 && status != 206) return true;  // an error page: not file content
          errno = 0;
          out.write(data, static_cast<std::streamsize>(n));
          if (!out) {
            write_errno = errno != 0 ? errno : EIO;
            return false;
          }
          done += n;
          bar.update(done);
          return done <= file.size;
        });
    out.close();
    if (write_errno != 0) {
      // Retrying cannot help: say so now. The .part stays, so a later run resumes from it.
      bar.finish("failed");
      throw model_error("cannot write " + part.string() + ": " + std::strerror(write_errno) +
                        " (is the model store full?); the partial file is kept and the next "
                        "run resumes it");
    }
    if (restart) {
      std::filesystem::remove(part, ec);
      continue;
    }
    if (status == 416 && have > 0) {  // the .part is not a prefix the server can extend
      std::filesystem::remove(part, ec);
      continue;
    }
    if (status != 0 && status != 200 && status != 206 && status < 500) {
      bar.finish("failed");
      throw model_error("cannot download " + repo + "/" + file.path + ": HTTP " +
                        std::to_string(status));
    }
    if (r && (status == 200 || status == 206) &&
        std::filesystem::file_size(part, ec) == file.size) {
      break;
    }
    last_failure = r ? (status >= 500 ? "HTTP " + std::to_string(status)
                                      : std::string("the transfer ended early"))
                     : describe(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * (attempt + 1)));
  }
  if (std::filesystem::file_size(part, ec) != file.size || ec) {
    bar.finish("failed");
    throw unreachable("download of " + repo + "/" + file.path + " failed after " +
                      std::to_string(kAttempts) + " attempts (" + last_failure +
                      "); run clef pull again to resume from " + part.string());
  }
  const std::string bad = verify_file(part, file);
  if (!bad.empty()) {
    bar.finish("corrupted");
    std::filesystem::remove(part, ec);
    throw model_error(repo + "/" + file.path + " is corrupted: " + bad +
                      "; the partial file was removed, run clef pull again");
  }
  std::filesystem::rename(part, dest);
  bar.finish("verified");
}

}  // namespace clef::pull
