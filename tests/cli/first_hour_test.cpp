// A user's first hour with the `clef` binary (issue 45): nothing silently wrong, and every message
// says what to do next. Runs the built executable as a user would.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/tiny_model.hpp"

namespace {

const std::filesystem::path kClef = std::filesystem::path(CLEF_BINARY_DIR) / "clef";

struct Ran {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr
};

/// `env clef ARGS 2>&1`.
Ran run(const std::string& args, const std::string& env = "") {
  Ran r;
  std::string cmd = "env ";
  cmd += env;
  cmd += " '";
  cmd += kClef.string();
  cmd += "' ";
  cmd += args;
  cmd += " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class FirstHour : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kClef)) GTEST_SKIP() << kClef << " is not built";
  }
};

TEST_F(FirstHour, ServeWithoutAModelNamesTheThreeWaysToGiveOne) {
  const Ran r = run("serve");
  EXPECT_NE(r.exit_code, 0);
  for (const char* way : {"--demo", "clef-flash:9b", "--model-dir", "clef models"}) {
    EXPECT_NE(r.output.find(way), std::string::npos) << way << "\n" << r.output;
  }
}

TEST_F(FirstHour, OfflineWithoutTheFilesSaysHowToGetThem) {
  clef::test::TempDir home("clef-first-offline");
  const Ran r = run("serve clef-flash:9b --offline", "XDG_CACHE_HOME=" + home.path().string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("`clef pull clef-flash:9b-q4`"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(home.path() / "clef")) << "the store was touched";
}

TEST_F(FirstHour, WithoutANetworkTheDownloadIsListedFirstAndNoEmptyStoreIsLeft) {
  // clef-flash and Clef 27B (issue 44) alike.
  for (const auto& [reference, name, pinned] :
       {std::tuple<std::string, std::string, std::string>{"clef-flash:9b", "clef-flash",
                                                          "Cloudflare_clef-flash-Q4_K_M.gguf"},
        {"clef:27b", "clef", "Cloudflare_clef-Q4_K_M.gguf  16.02 GiB"}}) {
    SCOPED_TRACE(reference);
    clef::test::TempDir home("clef-first-nonet");
    // Port 1 on loopback: connection refused at once, as on a machine without a network.
    const Ran r = run("serve " + reference + " --hub-endpoint http://127.0.0.1:1",
                      "XDG_CACHE_HOME=" + home.path().string());
    EXPECT_NE(r.exit_code, 0);
    const std::size_t plan = r.output.find("file(s) to download into");
    // The hub is unreachable; on a machine short of disk space the plan stops before it.
    const bool no_room = r.output.find("not enough free space") != std::string::npos;
    const std::size_t failure = r.output.find(no_room ? "not enough free space" : "cannot reach");
    ASSERT_NE(plan, std::string::npos) << r.output;
    ASSERT_NE(failure, std::string::npos) << r.output;
    EXPECT_LT(plan, failure) << "the files are listed before the hub is needed\n" << r.output;
    EXPECT_NE(r.output.find(pinned), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("GiB"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("free there"), std::string::npos) << r.output;
    if (!no_room) {
      EXPECT_NE(r.output.find("check the network"), std::string::npos) << r.output;
    }
    std::error_code ec;
    EXPECT_FALSE(std::filesystem::exists(home.path() / "clef" / "models" / name, ec))
        << "an empty store directory was left behind";
  }
}

TEST_F(FirstHour, ModelsDoesNotPassAPartialSizeOffAsTheTotal) {
  clef::test::TempDir home("clef-first-models");
  const Ran r = run("models", "XDG_CACHE_HOME=" + home.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t q8 = r.output.find("clef-flash:9b-q8");
  ASSERT_NE(q8, std::string::npos) << r.output;
  const std::string line = r.output.substr(q8, r.output.find('\n', q8) - q8);
  EXPECT_NE(line.find("at least"), std::string::npos) << line;
  EXPECT_NE(line.find("not counted: model"), std::string::npos) << line;
}

/// `clef ask` on the tiny model with a request of a ~2,400-token state and `rest` (the JSON after
/// the state's value: more fields and the questions), written into `dir`; `flags` for ask.
Ran ask_long_state(const clef::test::TempDir& dir, const std::string& rest,
                   const std::string& flags = "") {
  const auto& m = clef::test::tiny_model();
  std::string state;
  for (int i = 0; i < 300; ++i) state += "the database server timed out again ";
  const auto request = dir.path() / "long.json";
  std::ofstream(request) << R"({"state":")" << state << R"(",)" << rest << "}";
  return run("ask --model " + m.backbone.string() + " --head " + m.head.string() + " --threads 1 " +
             flags + " --request " + request.string());
}

TEST_F(FirstHour, AskSaysWhenTheStateWasCutAndWhichFieldsWereIgnored) {
  clef::test::TempDir dir("clef-first-ask");
  const Ran r = ask_long_state(dir,
                               R"("temperature":0,"\u001b[2J\nclef: fake line":1,"a b":2,)"
                               R"("questions":{"q":{"type":"noul","instruction":"?"}})",
                               "--context-size 512");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: the state was cut to fit: its last "), std::string::npos)
      << r.output;
  // Quoted as JSON strings (a reported input: a key with an escape sequence and a newline cleared
  // the terminal and forged a log line; "a b" read as two fields).
  EXPECT_NE(r.output.find(R"(ignored: "temperature", "\u001b[2J\nclef: fake line", "a b", )"
                          R"("questions.q.instruction" ()"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "a raw escape byte reached the terminal";
  EXPECT_EQ(r.output.find("\nclef: fake line"), std::string::npos) << r.output;
}

/// A reported input: a state cut by the request's own max_length got advice (a larger
/// --context-size, --truncation refuse) that changed nothing.
TEST_F(FirstHour, AskSaysWhenTheRequestsOwnMaxLengthCutTheState) {
  clef::test::TempDir dir("clef-first-maxlen");
  const Ran r = ask_long_state(dir, R"("max_length":300,"questions":{"q":{"type":"noul"}})");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the request's own max_length / max_state_tokens cut it"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("a larger --context-size"), std::string::npos) << r.output;
}

TEST_F(FirstHour, VerboseIsClefsOwnLinesAndDebugAddsTheLoaderLog) {
  const auto& m = clef::test::tiny_model();
  const std::string args = "ask --model " + m.backbone.string() + " --head " + m.head.string() +
                           " --threads 1 --request " + std::string(CLEF_SOURCE_DIR) +
                           "/examples/card.json";
  const Ran verbose = run(args + " --verbose");
  ASSERT_EQ(verbose.exit_code, 0) << verbose.output;
  EXPECT_NE(verbose.output.find("timings (ms)"), std::string::npos) << verbose.output;
  EXPECT_EQ(verbose.output.find("llama_model_loader"), std::string::npos) << verbose.output;
  // ask decides one request: no state cache unless a size is given (it only cut the prefill)
  EXPECT_NE(verbose.output.find("state cache: off (one decision"), std::string::npos)
      << verbose.output;
  const Ran sized = run(args + " --verbose --state-cache-mb 16");
  ASSERT_EQ(sized.exit_code, 0) << sized.output;
  EXPECT_NE(sized.output.find("state cache: up to 16 MiB"), std::string::npos) << sized.output;
  const auto answer = [](const std::string& out) {  // the line the response body is
    const std::size_t at = out.rfind("\n{");
    return at == std::string::npos ? std::string()
                                   : out.substr(at + 1, out.find('\n', at + 1) - at - 1);
  };
  EXPECT_FALSE(answer(verbose.output).empty()) << verbose.output;
  EXPECT_EQ(answer(sized.output), answer(verbose.output)) << "the same answer with the cache";
  const Ran debug = run(args + " --debug");
  ASSERT_EQ(debug.exit_code, 0) << debug.output;
  EXPECT_NE(debug.output.find("llama_model_loader"), std::string::npos);
}

/// Reported inputs: numbers out of range turned a limit off (--max-body -1 buffered 300 MiB,
/// --max-vision-memory -1 published a negative limit, verify --limit -1 ran everything), crashed
/// (--threads 100000 died in libgomp after "listening") or made a verdict meaningless (a NaN bar
/// passed every run). Each is refused at once (exit 2) naming the flag, before any model loads.
TEST_F(FirstHour, NumbersOutOfRangeAreRefusedNamingTheFlag) {
  const std::string model = " --model-dir /nonexistent-model-dir";
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"serve --demo --threads 100000", "--threads"},
           {"serve --demo --set threads=100000", "threads must be in 0..512"},
           {"serve --demo --max-body -1", "--max-body"},
           {"serve --demo --max-body 99999999999999999999999", "--max-body"},
           {"serve --demo --prepare-memory -1", "a size of 0 or more is needed, got -1"},
           {"serve --demo --prepare-memory-per-request -1", "--prepare-memory-per-request"},
           {"serve --demo --body-buffer -1", "--body-buffer"},
           // A breaker's inputs: with a unit, -1b passed as 2^64 - 1 (no limit), a size over
           // 64 bits was taken as 2^64 - 1, and 0x40 as hexadecimal.
           {"serve --demo --prepare-memory -1b", "a size of 0 or more is needed, got -1b"},
           {"serve --demo --prepare-memory-per-request -0KiB", "--prepare-memory-per-request"},
           {"serve --demo --prepare-memory 99999999999999999999",
            "a size of at most 18446744073709551615 bytes is needed"},
           {"serve --demo --max-body 0x40", "a size is whole decimal bytes"},
           {"serve --demo --max-body 63", "--max-body"},
           {"serve --demo --max-vision-memory -1", "--max-vision-memory"},
           {"verify --limit=-1" + model, "--limit"},
           {"verify --max-dp nan" + model, "--max-dp"},
           // A reported input: NaN passed CLI11's Range, and /v1/models then rendered NaN.
           {"serve --demo --max-video-seconds nan", "--max-video-seconds"},
           {"verify --argmax-rate 5" + model, "--argmax-rate"},
           {"verify --mean-dp -1" + model, "--mean-dp"},
           {"calibrate --data /dev/null -o /tmp/x --folds 1" + model, "--folds"},
           {"calibrate --data /dev/null -o /tmp/x --min-per-question -1" + model,
            "--min-per-question"}}) {
    SCOPED_TRACE(args);
    const Ran r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(flag), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("listening"), std::string::npos) << r.output;
  }
}

/// Issue 53, found as a new user: `clef serve DIR` (a folder of model files given as the model)
/// said "no such file" instead of pointing to --model-dir.
TEST_F(FirstHour, AFolderGivenAsTheModelPointsToModelDir) {
  clef::test::TempDir dir("clef-first-model-folder");
  for (const std::string& args : {"serve " + dir.path().string() + " --port 0",
                                  "ask --model " + dir.path().string() + " --request x.json"}) {
    const Ran r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("is a directory: a folder of model files is --model-dir " +
                            dir.path().string()),
              std::string::npos)
        << args << "\n"
        << r.output;
  }
}

/// Issue 53 (noticed in issues 43-45): `--device cpu --gpu-layers 5` was taken silently.
TEST_F(FirstHour, ALayerCountForTheGpuWithTheCpuAsDeviceIsRefused) {
  const auto& m = clef::test::tiny_model();
  for (const char* layers : {"--gpu-layers 5", "--set gpu_layers=5"}) {
    const Ran r = run("ask --model-dir " + m.backbone.parent_path().string() + " --device cpu " +
                      layers + " --request x.json");
    EXPECT_EQ(r.exit_code, 2) << layers << "\n" << r.output;
    EXPECT_NE(r.output.find("with --device cpu: the CPU runs every layer"), std::string::npos)
        << layers << "\n"
        << r.output;
  }
}

/// A reported input: a directory as verify's fixture exited 1 (a FAIL verdict's code) with a
/// C++ stream error.
TEST_F(FirstHour, AFixtureThatIsADirectoryIsAUsageError) {
  const Ran r = run("verify --fixture " + std::filesystem::temp_directory_path().string() +
                    " --model-dir /nonexistent-model-dir");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is a directory; give the fixture file"), std::string::npos) << r.output;
}

/// A reported input: calibrate found an unwritable --out, --plot or --json only after deciding
/// every request (hours on a real model), and blamed a full disk. Refused before the model loads.
TEST_F(FirstHour, UnwritableOutputsAreRefusedBeforeTheRun) {
  const auto& m = clef::test::tiny_model();
  const std::string base =
      "calibrate --model " + m.backbone.string() + " --head " + m.head.string() + " --data " +
      (std::filesystem::path(CLEF_SOURCE_DIR) / "examples/labeled.jsonl").string();
  const std::string tmp = std::filesystem::temp_directory_path().string();
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {" -o /nonexistent-dir/cal.json", "no directory /nonexistent-dir"},
           {" -o " + tmp, "it is a directory"},
           {" -o " + tmp + "/clef-cal-unused.json --plot /nonexistent-dir/p.svg", "p.svg"},
           {" -o " + tmp + "/clef-cal-unused.json --json /nonexistent-dir/r.json", "r.json"}}) {
    SCOPED_TRACE(args);
    const Ran r = run(base + args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("accuracy"), std::string::npos) << "the run went ahead\n" << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(tmp + "/clef-cal-unused.json"));
}

/// A new user's second `serve --demo` on a busy port said "address in use or not local?" and
/// nothing of --port.
TEST_F(FirstHour, ABusyPortNamesPortAndPortZero) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const Ran r = run("serve --demo --threads 1 --port " + std::to_string(ntohs(addr.sin_port)));
  ::close(fd);
  // Exit 2, as every other start refusal (issue 53: it was 1, an internal error's code).
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--port N takes another, --port 0 any free one"), std::string::npos)
      << r.output;
}

}  // namespace

/// Issue 53, found as a new user: `clef models verify NAME --models-dir X` was refused (only
/// `clef models --models-dir X verify NAME` worked) without saying so. The store's options are
/// taken after `verify` and `rm` as before them.
TEST_F(FirstHour, TheStoreOptionsAreTakenAfterModelsSubcommands) {
  clef::test::TempDir store("clef-first-models-store");
  const Ran before = run("models --models-dir " + store.path().string() + " verify clef-flash:9b");
  const Ran after = run("models verify clef-flash:9b --models-dir " + store.path().string());
  EXPECT_NE(before.output.find(store.path().string()), std::string::npos) << before.output;
  EXPECT_EQ(after.exit_code, before.exit_code) << after.output;
  EXPECT_EQ(after.output, before.output);
  const Ran rm = run("models rm clef-flash:9b --models-dir " + store.path().string());
  EXPECT_EQ(rm.exit_code, 0) << rm.output;
  EXPECT_NE(rm.output.find("nothing stored at " + store.path().string()), std::string::npos)
      << rm.output;
}

/// Issue 53, found as a new user: `clef serve --set cpu_amx=on` on a CPU without AMX printed
/// "listening on" before it exited: a wrapper reading the port took it for a started server. It is
/// refused before the server listens, naming the setting.
TEST_F(FirstHour, AmxDemandedOnACpuWithoutItIsRefusedBeforeListening) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string flags{std::istreambuf_iterator<char>(cpuinfo),
                          std::istreambuf_iterator<char>()};
  if (flags.find(" amx_int8") != std::string::npos) GTEST_SKIP() << "this CPU has AMX";
  const Ran r = run("serve --demo --port 0 --set cpu_amx=on");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find("listening on"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cpu_amx=on: no AMX here"), std::string::npos) << r.output;
}

/// Issue 53 (noticed in issues 43-45): `--set` won over its own flag whatever their order
/// (`--threads 4 --set threads=2` and `--set threads=2 --threads 4` both ran 2 threads). A setting
/// given both ways is refused, naming both.
TEST_F(FirstHour, ASettingGivenAsItsFlagAndAsSetIsRefused) {
  const std::string dir = clef::test::tiny_model().backbone.parent_path().string();
  for (const char* args :
       {"--threads 2 --set threads=1", "--set threads=1 -t 2", "-c 4096 --set context_size=2048",
        "--set parallel=2 --parallel 3", "--device cpu --set device=cpu"}) {
    const Ran r = run("ask --model-dir " + dir + " " + std::string(args) + " --request x.json");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("both set"), std::string::npos) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(": give it once"), std::string::npos) << args << "\n" << r.output;
  }
  // A breaker's input: the same --set twice kept the last one silently.
  const Ran twice = run("ask --model-dir " + dir +
                        " --set context_size=100 --set context_size=1024 --request x.json");
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("--set context_size=100 and --set context_size=1024 both set "
                              "context_size: give it once"),
            std::string::npos)
      << twice.output;
  // One way alone is taken as before.
  const Ran one = run("ask --model-dir " + dir + " --set threads=1 --request /nonexistent.json");
  EXPECT_EQ(one.output.find("both set"), std::string::npos) << one.output;
}
