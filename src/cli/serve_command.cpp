// `clef serve`: the SystemOne HTTP server (src/server) over the decision engine (src/runtime).
//   clef serve --model-dir DIR [--host 127.0.0.1] [--port 8080] [--alias NAME] ...
//   clef serve --demo          serves the random-weight `tiny` test model, generated once into
//                              ${XDG_CACHE_HOME:-~/.cache}/clef/demo-tiny/tiny-seed<N>
#include <malloc.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>

#include "backbone/backbone_params.hpp"
#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/option_kinds.hpp"
#include "device/cpu_path.hpp"
#include "runtime/make_engine.hpp"
#include "server/serve_until_signal.hpp"
#include "server/server_config.hpp"
#include "testmodel/make_test_model.hpp"
#include "util/error.hpp"

namespace clef::cli {
namespace {

namespace fs = std::filesystem;

struct ServeOptions {
  EngineOptions engine;
  server::ServerConfig server;
  std::string log_format = "text";
  bool demo = false;
  std::uint64_t demo_seed = 0;
};

/// ${XDG_CACHE_HOME:-$HOME/.cache}/clef/demo-tiny. Throws invalid_request when neither is set.
fs::path demo_cache_root() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return fs::path(xdg) / "clef" / "demo-tiny";
  const char* home = std::getenv("HOME");
  if (home == nullptr || home[0] == '\0') {
    throw invalid_request("--demo needs XDG_CACHE_HOME or HOME for its model cache", "demo");
  }
  return fs::path(home) / ".cache" / "clef" / "demo-tiny";
}

/// The `tiny` test model for `seed`, generated on first use. Generation writes into a private
/// temporary directory that is renamed into place, so concurrent first runs cannot see half a
/// model; the directory name is the cache key (preset + seed).
fs::path demo_model_dir(std::uint64_t seed) {
  const fs::path root = demo_cache_root();
  const fs::path dir = root / ("tiny-seed" + std::to_string(seed));
  if (fs::exists(dir / "joint_head_config.json")) return dir;
  fs::create_directories(root);
  const fs::path tmp =
      root / (".tmp-" + std::to_string(::getpid()) + "-tiny-seed" + std::to_string(seed));
  fs::remove_all(tmp);
  testmodel::MakeOptions make;
  make.dir = tmp;
  make.seed = seed;
  make.preset = "tiny";
  std::cerr << "clef serve: generating the demo model (tiny, seed " << seed << ") in " << dir
            << "\n";
  testmodel::make_test_model(make);
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  if (ec) {  // another process finished first: use its copy
    fs::remove_all(tmp);
    if (!fs::exists(dir / "joint_head_config.json")) {
      throw model_error("cannot place the demo model in " + dir.string() + ": " + ec.message());
    }
  }
  return dir;
}

int run_serve(ServeOptions& options) {
  // Before anything slow (the demo model, a download) and before any thread starts.
  server::HeldSighup held_sighup;
  options.server.log_format = server::parse_log_format(options.log_format);
  if (options.demo) {
    if (!options.engine.model_dir.empty() || !options.engine.model.empty()) {
      throw invalid_request("--demo serves its own model; drop --model-dir/--model", "demo");
    }
    options.engine.model_dir = demo_model_dir(options.demo_seed).string();
    options.server.random_weights = true;
    std::cerr << "clef serve: --demo serves a random-weight test model: its answers are "
                 "meaningless (served as "
              << (options.engine.alias.empty() ? std::string("clef-flash") : options.engine.alias)
              << ")\n";
  }
  if (options.engine.model_dir.empty() && options.engine.model.empty()) {
    throw invalid_request(
        "clef serve needs a model: --demo (a random-weight test model, no download), a registry "
        "name such as clef-flash:9b (downloaded once; `clef models` lists names and sizes), "
        "or --model-dir DIR with the files you have (--model FILE for a backbone GGUF)",
        "model");
  }
  runtime::EngineConfig config = options.engine.to_config();
  // Engine parameters are refused before the server listens (exit 2, nothing bound): a wrapper
  // that reads the port from stdout must not take a server that will not load for a started one.
  backbone::validate(config.backbone);
  // cpu_amx=on where ggml offers no AMX: refused now, as the load would refuse it after
  // "listening on" (the process's one AMX decision, the same one the load then takes).
  if (config.backbone.cpu_amx == device::CpuAmx::on) device::use_cpu_amx(device::CpuAmx::on);
  options.server.http_threads = server::http_threads_for(options.server, config.backbone.parallel);
  // A server prepares requests on many HTTP threads: with glibc's dynamic mmap threshold, a large
  // image's pixels (12 MB for 2048x2048) end up in each thread's malloc arena and stay there after
  // the request (RSS grew by ~29 MB per large request, measured). Buffers of 4 MiB and more are
  // mapped on their own and unmapped when freed instead.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  // A signal during the model load aborts the load (llama.cpp polls the progress callback)
  // instead of making the drain wait for it.
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  config.backbone.on_progress = [cancelled](float) { return !cancelled->load(); };
  runtime::DecisionQueue::Factory factory = [config] { return runtime::make_engine(config); };
  return server::serve_until_signal(options.server, std::move(factory), std::cout, std::cerr,
                                    [cancelled] { cancelled->store(true); });
}

}  // namespace

void add_serve_command(CLI::App& cmd, ExitCode& exit_code) {
  const auto options = add_engine_options<ServeOptions>(cmd, exit_code, run_serve, true);
  server::ServerConfig& s = options->server;
  cmd.add_option("--host", s.host, "address to listen on")->capture_default_str();
  cmd.add_option("--port", s.port, "TCP port; 0 picks a free one (printed on start)")
      ->capture_default_str();
  add_size_option(cmd, "--max-body", s.max_body_bytes,
                  "largest request body (bytes; suffixes KiB/MiB/KB/MB accepted; 64 bytes to 4 "
                  "GiB), else 413")
      ->check(CLI::Range(std::uint64_t{64}, std::uint64_t{4} << 30))
      ->capture_default_str();
  add_size_option(cmd, "--prepare-memory", s.prepare_memory_bytes,
                  "memory all decision requests in preparation may hold at once (body, parsed "
                  "JSON, rendered state, tokenization); one that would pass it gets 429. 0: no "
                  "limit; suffixes KiB/MiB/GiB")
      ->capture_default_str();
  add_size_option(cmd, "--prepare-memory-per-request", s.prepare_memory_per_request_bytes,
                  "memory one request may hold while it is prepared; more gets 413. 0: no limit")
      ->capture_default_str();
  add_size_option(cmd, "--body-buffer", s.body_buffer_bytes,
                  "the bytes of all request bodies received at once (the connection loop reads "
                  "each body before a worker takes its request, so slow senders hold no worker; "
                  "0: auto, the larger of 256 MiB and twice --max-body + 64 KiB; suffixes "
                  "KiB/MiB/GiB)")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{64} << 30))
      ->capture_default_str();
  cmd.add_option("--queue-size", s.queue_size,
                 "decisions that may wait for the runtime thread; more get 429")
      ->capture_default_str();
  cmd.add_option("--http-threads", s.http_threads,
                 "HTTP worker threads (each serves one open connection at a time); 0: "
                 "--queue-size + --parallel + 16, so a full queue is answered 429")
      ->capture_default_str();
  cmd.add_option("--read-timeout", s.timeouts.read_s, "seconds a connection may stay silent")
      ->capture_default_str();
  cmd.add_option("--write-timeout", s.timeouts.write_s, "seconds a blocked write may take")
      ->capture_default_str();
  cmd.add_option("--header-timeout", s.timeouts.header_s,
                 "seconds a request's headers may take to arrive (slow clients get 408; "
                 "--http-threads slow clients at once delay others at most this long)")
      ->capture_default_str();
  cmd.add_option("--body-timeout", s.timeouts.body_s,
                 "seconds the whole request body may take to arrive")
      ->capture_default_str();
  cmd.add_option("--keep-alive-timeout", s.timeouts.keep_alive_s,
                 "seconds an idle keep-alive connection is kept")
      ->capture_default_str();
  add_range_option(cmd, "--agent-port", s.agent_port,
                   "answer HAProxy's agent-check on this TCP port (up N% by free capacity, maint "
                   "while loading, drain while draining; 0: any free port; -1: off)",
                   -1, 65535);
  cmd.add_flag(
      "--no-playground", [&s](std::int64_t) { s.playground = false; },
      "do not serve the playground page at / (GET /openapi.json stays)");
  cmd.add_option("--busy-status", s.overload_status,
                 "status of a busy answer (queue full, every worker busy, preparation memory "
                 "full): 429 or 503")
      ->check(CLI::IsMember({429, 503}))
      ->capture_default_str();
  cmd.add_option("--validation-status", s.validation_status,
                 "status of well-formed JSON with fields the contract refuses (code "
                 "invalid_request): 400 as the contract says, 422 as TypeSafe's hosted API and "
                 "its SDKs (UnprocessableEntityError); malformed JSON stays 400")
      ->check(CLI::IsMember({400, 422}))
      ->capture_default_str();
  cmd.add_option("--api-key", s.api_keys,
                 "accept this API key (repeatable; named key-1, key-2, ... in logs and metrics): "
                 "every endpoint but /health and the web files then needs Authorization: "
                 "Bearer KEY or X-API-Key: KEY, else 401");
  // An empty value would silently mean "no keys" / "plain HTTP" (reported input).
  const auto names_a_file = [](const std::string& value) {
    return value.empty() ? std::string("must name a file, not be empty") : std::string();
  };
  cmd.add_option("--api-key-file", s.api_key_file,
                 "accept the keys of this file: one a line, NAME KEY or a bare KEY, # comments; "
                 "re-read on SIGHUP")
      ->check(names_a_file);
  cmd.add_option("--ssl-cert-file", s.ssl_cert_file,
                 "serve HTTPS with this PEM certificate (chain); needs --ssl-key-file")
      ->check(names_a_file);
  cmd.add_option("--ssl-key-file", s.ssl_key_file,
                 "the PEM private key of --ssl-cert-file (no passphrase); checked at start")
      ->check(names_a_file);
  cmd.add_option("--ssl-ciphers", s.ssl_ciphers,
                 "TLS 1.2 cipher suites (an OpenSSL cipher list); the default offers only "
                 "forward-secret AEAD suites. Widen it for old clients, e.g. "
                 "'ECDHE+AESGCM:ECDHE+CHACHA20:AES256-GCM-SHA384'")
      ->capture_default_str();
  cmd.add_flag("--log-probes", s.log_all_probes,
               "log every GET /health (load-balancer probes); default: a probe only when its "
               "status changes, with the count of those not logged (probes_unlogged=N)");
  cmd.add_option("--log-format", options->log_format, "request log on stderr")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd.add_flag("--demo", options->demo,
               "serve the random-weight tiny test model (generated once into the user cache)");
  cmd.add_option("--demo-seed", options->demo_seed, "seed of the --demo model")
      ->capture_default_str();
}

}  // namespace clef::cli
