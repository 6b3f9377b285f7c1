// `clef tune` end to end on the tiny test model: it trains, validates, checkpoints and writes a
// head that loads strictly and that `clef ask --head` serves; a resumed run gives the bytes of an
// uninterrupted one; Ctrl-C leaves the last complete checkpoint; bad inputs are refused naming
// the file and line, before the backbone runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "head/head_weights.hpp"
#include "json/parse.hpp"
#include "support/tiny_model.hpp"

namespace {

namespace fs = std::filesystem;

struct Ran {
  int exit_code = -1;
  std::string output;
};

/// `clef ARGS` (stdout and stderr together).
Ran clef(const std::string& args, const fs::path& log) {
  const std::string command =
      std::string(CLEF_BINARY_DIR) + "/clef " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, clef::test::read_bytes(log)};
}

/// One labeled line of the keyword task (bench/tune_synthetic.py's, smaller): the state names the
/// team and says whether there is an outage.
std::string record(std::mt19937& rng, int i, const std::string& gold_team = "") {
  static const char* teams[] = {"billing", "identity", "network", "storage"};
  const std::string team = teams[rng() % 4];
  const bool outage = rng() % 2 == 0;
  const std::string state = "ticket " + std::to_string(i) + ": the customer says " + team + " is " +
                            (outage ? "down, an outage" : "slow today") + " at work";
  return R"({"id": "r)" + std::to_string(i) + R"(", "state": ")" + state +
         R"(", "questions": {"team": {"type": "choice", "criteria": {"billing": "Billing", )"
         R"("identity": "Identity", "network": "Network", "storage": "Storage"}}, )"
         R"("outage": {"type": "noul"}}, "gold": {"team": ")" +
         (gold_team.empty() ? team : gold_team) + R"(", "outage": )" + (outage ? "true" : "false") +
         "}}\n";
}

class TuneCommand : public ::testing::Test {
 protected:
  clef::test::TempDir dir{"clef-tune-cli"};
  fs::path train = dir.path() / "train.jsonl";
  fs::path validation = dir.path() / "validation.jsonl";
  std::string model;

  void SetUp() override {
    const auto& m = clef::test::tiny_model();
    model = " --model " + m.backbone.string() + " --head " + m.head.string() + " --threads 1";
    std::mt19937 rng(5);
    std::ofstream t(train);
    for (int i = 0; i < 24; ++i) t << record(rng, i);
    std::ofstream v(validation);
    for (int i = 100; i < 108; ++i) v << record(rng, i);
  }

  std::string data() const {
    return " --data " + train.string() + " --validation " + validation.string();
  }
  fs::path log(const char* name) const { return dir.path() / name; }
};

TEST_F(TuneCommand, TrainsValidatesCheckpointsAndWritesAHeadThatServes) {
  const fs::path out = dir.path() / "out";
  const Ran r = clef("tune" + model + data() + " --out " + out.string() +
                         " --epochs 3 --patience 0 --lr 3e-3 --batch-size 8 --force",
                     log("tune.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rows, computed once: 32 records"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch 0: initial head, validation Brier"), std::string::npos);
  EXPECT_NE(r.output.find("epoch 3: train loss"), std::string::npos) << r.output;
  // The written head: the reference's names and shapes, strictly.
  const clef::head::HeadWeights tuned = clef::head::HeadWeights::load_dir(out);
  const clef::head::HeadWeights initial = clef::head::HeadWeights::load(
      clef::test::tiny_model().head,
      clef::test::tiny_model().head.parent_path() / "joint_head_config.json");
  std::size_t changed = 0;
  for (const auto& [name, t] : tuned.tensors()) {
    if (t.values != initial.at(name).values) ++changed;
  }
  EXPECT_GT(changed, tuned.tensors().size() / 2);
  const clef::json::Value report =
      clef::json::parse(clef::test::read_bytes(out / "tune_report.json"));
  EXPECT_EQ(report.find("epochs")->items().size(), 4u);
  EXPECT_EQ(report.find("training_records")->integer_digits(), "24");
  EXPECT_NE(report.find("validation")->find("team"), nullptr);
  EXPECT_TRUE(fs::exists(out / "checkpoint" / "optimizer.safetensors"));

  // clef ask serves it, and its answer is not the published head's.
  const fs::path request = dir.path() / "request.json";
  std::ofstream(request) << R"({"state": "the customer says network is down, an outage",)"
                            R"( "questions": {"outage": {"type": "noul"}}})";
  const auto& m = clef::test::tiny_model();
  const Ran tuned_answer = clef("ask --model " + m.backbone.string() + " --head " +
                                    (out / "joint_head.safetensors").string() +
                                    " --threads 1 --request " + request.string(),
                                log("ask1.txt"));
  ASSERT_EQ(tuned_answer.exit_code, 0) << tuned_answer.output;
  const Ran published = clef("ask" + model + " --request " + request.string(), log("ask2.txt"));
  ASSERT_EQ(published.exit_code, 0) << published.output;
  EXPECT_NE(tuned_answer.output, published.output);

  // A second run into the same folder needs --force.
  const Ran again = clef("tune" + model + data() + " --out " + out.string(), log("again.txt"));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("--force"), std::string::npos) << again.output;
}

TEST_F(TuneCommand, AResumedRunGivesTheBytesOfAnUninterruptedOne) {
  // A constant rate: the run may be resumed for more epochs than it first had.
  const std::string settings =
      " --patience 0 --lr 3e-3 --batch-size 8 --force --seed 3 --schedule constant";
  const fs::path whole = dir.path() / "whole";
  const fs::path split = dir.path() / "split";
  ASSERT_EQ(clef("tune" + model + data() + " --out " + whole.string() + " --epochs 3" + settings,
                 log("whole.txt"))
                .exit_code,
            0);
  ASSERT_EQ(clef("tune" + model + data() + " --out " + split.string() + " --epochs 1" + settings,
                 log("split1.txt"))
                .exit_code,
            0);
  const Ran resumed =
      clef("tune" + model + data() + " --out " + split.string() + " --epochs 3 --resume" + settings,
           log("split2.txt"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming after epoch 1"), std::string::npos) << resumed.output;
  for (const char* f : {"checkpoint/head.safetensors", "checkpoint/optimizer.safetensors",
                        "joint_head.safetensors"}) {
    EXPECT_EQ(clef::test::read_bytes(whole / f), clef::test::read_bytes(split / f)) << f;
  }
  // A resumed run marks "(best)" as the whole run does (a reported input: it forgot the epochs
  // before the resume).
  const std::string whole_output = clef::test::read_bytes(log("whole.txt"));
  for (const char* epoch : {"epoch 2:", "epoch 3:"}) {
    const auto line_of = [&](const std::string& text) {
      const std::size_t at = text.find(epoch);
      return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
    };
    ASSERT_FALSE(line_of(resumed.output).empty()) << resumed.output;
    EXPECT_EQ(line_of(resumed.output).ends_with("(best)"),
              line_of(whole_output).ends_with("(best)"))
        << epoch;
  }
  // A run of 3 epochs resumed with --epochs 3 has nothing to train: said, not silently done.
  const Ran done =
      clef("tune" + model + data() + " --out " + split.string() + " --epochs 3 --resume" + settings,
           log("done.txt"));
  EXPECT_EQ(done.exit_code, 2) << done.output;
  EXPECT_NE(done.output.find("has 3 epochs, --epochs 3 asks for no more: give --epochs above 3"),
            std::string::npos)
      << done.output;
  // Other settings cannot resume it.
  const Ran other = clef("tune" + model + data() + " --out " + split.string() +
                             " --epochs 4 --resume --patience 0 --lr 1e-3 --batch-size 8 "
                             "--schedule constant",
                         log("other.txt"));
  EXPECT_EQ(other.exit_code, 2);
  // It names what differs (session 7 left it as "other data, model or settings").
  EXPECT_NE(other.output.find("differs from this run in --lr (0.003 there, 0.001 here), --seed (3 "
                              "there, 0 here); start anew (--force)"),
            std::string::npos)
      << other.output;
  // Other data: named by its option, the hashes not shown.
  const fs::path more = dir.path() / "more.jsonl";
  fs::copy_file(train, more);
  std::ofstream(more, std::ios::app) << "\n";
  const Ran other_data =
      clef("tune" + model + " --data " + more.string() + " --validation " + validation.string() +
               " --out " + split.string() + " --epochs 4 --resume" + settings,
           log("other_data.txt"));
  EXPECT_EQ(other_data.exit_code, 2);
  EXPECT_NE(other_data.output.find("differs from this run in --data (sha256); start anew"),
            std::string::npos)
      << other_data.output;
}

TEST_F(TuneCommand, CtrlCLeavesTheLastCompleteCheckpoint) {
  const fs::path out = dir.path() / "out";
  const std::string settings = " --epochs 6 --patience 0 --batch-size 1 --seed 4 --schedule cosine";
  const std::string args = "tune" + model + data() + " --out " + out.string() + settings;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string command = std::string(CLEF_BINARY_DIR) + "/clef " + args + " > " +
                                log("ctrlc.txt").string() + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  int status = 0;
  while (!fs::exists(out / "checkpoint" / "state.json") &&
         std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      FAIL() << "clef tune ended before its first checkpoint: "
             << clef::test::read_bytes(log("ctrlc.txt"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!fs::exists(out / "checkpoint" / "state.json")) ::kill(pid, SIGKILL);
  ASSERT_TRUE(fs::exists(out / "checkpoint" / "state.json"));
  ::kill(pid, SIGINT);
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string output = clef::test::read_bytes(log("ctrlc.txt"));
  EXPECT_NE(output.find("interrupted; the checkpoint after epoch"), std::string::npos) << output;
  EXPECT_NE(output.find("--resume"), std::string::npos);
  EXPECT_FALSE(fs::exists(out / "joint_head.safetensors"));
  const clef::json::Value state =
      clef::json::parse(clef::test::read_bytes(out / "checkpoint" / "state.json"));
  EXPECT_GE(std::stoi(state.find("epoch")->integer_digits()), 1);

  // --resume finishes it with the bytes of a run never interrupted.
  const Ran resumed = clef(args + " --resume", log("resumed.txt"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const fs::path whole = dir.path() / "whole";
  ASSERT_EQ(clef("tune" + model + data() + " --out " + whole.string() + settings, log("whole.txt"))
                .exit_code,
            0);
  for (const char* f : {"checkpoint/head.safetensors", "checkpoint/optimizer.safetensors",
                        "checkpoint/best_head.safetensors", "joint_head.safetensors"}) {
    EXPECT_EQ(clef::test::read_bytes(whole / f), clef::test::read_bytes(out / f)) << f;
  }
}

TEST_F(TuneCommand, TrainsWithTheRecipesAugmentations) {
  const fs::path out = dir.path() / "augmented";
  const std::string args = "tune" + model + data() + " --out " + out.string() +
                           " --epochs 2 --patience 0 --force --shuffle-options --yes-no-share 0.5";
  const Ran r = clef(args, log("augmented.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rows, computed once: 8 records"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("validation only"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch 2: train loss"), std::string::npos) << r.output;
  const clef::json::Value report =
      clef::json::parse(clef::test::read_bytes(out / "tune_report.json"));
  EXPECT_TRUE(report.find("shuffle_options")->as_bool());
  // The same run again gives the same bytes (each visit drawn from the seed, epoch and record).
  const fs::path again = dir.path() / "again";
  ASSERT_EQ(clef("tune" + model + data() + " --out " + again.string() +
                     " --epochs 2 --patience 0 --force --shuffle-options --yes-no-share 0.5",
                 log("again.txt"))
                .exit_code,
            0);
  EXPECT_EQ(clef::test::read_bytes(out / "checkpoint" / "head.safetensors"),
            clef::test::read_bytes(again / "checkpoint" / "head.safetensors"));
}

TEST_F(TuneCommand, AHeadNoBetterThanTheInitialOneIsNotWritten) {
  // A reported input: every trained epoch validated worse than the initial head, yet the best of
  // them was written and the run exited 0. An absurd rate makes every epoch worse.
  const fs::path out = dir.path() / "worse";
  const std::string args =
      "tune" + model + data() + " --out " + out.string() + " --epochs 2 --patience 0 --lr 1";
  Ran r = clef(args, log("worse.txt"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no epoch validated better than the initial head"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out / "joint_head.safetensors"));
  r = clef(args + " --force", log("worse_forced.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--force: epoch"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out / "joint_head.safetensors"));
}

/// Issue 50 (noticed in session 7): only a head in --out was refused without --force; another
/// head's config or an earlier report beside no head was overwritten silently.
TEST_F(TuneCommand, NoFileTheRunWritesIsOverwrittenWithoutForce) {
  for (const char* name : {"joint_head_config.json", "tune_report.json"}) {
    const fs::path out = dir.path() / (std::string("holds-") + name);
    fs::create_directories(out);
    std::ofstream(out / name) << "{\"mine\": true}\n";
    const Ran r = clef("tune" + model + data() + " --out " + out.string(), log("holds.txt"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("already holds a " + std::string(name) +
                            ": give another folder, or --force to overwrite it"),
              std::string::npos)
        << r.output;
    std::ifstream in(out / name);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()),
              "{\"mine\": true}\n");
  }
}

TEST_F(TuneCommand, AFolderInUseByAnotherRunIsRefused) {
  const fs::path out = dir.path() / "busy";
  fs::create_directories(out);
  const int fd = ::open((out / ".clef-tune.lock").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const Ran r = clef("tune" + model + data() + " --out " + out.string(), log("busy.txt"));
  ::close(fd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("in use by another clef tune run"), std::string::npos) << r.output;
}

TEST_F(TuneCommand, BadInputsAreRefusedNamingTheFileAndLine) {
  const fs::path out = dir.path() / "out";
  std::mt19937 rng(9);
  // A gold option the question does not have (line 2).
  const fs::path bad_gold = dir.path() / "bad_gold.jsonl";
  std::ofstream(bad_gold) << record(rng, 1) << record(rng, 2, "marketing");
  Ran r = clef("tune" + model + " --data " + bad_gold.string() + " --validation " +
                   validation.string() + " --out " + out.string(),
               log("bad_gold.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(bad_gold.string() + " line 2: gold.team: \"marketing\" is not one of the "
                                              "question's options (billing, identity, network, "
                                              "storage)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("[backbone rows]"), std::string::npos);

  // A record longer than the context is refused with its token count, never truncated.
  const fs::path long_state = dir.path() / "long.jsonl";
  {
    std::string state;
    for (int i = 0; i < 200; ++i) state += "the billing system is slow ";
    std::ofstream f(long_state);
    f << record(rng, 1);
    f << R"({"state": ")" << state
      << R"(", "questions": {"outage": {"type": "noul"}}, "gold": {"outage": false}})"
      << "\n";
  }
  r = clef("tune" + model + " --context-size 512 --data " + long_state.string() + " --validation " +
               validation.string() + " --out " + out.string(),
           log("long.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(long_state.string() + " line 2: the record is "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tokens, over the context of 512"), std::string::npos) << r.output;

  // Validation records that are training records.
  r = clef("tune" + model + " --data " + train.string() + " --validation " + train.string() +
               " --out " + out.string(),
           log("overlap.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("is also a training record"), std::string::npos) << r.output;

  // An empty file; --resume with nothing to resume.
  const fs::path empty = dir.path() / "empty.jsonl";
  std::ofstream(empty) << "\n";
  r = clef("tune" + model + " --data " + empty.string() + " --out " + out.string(),
           log("empty.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("no labeled records"), std::string::npos) << r.output;
  r = clef("tune" + model + data() + " --out " + (dir.path() / "fresh").string() + " --resume",
           log("resume.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("holds no checkpoint"), std::string::npos) << r.output;

  // The same request twice in one file: refused whatever the seed (a reported input: the holdout
  // split refused it or not by chance), naming both lines.
  const fs::path twice = dir.path() / "twice.jsonl";
  {
    std::ifstream in(train);
    std::string first;
    std::getline(in, first);
    std::ofstream f(twice);
    // Line 3 repeats line 1's request without its id (ids are checked on their own).
    std::string again = first;
    again.erase(again.find(R"("id": "r0", )"), std::string(R"("id": "r0", )").size());
    f << first << "\n" << record(rng, 50) << again << "\n";
  }
  for (const char* seed : {"0", "2", "5"}) {
    r = clef(
        "tune" + model + " --data " + twice.string() + " --seed " + seed + " --out " + out.string(),
        log("twice.txt"));
    EXPECT_EQ(r.exit_code, 2) << seed;
    EXPECT_NE(r.output.find(twice.string() + " line 3: the same request as " + twice.string() +
                            " line 1"),
              std::string::npos)
        << r.output;
  }

  // Flags out of range (reported inputs): a negative seed or memory size, and a range message that
  // says its own bounds.
  r = clef("tune" + model + data() + " --out " + out.string() + " --seed -1", log("seed.txt"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = clef("tune" + model + data() + " --out " + out.string() + " --rows-memory -5",
           log("rows.txt"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = clef("tune" + model + data() + " --out " + out.string() + " --lr 1e-12", log("lr.txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("a number in 1e-09..1 is needed, got 1e-12"), std::string::npos)
      << r.output;

  // None of these refusals left the --out folder behind (a reported input: an empty one was).
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
