#include "batch/batch_runner.hpp"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <thread>

#include "batch/batch_output.hpp"
#include "batch/state_key.hpp"
#include "json/parse.hpp"
#include "json/render.hpp"
#include "util/error.hpp"
#include "util/http_url.hpp"

namespace clef::batch {
namespace {

using Clock = std::chrono::steady_clock;

/// code and message of an error body {"error": {...}}, or the status as the code.
void read_error(Answer& a) {
  a.code = "http_" + std::to_string(a.status);
  a.message = a.body.substr(0, 500);
  try {
    const json::Value v = json::parse(a.body);
    if (const json::Value* e = v.find("error"); e != nullptr && e->is_object()) {
      if (const json::Value* c = e->find("code"); c != nullptr && c->is_string()) {
        a.code = c->as_string();
      }
      if (const json::Value* m = e->find("message"); m != nullptr && m->is_string()) {
        a.message = m->as_string();
      }
      if (const json::Value* f = e->find("param"); f != nullptr && f->is_string()) {
        a.param = f->as_string();
      }
    }
  } catch (const Error&) {
  }
}

/// A header's non-negative integer value; 0 when absent or not one.
int header_int(const std::string& value) {
  int n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  return ec == std::errc() && end == value.data() + value.size() && n > 0 ? n : 0;
}

/// X-Clef-Ignored-Fields back into paths: split at commas, %XX decoded (server::field_list); its
/// last item "...+N" (the paths the header left out) is added to `unlisted`.
std::vector<std::string> split_field_list(const std::string& value, int& unlisted) {
  std::vector<std::string> out;
  if (value.empty()) return out;
  std::string current;
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = 0; i <= value.size(); ++i) {
    if (i == value.size() || value[i] == ',') {
      // header_int takes only a whole positive number: the marker, never an encoded path.
      if (const int n = current.starts_with("...+") ? header_int(current.substr(4)) : 0; n > 0) {
        unlisted += n;
      } else {
        out.push_back(std::move(current));
      }
      current.clear();
    } else if (value[i] == '%' && i + 2 < value.size() && hex(value[i + 1]) && hex(value[i + 2])) {
      current += static_cast<char>(std::stoi(value.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      current += value[i];
    }
  }
  return out;
}

int input_tokens_of(const std::string& body) {
  try {
    const json::Value v = json::parse(body);
    if (const json::Value* u = v.find("usage"); u != nullptr) {
      if (const json::Value* t = u->find("input_tokens"); t != nullptr && t->is_integer()) {
        return std::stoi(t->integer_digits());
      }
    }
  } catch (const std::exception&) {
  }
  return 0;
}

}  // namespace

HttpSender::HttpSender(std::vector<std::string> endpoints, int retries,
                       std::chrono::seconds timeout, std::string api_key, std::string ca_cert)
    : retries_(retries),
      timeout_(timeout),
      api_key_(std::move(api_key)),
      ca_cert_(std::move(ca_cert)) {
  for (const std::string& url : endpoints) {
    const util::HttpUrl parsed = util::parse_http_url(url, "endpoint");
    Endpoint e;
    e.base = parsed.origin();
    e.path = parsed.path.empty() || parsed.path == "/" ? "/v1/decisions" : parsed.path;
    if (!httplib::Client(e.base).is_valid()) {
      throw invalid_request("cannot make an HTTP client for " + url, "endpoint");
    }
    endpoints_.push_back(std::move(e));
  }
  if (endpoints_.empty()) throw invalid_request("clef batch: no endpoint", "endpoint");
}

Answer HttpSender::send(const BatchItem& item, int worker) {
  Answer a;
  const std::string key = item.request ? state_key(*item.request) : "";
  httplib::Headers headers;
  if (!key.empty()) headers.emplace("X-Clef-State-Key", key);
  if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
  for (int attempt = 0;; ++attempt) {
    const Endpoint& e = endpoints_[static_cast<std::size_t>(worker + attempt) % endpoints_.size()];
    httplib::Client client(e.base);
    client.set_connection_timeout(std::chrono::seconds(5));
    client.set_read_timeout(timeout_);
    client.set_write_timeout(std::chrono::seconds(60));
    if (!ca_cert_.empty()) client.set_ca_cert_path(ca_cert_);
    auto res = client.Post(e.path, headers, item.body, "application/json");
    a.attempts = attempt + 1;
    std::chrono::milliseconds wait(std::min(100 << std::min(attempt, 6), 5000));
    if (res) {
      a.status = res->status;
      a.body = res->body;
      a.truncated_tokens = header_int(res->get_header_value("X-Clef-Truncated-Tokens"));
      a.ignored_fields = split_field_list(res->get_header_value("X-Clef-Ignored-Fields"),
                                          a.ignored_fields_unlisted);
      if (a.status != 429 && a.status != 503) break;
      // retry-after-ms (the server's estimate, clef's and TypeSafe's) before Retry-After's
      // whole seconds; either at most 30 s.
      try {
        if (const std::string ms = res->get_header_value("retry-after-ms"); !ms.empty()) {
          wait = std::chrono::milliseconds(std::clamp(std::stol(ms), 0L, 30000L));
        } else if (const std::string after = res->get_header_value("Retry-After"); !after.empty()) {
          wait = std::chrono::milliseconds(std::min(std::stoi(after), 30) * 1000);
        }
      } catch (const std::exception&) {
      }
    } else {
      a.status = 0;
      a.body.clear();
      a.code = "connection_failed";
      a.message = e.base + ": " + httplib::to_string(res.error());
      if (res.error() == httplib::Error::SSLServerVerification ||
          res.error() == httplib::Error::SSLServerHostnameVerification) {
        a.code = "tls_verification_failed";
        a.message += ca_cert_.empty()
                         ? " (the server's certificate is not one this machine trusts: a "
                           "self-signed one needs --ca-cert FILE)"
                         : " (not signed by --ca-cert " + ca_cert_ + ")";
        break;  // a retry meets the same certificate (a reported run retried it 8 times)
      }
    }
    if (attempt >= retries_) break;
    std::this_thread::sleep_for(wait);
  }
  if (a.status == 200) {
    // A 200 body goes into the output as one JSON value on one line, re-rendered: a broken or
    // hostile endpoint cannot split a record or forge others (a break test did).
    try {
      const json::Value v = json::parse(a.body);
      if (!v.is_object()) throw invalid_request("not a JSON object");
      a.body = json::dumps_unsorted(v);
      a.input_tokens = input_tokens_of(a.body);
    } catch (const Error& e) {
      a.status = 0;
      a.code = "invalid_response";
      a.message = "the endpoint answered 200 with a body that is not a JSON object: " +
                  std::string(e.what());
      a.body.clear();
    }
  } else if (a.status != 0) {
    read_error(a);
  }
  return a;
}

bool is_setup_error(const Answer& a) {
  return a.code == "tls_verification_failed" || (a.status == 400 && a.code == "https_required");
}

Answer LocalSender::send(const BatchItem& item, int) {
  Answer a;
  std::lock_guard lock(mutex_);
  try {
    const runtime::PreparedRequest prepared = engine_.prepare(*item.request);
    const runtime::Decision d = engine_.decide(prepared);
    a.status = 200;
    a.body = d.body;
    a.input_tokens = d.input_tokens;
    a.truncated_tokens = static_cast<int>(prepared.record.state_tokens_cut);
    a.ignored_fields = prepared.request.ignored_fields;
  } catch (const Error& e) {
    a.status = e.status();
    a.code = e.code();
    a.message = e.what();
    a.param = e.param();
  } catch (const std::exception& e) {
    a.status = 500;
    a.code = "internal_error";
    a.message = e.what();
  }
  return a;
}

BatchSummary run_batch(const std::vector<BatchItem>& items, const std::set<int>& done,
                       Sender& sender, const std::filesystem::path& out,
                       const BatchOptions& options) {
  BatchSummary summary;
  summary.total = items.size();
  cut_torn_line(out);
  std::FILE* file = std::fopen(out.c_str(), "ab");
  if (file == nullptr) throw invalid_request("cannot write " + out.string(), "out");
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(file, &std::fclose);

  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (done.count(items[i].line) != 0) {
      ++summary.skipped;
    } else {
      todo.push_back(i);
    }
  }
  std::mutex mutex;                            // guards the file, the summary, the ordered buffer
  std::map<std::size_t, std::string> pending;  // ordered: records waiting for earlier ones
  std::size_t next_to_write = 0;
  std::vector<double> latencies;
  std::size_t finished = 0;
  std::size_t errors = 0;
  std::atomic<std::size_t> next{0};
  const auto start = Clock::now();

  bool write_failed = false;
  auto write = [&](const std::string& record) {
    if (std::fwrite(record.data(), 1, record.size(), file) != record.size() ||
        std::fflush(file) != 0) {
      write_failed = true;
    }
  };
  auto worker = [&](int w) {
    while (true) {
      const std::size_t k = next.fetch_add(1);
      if (k >= todo.size()) return;
      const BatchItem& item = items[todo[k]];
      const auto t0 = Clock::now();
      Answer a;
      if (!item.request) {
        a.status = 400;
        a.code = "invalid_line";
        a.message = item.error;
        a.attempts = 0;
      } else {
        a = sender.send(item, w);
      }
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      const std::string record =
          a.status == 200 ? answer_record(record_key(item), 200, a.body, a.truncated_tokens,
                                          a.ignored_fields, a.ignored_fields_unlisted)
                          : error_record(record_key(item), a.status, a.code, a.message, a.param);
      std::lock_guard lock(mutex);
      if (options.ordered) {
        pending.emplace(k, record);
        while (!pending.empty() && pending.begin()->first == next_to_write) {
          write(pending.begin()->second);
          pending.erase(pending.begin());
          ++next_to_write;
        }
      } else {
        write(record);
      }
      ++summary.by_status[a.status];
      summary.retries += static_cast<std::size_t>(std::max(a.attempts - 1, 0));
      summary.input_tokens += static_cast<std::uint64_t>(a.input_tokens);
      if (a.status == 200 && a.truncated_tokens > 0) ++summary.truncated;
      if (a.status == 200 && (!a.ignored_fields.empty() || a.ignored_fields_unlisted > 0)) {
        ++summary.with_ignored_fields;
      }
      if (is_setup_error(a) && summary.setup_errors++ == 0) {
        summary.first_setup_error = a.message;
      }
      latencies.push_back(ms);
      ++finished;
      if (a.status != 200) ++errors;
      if (options.on_progress) options.on_progress(finished, todo.size(), errors);
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, options.concurrency);
  for (int w = 0; w < n; ++w) threads.emplace_back(worker, w);
  for (std::thread& t : threads) t.join();

  if (write_failed) {
    throw Error(ErrorKind::internal, "write_failed",
                "records could not be written to " + out.string() + " (disk full?)");
  }
  summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latencies.begin(), latencies.end());
  auto quantile = [&](double q) {
    if (latencies.empty()) return 0.0;
    const auto i = static_cast<std::size_t>(q * static_cast<double>(latencies.size() - 1) + 0.5);
    return latencies[std::min(i, latencies.size() - 1)];
  };
  summary.p50_ms = quantile(0.5);
  summary.p99_ms = quantile(0.99);
  return summary;
}

std::string format_summary(const BatchSummary& s) {
  std::size_t written = 0;
  for (const auto& [status, n] : s.by_status) written += n;
  char line[256];
  std::snprintf(line, sizeof line,
                "clef batch: %zu lines, %zu decided now, %zu already answered; %.1f s, %.1f "
                "lines/s, latency p50 %.0f ms, p99 %.0f ms; %zu retries; %llu input tokens\n",
                s.total, written, s.skipped, s.wall_s,
                s.wall_s > 0 ? static_cast<double>(written) / s.wall_s : 0.0, s.p50_ms, s.p99_ms,
                s.retries, static_cast<unsigned long long>(s.input_tokens));
  std::string out = line;
  if (s.truncated > 0) {
    out += "  " + std::to_string(s.truncated) +
           " lines had their state cut to fit the context (their records' truncated_tokens; "
           "--truncation refuse refuses them instead)\n";
  }
  if (s.with_ignored_fields > 0) {
    out += "  " + std::to_string(s.with_ignored_fields) +
           " lines carried fields the contract ignores (their records' ignored_fields)\n";
  }
  for (const auto& [status, n] : s.by_status) {
    out += "  status " +
           (status == 0 ? std::string("none (no server answered)") : std::to_string(status)) +
           ": " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace clef::batch
