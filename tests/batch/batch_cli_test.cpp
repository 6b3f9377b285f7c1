// `clef batch` from the command line (issue 53, noticed in issues 43-45): --endpoint takes one URL
// each time (it took IN and OUT after it as more endpoints), and a run in which a line got an
// error answer does not exit 0 (3: finished, with error answers; 1 stays "unfinished").

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "support/tiny_model.hpp"

namespace {

namespace fs = std::filesystem;

using clef::test::read_bytes;

/// `clef batch ARGS` (a shell line), its exit code.
int clef_batch(const std::string& args, const fs::path& log) {
  const std::string line =
      std::string(CLEF_BINARY_DIR) + "/clef batch " + args + " > " + log.string() + " 2>&1";
  const int raw = std::system(line.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

TEST(BatchCommand, EndpointBeforeInAndOutAndAnErrorAnswerIsNotExitZero) {
  const fs::path dir = fs::temp_directory_path() / ("clef-batch-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path in = dir / "in.jsonl";
  std::ofstream(in) << R"({"state": "a", "questions": {"q": {"type": "noul"}}})"
                    << "\n"
                    << R"({"state": "b", "questions": {"q": {"type": "noul"}}})"
                    << "\n";
  // A server that answers the second line with a 400 and the first with a decision.
  httplib::Server server;
  server.Post("/v1/decisions", [](const httplib::Request& req, httplib::Response& res) {
    if (req.body.find("\"b\"") != std::string::npos) {
      res.status = 400;
      res.set_content(R"({"error": {"type": "invalid_request_error", "message": "no"}})",
                      "application/json");
      return;
    }
    res.set_content(R"({"model": "m", "answers": {}, "usage": {"input_tokens": 1}})",
                    "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  server.wait_until_ready();
  const fs::path out = dir / "out.jsonl";
  const fs::path log = dir / "log.txt";
  const int code = clef_batch("--endpoint http://127.0.0.1:" + std::to_string(port) + " " +
                                  in.string() + " " + out.string() + " --retries 0",
                              log);
  server.stop();
  serving.join();
  const std::string records = read_bytes(out);
  EXPECT_NE(records.find("\"status\":200"), std::string::npos) << records << read_bytes(log);
  EXPECT_NE(records.find("\"status\":400"), std::string::npos) << records << read_bytes(log);
  EXPECT_EQ(code, 3) << read_bytes(log);  // every line has its record, one an error answer
  EXPECT_NE(read_bytes(log).find("1 line(s) got an error answer"), std::string::npos)
      << read_bytes(log);
  fs::remove_all(dir);
}

/// A local model's options beside --endpoint (the servers decide: they were ignored without a
/// word) are refused before anything is read or written, naming them.
TEST(BatchCommand, LocalModelOptionsBesideAnEndpointAreRefused) {
  const fs::path dir =
      fs::temp_directory_path() / ("clef-batch-cli-flags-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path in = dir / "in.jsonl";
  std::ofstream(in) << R"({"state": "a", "questions": {"q": {"type": "noul"}}})"
                    << "\n";
  const fs::path out = dir / "out.jsonl";
  const fs::path log = dir / "log.txt";
  const int code = clef_batch("--endpoint http://127.0.0.1:9 " + in.string() + " " + out.string() +
                                  " --threads 2 --model-dir /nowhere -v",
                              log);
  EXPECT_EQ(code, 2) << read_bytes(log);
  const std::string said = read_bytes(log);
  EXPECT_NE(said.find("--model-dir, --threads configure a local model"), std::string::npos) << said;
  EXPECT_EQ(said.find("--verbose"), std::string::npos) << "what clef prints is not refused";
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

}  // namespace
