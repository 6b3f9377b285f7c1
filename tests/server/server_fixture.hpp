#pragma once
// An in-process server on a free 127.0.0.1 port, deciding with the fake engine, plus helpers.

#include <httplib.h>

#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "fake_engine.hpp"
#include "server/http_server.hpp"

namespace clef::server::testing {

/// Small limits so tests stay fast: 4 KiB bodies, 2 s read timeouts, 1 s keep-alive.
inline ServerConfig test_config() {
  ServerConfig config;
  config.host = "127.0.0.1";
  config.port = 0;
  config.max_body_bytes = 4096;
  config.queue_size = 64;
  config.http_threads = 32;
  config.timeouts.read_s = 2;
  config.timeouts.write_s = 2;
  config.timeouts.body_s = 5;
  config.timeouts.keep_alive_s = 1;
  config.retry_after_s = 2;
  return config;
}

class ServerFixture {
 public:
  /// Starts serving at once; the model loads unless `hold_load` (then open_load_gate()).
  explicit ServerFixture(ServerConfig config = test_config(), std::string model = "fake-model",
                         bool hold_load = false)
      : control(std::make_shared<FakeControl>()) {
    control->load_gate_open = !hold_load;
    server = std::make_unique<HttpServer>(config, fake_factory(control, model, 4096), log_);
    port = server->bind();
    thread_ = std::thread([this] { server->serve(); });
  }
  ~ServerFixture() {
    control->open_gate();
    control->open_load_gate();
    stop();
  }

  bool wait_ready() { return server->queue().wait_until_ready(std::chrono::seconds(10)); }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(10, 0);
    c->set_write_timeout(5, 0);
    c->set_tcp_nodelay(true);
    return c;
  }

  /// Drains and stops; serve() has returned afterwards. Idempotent.
  void stop() {
    if (!stopped_) {
      stopped_ = true;
      server->shutdown();
      thread_.join();
    }
  }

  /// The server's log; call after stop() (the server writes it from its threads).
  std::string log_text() const { return log_.str(); }

  std::shared_ptr<FakeControl> control;
  std::unique_ptr<HttpServer> server;
  int port = 0;

 private:
  std::ostringstream log_;
  std::thread thread_;
  bool stopped_ = false;
};

/// The value of a sample line `name value` in a Prometheus text, or -1.
inline double metric_value(const std::string& text, const std::string& name) {
  std::string key = "\n" + name + " ";
  std::string padded = "\n" + text;
  auto pos = padded.find(key);
  if (pos == std::string::npos) return -1;
  return std::stod(padded.substr(pos + key.size()));
}

}  // namespace clef::server::testing
