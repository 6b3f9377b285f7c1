// The built `clef` executable: `clef info` accepts the tiny model (exit 0), names the CPU's matrix
// path, and refuses a non-GGUF with exit code 2 and a clear message; `clef make-test-model`
// writes a loadable directory.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "support/tiny_model.hpp"

namespace {

const std::filesystem::path kClef = std::filesystem::path(CLEF_BINARY_DIR) / "clef";

struct Ran {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr
};

Ran run(const std::string& args) {
  Ran r;
  std::string cmd = "'";  // built with += (GCC 12 warns falsely on a chain of operator+)
  cmd += kClef.string();
  cmd += "' ";
  cmd += args;
  cmd += " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(ClefBinary, InfoAcceptsTheTinyModelAndRefusesANonGguf) {
  if (!std::filesystem::exists(kClef)) GTEST_SKIP() << kClef << " is not built";
  const auto dir = clef::test::tiny_model().backbone.parent_path();
  const Ran ok = run("info '" + dir.string() + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("qwen35"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("qwen3vl_merger"), std::string::npos) << ok.output;
  // which CPU path runs, and no word from ggml's AMX probe on a CPU without AMX
  EXPECT_NE(ok.output.find("CPU matrix path (cpu_amx=auto): "), std::string::npos) << ok.output;
  EXPECT_EQ(ok.output.find("AMX is not ready"), std::string::npos) << ok.output;

  clef::test::TempDir tmp;
  const auto junk = tmp.path() / "junk.gguf";
  std::ofstream(junk) << "not a model";
  const Ran bad = run("info '" + junk.string() + "'");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("is not a GGUF file"), std::string::npos) << bad.output;
}

/// `clef serve` and `clef ask` take a model as --model-dir DIR; `clef info --model-dir DIR` was
/// refused (it took DIR only as a positional). It reports the same model; DIR given twice is
/// refused, naming the option.
TEST(ClefBinary, InfoTakesTheModelDirAsServeDoes) {
  if (!std::filesystem::exists(kClef)) GTEST_SKIP() << kClef << " is not built";
  const auto dir = clef::test::tiny_model().backbone.parent_path();
  const Ran positional = run("info '" + dir.string() + "'");
  const Ran option = run("info --model-dir '" + dir.string() + "'");
  EXPECT_EQ(option.exit_code, 0) << option.output;
  EXPECT_NE(option.output.find("qwen35"), std::string::npos) << option.output;
  EXPECT_EQ(option.output, positional.output);
  const Ran both = run("info '" + dir.string() + "' --model-dir '" + dir.string() + "'");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("give the model once"), std::string::npos) << both.output;
  // A breaker's input: an empty --model-dir printed only the devices, as if none was given.
  const Ran empty = run("info --model-dir ''");
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("--model-dir is empty"), std::string::npos) << empty.output;
}

/// A new user's first `clef info` (no model yet) printed only "PATHS is required": it prints the
/// devices and the CPU path of this machine.
TEST(ClefBinary, InfoWithoutAModelListsTheDevicesAndTheCpuPath) {
  if (!std::filesystem::exists(kClef)) GTEST_SKIP() << kClef << " is not built";
  const Ran r = run("info");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("devices of this build:\n  CPU"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CPU matrix path (cpu_amx=auto): "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("backbone"), std::string::npos) << r.output;
  // ggml-vulkan's own notes at its load (issue 43: at every start of a CPU server, where lavapipe
  // is the only Vulkan device) stay out of the output; the devices are listed above.
  EXPECT_EQ(r.output.find("This is probably not the device you want"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("ggml_vulkan: Found"), std::string::npos) << r.output;
}

TEST(ClefBinary, MakeTestModelWritesADirectoryInfoAccepts) {
  if (!std::filesystem::exists(kClef)) GTEST_SKIP() << kClef << " is not built";
  clef::test::TempDir tmp;
  const Ran made = run("make-test-model '" + (tmp.path() / "m").string() + "' --seed 3");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const Ran info = run("info '" + (tmp.path() / "m").string() + "'");
  EXPECT_EQ(info.exit_code, 0) << info.output;
  const Ran bad_preset = run("make-test-model '" + (tmp.path() / "n").string() + "' --preset huge");
  EXPECT_NE(bad_preset.exit_code, 0);
}

}  // namespace
