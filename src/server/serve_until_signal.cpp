#include "server/serve_until_signal.hpp"

#include <pthread.h>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "server/http_server.hpp"
#include "server/server_log.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace clef::server {

ShutdownSignals::ShutdownSignals(bool take_sighup) {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  if (take_sighup) sigaddset(&set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
}

ShutdownSignals::~ShutdownSignals() {
  const timespec zero{0, 0};
  while (sigtimedwait(&set_, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

HeldSighup::HeldSighup() {
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &hup, &old_mask_);
}

HeldSighup::~HeldSighup() {
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  const timespec zero{0, 0};
  while (sigtimedwait(&hup, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int ShutdownSignals::wait_for(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) timeout = std::chrono::milliseconds(0);
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>((timeout.count() % 1000) * 1000000)};
  int signo = sigtimedwait(&set_, nullptr, &ts);
  return signo > 0 ? signo : 0;  // -1: timeout (EAGAIN) or EINTR
}

namespace {

/// A signal while the model loads: `on_signal` may have aborted the load (the backbone's); if it
/// is still loading 2 s later (a part that cannot be interrupted: the mmproj, the warm-up), the
/// process exits 0 at once instead of waiting for it. Nothing is lost: no decision is accepted
/// before the model is ready, and nothing is written while it loads.
void exit_if_still_loading(const HttpServer& server, ServerLog& events, std::ostream& out,
                           std::ostream& log) {
  for (int i = 0; i < 20 && server.health() == Health::loading; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (server.health() != Health::loading) return;
  events.event("info", "the model is still loading: exiting without waiting for it");
  out.flush();
  log.flush();
  std::_Exit(0);
}

}  // namespace

int serve_until_signal(const ServerConfig& config, runtime::DecisionQueue::Factory factory,
                       std::ostream& out, std::ostream& log, std::function<void()> on_signal) {
  // First: every thread below inherits the blocked mask.
  ShutdownSignals signals(true);  // SIGHUP re-reads the key file, never ends the server
  ServerLog events(log, config.log_format);
  std::unique_ptr<HttpServer> server;
  int port = 0;
  try {
    server = std::make_unique<HttpServer>(config, std::move(factory), log);
    port = server->bind();
  } catch (const Error& e) {
    events.event("error", e.what());
    return e.kind() == ErrorKind::internal ? 1 : 2;
  }
  const std::string url = base_url(config, port);
  out << "clef serve: listening on " << url << std::endl;
  if (server->agent_port() >= 0) {
    out << "clef serve: agent check on " << config.host << ":" << server->agent_port() << std::endl;
    events.event("info", "HAProxy agent check on " + config.host + ":" +
                             std::to_string(server->agent_port()));
  }
  events.event("info", "listening on " + url + "; loading the model");
  if (config.api_keys.empty() && config.api_key_file.empty() && config.host != "127.0.0.1" &&
      config.host != "::1" && config.host != "localhost") {
    events.event("warning", "serving " + config.host +
                                " without API keys: anyone who reaches it can use it "
                                "(--api-key-file; README \"On a network: API keys\")");
  }

  for (const std::string& warning : secret_file_warnings(config)) events.event("warning", warning);

  std::thread serving([&server] { server->serve(); });
  bool reported_ready = false;
  int exit_code = 0;
  while (true) {
    int signo = signals.wait_for(std::chrono::milliseconds(100));
    if (signo == SIGHUP) {
      server->reload_api_keys();
      continue;
    }
    if (signo != 0) {
      events.event("info", signo == SIGINT ? "SIGINT received" : "SIGTERM received");
      if (on_signal) on_signal();
      exit_if_still_loading(*server, events, out, log);
      break;
    }
    Health health = server->health();
    if (health == Health::failed) {
      events.event("error", "the model failed to load: " + server->queue().load_error());
      exit_code = 2;
      break;
    }
    if (!reported_ready && health == Health::ok) {
      reported_ready = true;
      auto model = server->queue().served();
      events.event("info", "ready: model " + (model ? model->name : std::string("?")) +
                               ", context " + std::to_string(model ? model->context_size : 0) +
                               " tokens, loaded in " +
                               std::to_string(model ? model->load_seconds : 0.0) + " s");
      if (model && !model->placement.empty()) events.event("info", "device: " + model->placement);
      if (model && !model->head.description.empty()) {
        events.event("info", "joint schema head: " + model->head.description);
      }
      if (model && !model->sequence_memory.empty()) {
        events.event("info", "memory: " + model->sequence_memory);
      }
      const std::uint64_t cache = server->queue().state_cache_stats().budget;
      events.event("info", cache == 0 ? std::string("state cache off")
                                      : "state cache up to " + util::human_bytes(cache) +
                                            " (--state-cache-mb)");
      if (model && !model->answers.calibration.empty()) {
        events.event("info", "calibration active: " + model->answers.calibration +
                                 " (answers differ from the reference's by design)");
      }
      if (model && model->answers.confidence != "reference") {
        events.event("info", "confidence means " + model->answers.confidence +
                                 " (the reference's is the chosen option's probability)");
      }
    }
  }
  server->shutdown();
  serving.join();
  return exit_code;
}

}  // namespace clef::server
