#include "server/server_config.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "transport/connection.hpp"
#include "util/error.hpp"

namespace clef::server {

LogFormat parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::text;
  if (name == "json") return LogFormat::json;
  throw invalid_request("log-format must be text or json, got '" + std::string(name) + "'",
                        "log-format");
}

namespace {

/// What one chunked body of --max-body may take as it arrives.
std::size_t one_body_framed(const ServerConfig& c) {
  transport::ConnectionLimits limits;
  limits.max_body_bytes = c.max_body_bytes;
  return transport::max_framed_body_bytes(limits);
}

void require(bool ok, const char* flag, const std::string& what) {
  if (!ok) throw invalid_request("--" + std::string(flag) + " " + what, flag);
}

}  // namespace

std::string base_url(const ServerConfig& config, int port) {
  std::string url = config.ssl_cert_file.empty() ? "http://" : "https://";
  const bool ipv6 = config.host.find(':') != std::string::npos && config.host.front() != '[';
  if (ipv6) url += '[';
  url += config.host;
  if (ipv6) url += ']';
  url += ':';
  url += std::to_string(port);
  return url;
}

std::vector<std::string> secret_file_warnings(const ServerConfig& config) {
  std::vector<std::string> out;
  const auto check = [&out](const char* flag, const std::string& file) {
    struct stat info {};
    if (file.empty() || ::stat(file.c_str(), &info) != 0) return;
    const unsigned mode = info.st_mode & 07777u;
    if ((mode & 077u) == 0) return;
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", mode);
    out.push_back(std::string("--") + flag + " " + file + " has mode " + octal +
                  ": users other than its owner may read it (it holds secrets); chmod 600 it");
  };
  check("api-key-file", config.api_key_file);
  check("ssl-key-file", config.ssl_key_file);
  return out;
}

std::size_t body_buffer_for(const ServerConfig& config) {
  if (config.body_buffer_bytes != 0) return config.body_buffer_bytes;
  return std::max<std::size_t>(std::size_t{256} << 20, one_body_framed(config));
}

int http_threads_for(const ServerConfig& config, int parallel) {
  if (config.http_threads != 0) return config.http_threads;
  const std::size_t threads =
      config.queue_size + static_cast<std::size_t>(std::max(parallel, 1)) + kSpareHttpThreads;
  return static_cast<int>(std::min<std::size_t>(threads, 4096));
}

void validate(const ServerConfig& c) {
  require(!c.host.empty(), "host", "must not be empty");
  require(c.port >= 0 && c.port <= 65535, "port", "must be in 0..65535");
  require(c.max_body_bytes >= 64, "max-body", "must be at least 64 bytes");
  require(c.prepare_memory_per_request_bytes == 0 ||
              c.prepare_memory_per_request_bytes >= 2 * c.max_body_bytes,
          "prepare-memory-per-request",
          "must be 0 (no limit) or at least twice --max-body (" +
              std::to_string(2 * c.max_body_bytes) + " bytes): a body and its parse");
  require(c.prepare_memory_bytes == 0 || c.prepare_memory_per_request_bytes == 0 ||
              c.prepare_memory_bytes >= c.prepare_memory_per_request_bytes,
          "prepare-memory", "must be 0 (no limit) or at least --prepare-memory-per-request");
  require(c.body_buffer_bytes == 0 || c.body_buffer_bytes >= one_body_framed(c), "body-buffer",
          "must be 0 (auto) or at least twice --max-body and 64 KiB (" +
              std::to_string(one_body_framed(c)) +
              " bytes): what one chunked body of --max-body may take as it arrives");
  require(c.max_json_depth >= 4 && c.max_json_depth <= 10000, "max-json-depth",
          "must be in 4..10000");
  require(c.queue_size >= 1 && c.queue_size <= 1000000, "queue-size", "must be in 1..1000000");
  require(c.http_threads >= 0 && c.http_threads <= 4096, "http-threads",
          "must be in 1..4096 (0: auto)");
  require(c.timeouts.read_s >= 1, "read-timeout", "must be at least 1 second");
  require(c.timeouts.write_s >= 1, "write-timeout", "must be at least 1 second");
  require(c.timeouts.header_s >= 1, "header-timeout", "must be at least 1 second");
  require(c.timeouts.body_s >= 1, "body-timeout", "must be at least 1 second");
  require(c.timeouts.keep_alive_s >= 1, "keep-alive-timeout", "must be at least 1 second");
  require(c.retry_after_s >= 0, "retry-after", "must not be negative");
  require(c.overload_status == 429 || c.overload_status == 503, "overload-status",
          "must be 429 or 503");
  require(c.validation_status == 400 || c.validation_status == 422, "validation-status",
          "must be 400 or 422");
  require(c.ssl_cert_file.empty() == c.ssl_key_file.empty(),
          c.ssl_cert_file.empty() ? "ssl-cert-file" : "ssl-key-file",
          "is needed too: HTTPS takes --ssl-cert-file and --ssl-key-file together");
}

}  // namespace clef::server
