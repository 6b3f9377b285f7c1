#pragma once
// A small Hugging Face-style hub served on loopback by the test itself (no internet):
//   GET /api/models/{owner}/{name}/tree/main   the listing, two pages joined by a Link header
//   GET /{owner}/{name}/resolve/main/{path}    the file, with Range support
// Files can be flagged to drop the connection once in the middle, or listed with a wrong sha256.

#include <httplib.h>
#include <openssl/evp.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace clef::test {

inline std::string hex_digest(const EVP_MD* md, const std::string& data,
                              const std::string& header = {}) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_MD_CTX* c = EVP_MD_CTX_new();
  EVP_DigestInit_ex(c, md, nullptr);
  EVP_DigestUpdate(c, header.data(), header.size());
  EVP_DigestUpdate(c, data.data(), data.size());
  EVP_DigestFinal_ex(c, out, &n);
  EVP_MD_CTX_free(c);
  std::string s;
  for (unsigned int i = 0; i < n; ++i) {
    static constexpr char kHex[] = "0123456789abcdef";
    s += kHex[out[i] >> 4];
    s += kHex[out[i] & 15];
  }
  return s;
}

class FakeHub {
 public:
  struct File {
    std::string path;
    std::string data;
    bool lfs = true;
    bool cut_once = false;      ///< drop the connection half-way through, the first time
    std::string listed_sha256;  ///< overrides the real sha256 in the listing
  };

  FakeHub() {
    server_.Get(R"(/api/models/([^/]+/[^/]+)/tree/main)",
                [this](const httplib::Request& req, httplib::Response& res) { list(req, res); });
    server_.Get(R"(/([^/]+/[^/]+)/resolve/main/(.+))",
                [this](const httplib::Request& req, httplib::Response& res) { file(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    server_.stop();
    thread_.join();
  }

  /// Adds a file to `repo` (created on first use). `lfs` files are listed with a sha256.
  void add(const std::string& repo, const std::string& path, std::string data, bool lfs = true,
           bool cut_once = false, std::string listed_sha256 = {}) {
    const std::lock_guard lock(mu_);
    repos_[repo].push_back({path, std::move(data), lfs, cut_once, std::move(listed_sha256)});
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// Range headers received, in order ("" for a request without one), per file path.
  std::vector<std::string> ranges(const std::string& path) {
    const std::lock_guard lock(mu_);
    return ranges_[path];
  }
  /// Sleeps `pause` after every 4 KiB chunk of a file from now on (0: full speed), so a test can
  /// stop a client mid-download.
  void set_pace(std::chrono::microseconds pause) {
    const std::lock_guard lock(mu_);
    pace_ = pause;
  }
  std::size_t bytes_sent(const std::string& path) {
    const std::lock_guard lock(mu_);
    return sent_[path];
  }

 private:
  void list(const httplib::Request& req, httplib::Response& res) {
    const std::lock_guard lock(mu_);
    const auto it = repos_.find(req.matches[1].str());
    if (it == repos_.end()) {
      res.status = 404;
      res.set_content(R"({"error":"Repository not found"})", "application/json");
      return;
    }
    // Two pages: files [0, half) then [half, n), the second behind a cursor.
    const auto& files = it->second;
    const bool second = req.has_param("cursor");
    const std::size_t half = files.size() / 2;
    const std::size_t begin = second ? half : 0, end = second ? files.size() : half;
    std::vector<std::string> entries;
    if (!second) entries.push_back(R"({"type":"directory","oid":"0","size":0,"path":"extras"})");
    for (std::size_t i = begin; i < end; ++i) {
      const File& f = files[i];
      const std::string blob = "blob " + std::to_string(f.data.size());
      std::string e =
          R"({"type":"file","path":")" + f.path + R"(","size":)" +
          std::to_string(f.lfs ? 134 : f.data.size()) + R"(,"oid":")" +
          (f.lfs ? hex_digest(EVP_sha1(), "pointer:" + f.path)
                 : hex_digest(EVP_sha1(), f.data, std::string(blob.c_str(), blob.size() + 1))) +
          "\"";
      if (f.lfs) {
        const std::string sha =
            f.listed_sha256.empty() ? hex_digest(EVP_sha256(), f.data) : f.listed_sha256;
        e += R"(,"lfs":{"oid":")" + sha + R"(","size":)" + std::to_string(f.data.size()) +
             R"(,"pointerSize":134})";
      }
      entries.push_back(e + "}");
    }
    std::string json = "[";
    for (std::size_t i = 0; i < entries.size(); ++i) json += (i ? "," : "") + entries[i];
    json += "]";
    if (!second) {
      res.set_header("Link", "<" + endpoint() + "/api/models/" + req.matches[1].str() +
                                 "/tree/main?recursive=true&cursor=page2>; rel=\"next\"");
    }
    res.set_content(json, "application/json");
  }

  void file(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu_);
    const auto it = repos_.find(req.matches[1].str());
    File* f = nullptr;
    if (it != repos_.end()) {
      for (File& x : it->second) {
        if (x.path == req.matches[2].str()) f = &x;
      }
    }
    if (f == nullptr) {
      res.status = 404;
      res.set_content("Entry not found", "text/plain");
      return;
    }
    ranges_[f->path].push_back(req.get_header_value("Range"));
    const std::string& data = f->data;
    bool* cut_once = &f->cut_once;
    const std::string path = f->path;
    lock.unlock();
    // httplib applies the request's Range to a provider of the whole content.
    res.set_content_provider(data.size(), "application/octet-stream",
                             [this, &data, cut_once, path](std::size_t offset, std::size_t length,
                                                           httplib::DataSink& sink) {
                               std::size_t n = std::min<std::size_t>(length, 4096);
                               if (offset + n > data.size() / 2 && take(cut_once)) {
                                 n = data.size() / 2 > offset ? data.size() / 2 - offset : 0;
                                 if (n > 0) sink.write(data.data() + offset, n);
                                 count(path, n);
                                 return false;  // drop the connection mid-file
                               }
                               sink.write(data.data() + offset, n);
                               count(path, n);
                               std::this_thread::sleep_for(pace());
                               return true;
                             });
  }

  /// True (once) when the file's cut is still pending.
  bool take(bool* flag) {
    const std::lock_guard lock(mu_);
    const bool was = *flag;
    *flag = false;
    return was;
  }

  std::chrono::microseconds pace() {
    const std::lock_guard lock(mu_);
    return pace_;
  }

  void count(const std::string& path, std::size_t n) {
    const std::lock_guard lock(mu_);
    sent_[path] += n;
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::vector<File>> repos_;
  std::map<std::string, std::vector<std::string>> ranges_;
  std::map<std::string, std::size_t> sent_;
  std::chrono::microseconds pace_{0};
};

}  // namespace clef::test
