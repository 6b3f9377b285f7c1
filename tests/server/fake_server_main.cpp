// clef_fake_server: serve_until_signal() over the fake engine, so the signal and drain path of
// `clef serve` can be tested as a child process without a model.
//   clef_fake_server [--delay-ms N] [--queue-size N] [--port N] [--load-ms N] [--host H]
//                    [--api-key-file F]

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "fake_engine.hpp"
#include "server/serve_until_signal.hpp"

int main(int argc, char** argv) {
  clef::server::ServerConfig config;
  config.port = 0;
  config.timeouts.read_s = 2;
  config.timeouts.keep_alive_s = 1;
  auto control = std::make_shared<clef::server::testing::FakeControl>();
  long load_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--delay-ms") {
      control->delay = std::chrono::milliseconds(value);
    } else if (flag == "--queue-size") {
      config.queue_size = static_cast<std::size_t>(value);
    } else if (flag == "--port") {
      config.port = static_cast<int>(value);
    } else if (flag == "--host") {
      config.host = argv[i + 1];
    } else if (flag == "--api-key-file") {
      config.api_key_file = argv[i + 1];
    } else if (flag == "--load-ms") {
      load_ms = value;
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  auto make = clef::server::testing::fake_factory(control);
  auto slow_load = [make, load_ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(load_ms));
    return make();
  };
  return clef::server::serve_until_signal(config, slow_load, std::cout, std::cerr);
}
