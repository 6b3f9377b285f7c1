// `clef tune`: fit the joint schema head to a user's own labeled decisions on the frozen
// backbone (the published recipe's head-only phase): the rows once, then epochs of the recipe's
// training step, validation after every epoch, the best epoch written as a head `clef serve
// --head` serves and the authors' loader reads.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <ggml-backend.h>
#include <ggml-cpp.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "artifact/head_identity.hpp"
#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/option_kinds.hpp"
#include "cli/text_file.hpp"
#include "device/device.hpp"
#include "head/head_parameters.hpp"
#include "head/head_weights.hpp"
#include "json/render.hpp"
#include "runtime/make_engine.hpp"
#include "tune/augment.hpp"
#include "tune/checkpoint.hpp"
#include "tune/frozen_rows.hpp"
#include "tune/labeled_records.hpp"
#include "tune/tune_run.hpp"
#include "util/byte_size.hpp"
#include "util/digest.hpp"
#include "util/error.hpp"
#include "util/physical_memory.hpp"

namespace clef::cli {
namespace {

/// The run's report beside the head it writes.
constexpr std::string_view kReportFile = "tune_report.json";

namespace fs = std::filesystem;

struct TuneCommandOptions {
  EngineOptions engine;
  std::string data;
  std::string validation;
  double holdout = 0.2;
  std::string out;
  tune::TuneSettings settings;
  std::uint64_t rows_memory = 0;  ///< 0: half the machine's memory
  std::string dtype = "f32";
  std::string schedule = "constant";
  tune::AugmentSettings augment;
  std::int64_t seed = 0;  ///< --seed (settings.seed once checked)
  bool resume = false;
  bool force = false;
};

/// Ctrl-C asks the run to stop between batches (the last complete checkpoint stays); a second
/// Ctrl-C stops the process at once. Signal handlers can only reach a static flag.
std::atomic<int> g_interrupts{0};

extern "C" void on_interrupt(int) {
  if (g_interrupts.fetch_add(1) >= 1) std::_Exit(130);
}

/// Installs on_interrupt for SIGINT while it lives.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupts = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
  }
  ~InterruptGuard() { sigaction(SIGINT, &old_, nullptr); }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_ {};
};

/// The --out folder while a run uses it: made when missing, locked (flock on OUT/.clef-tune.lock,
/// so that a second run into the same folder is refused instead of swapping checkpoints under the
/// first), and removed again at the end when the run made it and left nothing in it (a refused
/// run leaves no empty folder behind).
class OutFolder {
 public:
  explicit OutFolder(const fs::path& out) : out_(out), made_(!fs::exists(out)) {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec || !fs::is_directory(out)) {
      throw invalid_request("--out " + out.string() + " cannot be made a folder" +
                                (ec ? ": " + ec.message() : std::string(": it is a file")),
                            "out");
    }
    lock_ = out / ".clef-tune.lock";
    fd_ = ::open(lock_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      remove_if_made();
      throw invalid_request("--out " + out.string() + " cannot be written", "out");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fd_ = -1;
      throw invalid_request("--out " + out.string() +
                                " is in use by another clef tune run: give another folder, or "
                                "wait for it to end",
                            "out");
    }
  }
  ~OutFolder() {
    if (fd_ < 0) return;
    std::error_code ec;
    fs::remove(lock_, ec);
    ::close(fd_);
    remove_if_made();
  }
  OutFolder(const OutFolder&) = delete;
  OutFolder& operator=(const OutFolder&) = delete;

 private:
  void remove_if_made() {
    std::error_code ec;
    if (made_) fs::remove(out_, ec);  // only when empty
  }
  fs::path out_;
  bool made_;
  fs::path lock_;
  int fd_ = -1;
};

std::string fixed(double v, int digits = 4) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string duration(double seconds) {
  const auto s = static_cast<long>(std::lround(std::max(0.0, seconds)));
  char b[32];
  std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return b;
}

/// The seeded split of `records` into training and validation (at least one of each).
void split(std::vector<tune::LabeledRecord>& records, double fraction, std::uint64_t seed,
           std::vector<tune::LabeledRecord>& validation) {
  if (records.size() < 2) {
    throw invalid_request("--data holds " + std::to_string(records.size()) +
                              " record: --holdout needs at least 2 (or give --validation FILE)",
                          "holdout");
  }
  auto n = static_cast<std::size_t>(std::lround(fraction * static_cast<double>(records.size())));
  n = std::clamp<std::size_t>(n, 1, records.size() - 1);
  const std::vector<std::size_t> order = tune::epoch_order(records.size(), seed, 0);
  std::vector<bool> held(records.size(), false);
  for (std::size_t k = 0; k < n; ++k) held[order[k]] = true;
  std::vector<tune::LabeledRecord> train;
  for (std::size_t i = 0; i < records.size(); ++i) {
    (held[i] ? validation : train).push_back(std::move(records[i]));
  }
  records = std::move(train);
}

/// `head_sha256`: the starting head file's SHA-256 (hashed once, by the caller).
/// What a run's checkpoint must share with a resumed run, named as the user gives it: the data's,
/// the starting head's and the backbone's sha256 and every setting the steps depend on.
tune::FingerprintParts fingerprint_parts(const TuneCommandOptions& o,
                                         const runtime::EngineConfig& config,
                                         const std::string& head_sha256) {
  const tune::TuneSettings& s = o.settings;
  tune::FingerprintParts parts = {
      {"--data (sha256)", util::sha256_file(o.data)},
      o.validation.empty()
          ? tune::FingerprintPart{"--holdout", fixed(o.holdout, 6)}
          : tune::FingerprintPart{"--validation (sha256)", util::sha256_file(o.validation)},
      {"the starting head (sha256)", head_sha256},
      {"the backbone (sha256)", util::sha256_file(config.backbone_path)},
      {"--lr", fixed(s.adamw.lr, 12)},
      {"--weight-decay", fixed(s.adamw.weight_decay, 12)},
      {"--batch-size", std::to_string(s.batch_size)},
      {"--max-grad-norm", fixed(s.max_grad_norm, 12)},
      {"--seed", std::to_string(s.seed)},
      {"--schedule", o.schedule},
      {"--shuffle-options", o.augment.shuffle_options ? "1" : "0"},
      {"--yes-no-share", fixed(o.augment.yes_no_share, 6)}};
  // A cosine schedule's rate at a step depends on the number of epochs; a constant one does not
  // (a constant-rate run may be resumed for more epochs).
  if (s.schedule == tune::TuneSettings::Schedule::cosine) {
    parts.push_back({"--epochs", std::to_string(s.epochs)});
  }
  return parts;
}

/// The checkpoint's fingerprint: the sha256 of `parts`' values, a line each (the settings on one
/// line, as checkpoints before the named parts hashed them).
std::string fingerprint(const tune::FingerprintParts& parts) {
  util::Digest d(util::Digest::Kind::sha256);
  const auto add = [&](const std::string& line) {
    d.update(std::span<const char>(line.data(), line.size()));
    d.update(std::span<const char>("\n", 1));
  };
  // The files' hashes (or the holdout share), the settings' line, then a cosine run's epochs.
  std::string settings;
  const std::string* epochs = nullptr;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i < 4) {
      add(parts[i].second);
    } else if (parts[i].first == "--epochs") {
      epochs = &parts[i].second;
    } else {
      settings += (settings.empty() ? "" : " ") + parts[i].second;
    }
  }
  add(settings);
  if (epochs != nullptr) add(*epochs);
  return d.hex();
}

/// What differs between a checkpoint's parts and this run's, by name ("" when the checkpoint holds
/// none: written before they were kept).
std::string differing_parts(const tune::FingerprintParts& then, const tune::FingerprintParts& now) {
  if (then.empty()) return "";
  std::string out;
  const auto value_in = [](const tune::FingerprintParts& parts, const std::string& name) {
    for (const auto& [n, v] : parts) {
      if (n == name) return std::optional<std::string>(v);
    }
    return std::optional<std::string>();
  };
  // A number as given (0.003, not the hashed 0.003000000000).
  const auto shown = [](const std::optional<std::string>& v) {
    if (!v) return std::string("none");
    std::string t = *v;
    if (t.find('.') != std::string::npos && t.find_first_not_of("0123456789.-") == t.npos) {
      while (t.ends_with('0')) t.pop_back();
      if (t.ends_with('.')) t.pop_back();
    }
    return t;
  };
  const auto add = [&out, &shown](const std::string& name, const std::optional<std::string>& a,
                                  const std::optional<std::string>& b) {
    out += (out.empty() ? "" : ", ") + name;
    if (name.find("sha256") == std::string::npos) {
      out += " (" + shown(a) + " there, " + shown(b) + " here)";
    }
  };
  for (const auto& [name, value] : then) {
    const auto mine = value_in(now, name);
    if (mine != value) add(name, value, mine);
  }
  for (const auto& [name, value] : now) {
    if (!value_in(then, name)) add(name, std::nullopt, value);
  }
  return out;
}

void print_metrics_row(const std::string& name, const tune::TuneMetrics& before,
                       const tune::TuneMetrics& after) {
  std::cout << "  " << name << ": questions " << after.questions << ", Brier "
            << fixed(before.brier) << " -> " << fixed(after.brier) << ", log loss "
            << fixed(before.log_loss) << " -> " << fixed(after.log_loss);
  if (after.single_answer > 0) {
    std::cout << ", accuracy " << fixed(100 * before.accuracy, 1) << "% -> "
              << fixed(100 * after.accuracy, 1) << "%, ECE " << fixed(before.ece) << " -> "
              << fixed(after.ece) << ", confidently wrong "
              << fixed(100 * before.confidently_wrong, 1) << "% -> "
              << fixed(100 * after.confidently_wrong, 1) << "%";
  }
  if (after.collapse_ids > 0) {
    std::cout << ", collapse " << fixed(100 * after.collapse, 1) << "% (near "
              << fixed(100 * after.near_collapse, 1) << "%)";
  }
  std::cout << "\n";
}

/// The trainer on the placement's device when that backend runs every op of the training graphs,
/// else on the CPU with `threads`; `where` says which and why.
tune::HeadTrainer make_trainer(const head::HeadConfig& config, const device::Placement& placement,
                               int threads, std::string& where) {
  std::optional<tune::HeadTrainer> on_gpu = device::on_gpu<tune::HeadTrainer>(
      placement,
      [&](ggml_backend_ptr backend) {
        return tune::HeadTrainer(config, std::move(backend),
                                 placement.info.quirks.stale_descriptor_reads);
      },
      where);
  if (on_gpu) {
    where += " (the head's 4 copies and its graphs in its memory)";
    return std::move(*on_gpu);
  }
  return tune::HeadTrainer(config, threads);
}

int run_tune(TuneCommandOptions& o) {
  o.settings.seed = static_cast<std::uint64_t>(o.seed);
  o.settings.schedule = o.schedule == "constant" ? tune::TuneSettings::Schedule::constant
                                                 : tune::TuneSettings::Schedule::cosine;
  const fs::path out(o.out);
  const bool bf16 = o.dtype == "bf16";
  // Refusals that need no model come first (a run may take hours).
  // Every file the run writes (the head, its config, the report), not only the head: a folder
  // holding another head's config or report is not overwritten silently either.
  for (const std::string_view name :
       {head::HeadWeights::kWeightsFile, head::HeadWeights::kConfigFile, kReportFile}) {
    if (fs::exists(out / name) && !o.force && !o.resume) {
      throw invalid_request("--out " + o.out + " already holds a " + std::string(name) +
                                ": give another folder, or --force to overwrite it",
                            "out");
    }
  }
  OutFolder folder(out);  // made now, removed again if the run ends before writing into it
  // From here Ctrl-C is the run's: during the model's load it cancels the load (the folder made
  // for the run goes again), later it stops at the next record or batch.
  InterruptGuard interrupts;
  std::optional<tune::CheckpointState> resume_from;
  if (o.resume) {
    resume_from = tune::read_checkpoint(out);
    if (!resume_from) {
      throw invalid_request("--resume: " + o.out + " holds no checkpoint to continue", "resume");
    }
    // A breaker's input: resuming after as many epochs as --epochs asks (or more) trained nothing
    // and said only "resuming after epoch N".
    if (resume_from->epoch >= o.settings.epochs) {
      throw invalid_request("--resume: the checkpoint in " + o.out + " has " +
                                std::to_string(resume_from->epoch) + " epochs, --epochs " +
                                std::to_string(o.settings.epochs) +
                                " asks for no more: give --epochs above " +
                                std::to_string(resume_from->epoch) + " to train on",
                            "epochs");
    }
  } else if (fs::exists(tune::checkpoint_dir(out)) && !o.force) {
    throw invalid_request("--out " + o.out +
                              " holds the checkpoint of an earlier run: --resume continues it, "
                              "--force starts anew over it",
                          "out");
  }

  std::vector<tune::LabeledRecord> train = tune::load_labeled_records(o.data);
  tune::check_distinct(train);
  std::vector<tune::LabeledRecord> validation;
  if (!o.validation.empty()) {
    validation = tune::load_labeled_records(o.validation);
    tune::check_distinct(validation);
  } else {
    split(train, o.holdout, o.settings.seed, validation);
  }
  tune::check_disjoint(train, validation);

  runtime::EngineConfig config = o.engine.loading_config();
  config.calibration_path.clear();  // the head's own probabilities are trained and measured
  if (config.head_path.empty()) {
    throw invalid_request(
        "clef tune trains a joint_head.safetensors (the published head's raw parameters, with "
        "joint_head_config.json); this model carries its head inside its GGUF (llama.cpp's or "
        "Ollama's layout, its scales folded), which cannot be trained: tune on the published "
        "files (the backbone GGUF, the mmproj and joint_head.safetensors, e.g. clef pull "
        "Cloudflare/clef-flash) and serve the tuned head with them",
        "head");
  }
  // The starting head's hash, once: the fingerprint and the written head's metadata both hold it.
  const std::string head_sha256 = util::sha256_file(config.head_path);
  const tune::FingerprintParts parts = fingerprint_parts(o, config, head_sha256);
  const std::string fp = fingerprint(parts);
  if (resume_from && resume_from->fingerprint != fp) {
    const std::string differ = differing_parts(resume_from->fingerprint_parts, parts);
    throw invalid_request("--resume: the checkpoint in " + o.out +
                              (differ.empty() ? " was made with other data, model or settings"
                                              : " differs from this run in " + differ) +
                              "; start anew (--force) or give the same ones",
                          "resume");
  }
  config.backbone.on_progress = [](float) { return g_interrupts.load() == 0; };
  std::optional<runtime::Engine> loaded;
  try {
    loaded = runtime::make_engine(config);
  } catch (const Error&) {
    if (g_interrupts.load() == 0) throw;
  }
  if (g_interrupts.load() > 0) {
    std::cerr << "\nclef tune: interrupted while the model loaded: nothing written\n";
    return 130;
  }
  runtime::Engine& engine = *loaded;
  // The starting head goes into the trainer from its file tensor by tensor (so do the checkpoint
  // and the final report): no whole copy of the head stays beside the trainer's (the engine's
  // own copy goes with the backbone before training).
  const head::HeadConfig head_config = head::read_head_config(config.head_config_path);

  std::vector<tune::PreparedRecord> train_prepared = tune::prepare_records(*engine.preparer, train);
  std::vector<tune::PreparedRecord> validation_prepared =
      tune::prepare_records(*engine.preparer, validation);
  // Augmented training records are run at each visit (their tokens change): only the
  // validation rows are kept then.
  const bool augmenting = o.augment.any();
  std::vector<const tune::PreparedRecord*> kept;
  if (!augmenting) {
    for (const auto& r : train_prepared) kept.push_back(&r);
  }
  for (const auto& r : validation_prepared) kept.push_back(&r);
  const tune::RowsPlan plan = tune::plan_rows(kept, head_config.hidden_size);
  std::size_t n_params = 0;
  for (const head::ParamSpec& p : head::head_parameter_specs(head_config)) {
    std::size_t n = 1;
    for (std::int64_t d : p.shape) n *= static_cast<std::size_t>(d);
    n_params += n;
  }
  const std::uint64_t head_bytes = static_cast<std::uint64_t>(n_params) * 4 * 4;
  const std::uint64_t budget =
      o.rows_memory > 0 ? o.rows_memory : util::physical_memory_bytes() / 2;
  std::cout << "clef tune: " << train.size() << " training and " << validation.size()
            << " validation records\n"
            << "  rows, computed once: " << plan.describe()
            << (augmenting ? " (validation only: augmented training records are run at each "
                             "visit, the state cache resuming their state)"
                           : "")
            << "\n"
            << "  head: " << n_params << " parameters x 4 B x 4 (weights, gradients, AdamW m and v)"
            << " = " << util::human_bytes(head_bytes) << ", and one training graph of up to "
            << o.settings.graph_rows << " rows (a batch's records together; its size is said "
            << "after the first batch)\n"
            << "  rows budget (--rows-memory): " << util::human_bytes(budget) << "\n";
  if (plan.bytes > budget) {
    throw invalid_request("the rows need " + util::human_bytes(plan.bytes) + " (" +
                              plan.describe() + "), over --rows-memory " +
                              util::human_bytes(budget) +
                              ": raise it, or tune on fewer or shorter records",
                          "rows_memory");
  }

  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const auto rows_started = std::chrono::steady_clock::now();
  const auto rows_progress = [&](std::size_t done, std::size_t total) {
    if (!tty) return;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - rows_started).count();
    const double rate = static_cast<double>(done) / std::max(s, 1e-9);
    std::cerr << "\r[backbone rows] " << done << "/" << total << " records, " << fixed(rate, 1)
              << " records/s, ETA " << duration(static_cast<double>(total - done) / rate) << "   "
              << std::flush;
    if (done == total) std::cerr << "\n";
  };
  const auto stop = [] { return g_interrupts.load() > 0; };
  std::vector<tune::RowsRecord> train_rows;
  std::vector<tune::RowsRecord> validation_rows;
  try {
    if (!augmenting) {
      train_rows = tune::compute_rows(engine, std::move(train_prepared), rows_progress, stop);
    }
    validation_rows =
        tune::compute_rows(engine, std::move(validation_prepared), rows_progress, stop);
  } catch (const tune::RowsInterrupted&) {
    std::cerr << "\nclef tune: interrupted while the backbone ran, before training: nothing "
                 "written\n";
    return 130;
  }
  // Where the head trains: the engine's device (as it places the served head) when its backend
  // runs every op of the training graphs, else the CPU (make_trainer says which and why).
  const device::Placement placement =
      device::resolve(config.backbone.device, config.backbone.gpu_layers);
  if (!augmenting) {
    // The backbone is not needed while the head trains: its memory goes back before training.
    engine.runner.reset();
    engine.preparer.reset();
  }
  const tune::TrainingVisit visit = [&](std::size_t i, int epoch) -> tune::RowsRecord {
    if (!augmenting) return train_rows[i];
    const tune::LabeledRecord a = tune::augment(train[i], o.augment, o.settings.seed, epoch, i);
    std::vector<tune::RowsRecord> rows =
        tune::compute_rows(engine, tune::prepare_records(*engine.preparer, {a}), {});
    return std::move(rows.front());
  };
  // What training adds is measured from here: the rows are resident, the backbone is gone.
  const std::uint64_t resident_before = util::resident_bytes();
  const bool peak_measured = util::reset_peak_resident();

  const int threads = backbone::resolved_threads(config.backbone);
  std::string where;
  tune::HeadTrainer trainer = make_trainer(head_config, placement, threads, where);
  std::cout << "  training on " << where << std::endl;
  tune::load_weights(trainer, config.head_path);
  if (resume_from) {
    tune::restore_checkpoint(out, trainer);
    std::cout << "resuming after epoch " << resume_from->epoch << " (step " << resume_from->step
              << ")\n";
  }
  const auto print_epoch = [](const tune::EpochReport& e, bool best) {
    std::cout << "epoch " << e.epoch << ": " << (e.epoch == 0 ? "initial head" : "train loss ")
              << (e.epoch == 0 ? "" : fixed(e.train_loss)) << ", validation Brier "
              << fixed(e.validation.brier) << ", log loss " << fixed(e.validation.log_loss);
    if (e.validation.single_answer > 0) {
      std::cout << ", accuracy " << fixed(100 * e.validation.accuracy, 1) << "%";
    }
    if (e.epoch > 0) std::cout << ", " << fixed(e.records_per_second, 1) << " records/s";
    std::cout << (best ? " (best)" : "") << std::endl;
  };
  int printed = resume_from ? static_cast<int>(resume_from->history.items().size()) : 0;
  // "(best)" marks the best trained epoch so far, the resumed run's epochs counted.
  double best_so_far = std::numeric_limits<double>::infinity();
  if (resume_from) {
    const auto& history = resume_from->history.items();
    for (std::size_t e = 1; e < history.size(); ++e) {
      const json::Value* v = history[e].find("validation");
      const json::Value* b = v != nullptr ? v->find("brier") : nullptr;
      if (b != nullptr && b->is_float()) best_so_far = std::min(best_so_far, b->as_double());
    }
  }
  bool graph_said = false;
  const tune::TuneOutcome outcome = tune::run_training(
      trainer, train.size(), visit, validation_rows, o.settings, fp, std::move(resume_from),
      [&](const tune::CheckpointState& c, bool best_is_current) {
        tune::CheckpointState named = c;
        named.fingerprint_parts = parts;  // so that a resume with others can name what differs
        tune::write_checkpoint(out, named, trainer, best_is_current);
        const auto& history = c.history.items();
        for (; printed < static_cast<int>(history.size()); ++printed) {
          const tune::EpochReport e = tune::EpochReport::from_json(history[printed]);
          if (printed == 0) {
            print_epoch(e, false);
            continue;
          }
          const bool best = e.validation.brier < best_so_far;
          if (best) best_so_far = e.validation.brier;
          print_epoch(e, best);
        }
      },
      stop,
      [&](const tune::TuneProgress& p) {
        if (!graph_said) {
          graph_said = true;
          if (tty) std::cerr << "\r" << std::string(78, ' ') << "\r";
          std::cout << "  training graph: " << util::human_bytes(trainer.graph_bytes())
                    << " (the first batch's, ggml's allocators)" << std::endl;
        }
        if (!tty) return;
        std::cerr << "\r[training] epoch " << p.epoch << "/" << p.epochs << ", " << p.records_done
                  << "/" << p.records << " records, " << fixed(p.records_per_second, 1)
                  << " records/s, ETA " << duration(p.eta_seconds) << "   " << std::flush;
        if (p.records_done == p.records) std::cerr << "\r" << std::string(78, ' ') << "\r";
      });
  if (outcome.interrupted) {
    const int done = static_cast<int>(outcome.epochs.size()) - 1;
    if (done == 0) {
      std::cerr << "\nclef tune: interrupted during epoch 1: no epoch was complete, so there is "
                   "no checkpoint; nothing written\n";
    } else {
      std::cerr << "\nclef tune: interrupted; the checkpoint after epoch " << done << " is in "
                << tune::checkpoint_dir(out).string() << " (--resume continues from it)\n";
    }
    return 130;
  }
  if (peak_measured && trainer.backend_name() == "CPU") {
    const std::uint64_t peak = util::peak_resident_bytes();
    const std::uint64_t over = peak > resident_before ? peak - resident_before : 0;
    const std::uint64_t planned = head_bytes + trainer.graph_bytes();
    std::cout << "memory while training: peak " << util::human_bytes(peak) << " resident, "
              << util::human_bytes(over) << " over the " << util::human_bytes(resident_before)
              << " resident before it (the rows, the program); plan: the trainer's 4 copies "
              << util::human_bytes(head_bytes) << " + the largest training graph "
              << util::human_bytes(trainer.graph_bytes()) << " = " << util::human_bytes(planned)
              << "\n";
  }
  const tune::EpochReport& first = outcome.epochs.front();
  if (outcome.best_epoch == 0) {
    std::cerr << "clef tune: no epoch was trained; nothing written\n";
    return 1;
  }
  const tune::EpochReport& best = outcome.epochs[static_cast<std::size_t>(outcome.best_epoch)];
  if (!outcome.improved()) {
    std::cerr << "clef tune: no epoch validated better than the initial head (Brier "
              << fixed(first.validation.brier) << "; the best, epoch " << outcome.best_epoch << ", "
              << fixed(best.validation.brier) << ")";
    if (!o.force) {
      std::cerr << "; nothing written (--force writes epoch " << outcome.best_epoch
                << "'s head anyway; a lower --lr or more records usually help)\n";
      return 1;
    }
    std::cerr << "; --force: epoch " << outcome.best_epoch << "'s head is written\n";
  }
  const int written_epoch = outcome.best_epoch;
  const fs::path best_head = tune::checkpoint_best_head(out);
  if (bf16) {
    const auto [changed, lost] = tune::rounded_away(config.head_path, best_head, head_config);
    std::cerr << "clef tune: --dtype bf16 rounds away " << lost << " of the " << changed
              << " parameter updates ("
              << fixed(100.0 * static_cast<double>(lost) /
                           static_cast<double>(std::max<std::size_t>(changed, 1)),
                       1)
              << "%): they are written as the initial values\n";
  }
  tune::write_head(out, best_head, head_config, bf16,
                   {{artifact::kTuneNoteKey, "epoch " + std::to_string(written_epoch)},
                    {artifact::kTunedFromKey, head_sha256}});

  // The report: the initial head against the written one, all and per question id (scored by
  // the trainer itself, its weights read in from the files: no second copy of the head).
  tune::load_weights(trainer, best_head);
  const auto after = tune::measure_by_question(tune::score(trainer, validation_rows));
  tune::load_weights(trainer, config.head_path);
  const auto before = tune::measure_by_question(tune::score(trainer, validation_rows));
  std::cout << "\nvalidation, initial head -> epoch " << written_epoch << ":\n";
  for (std::size_t i = 0; i < after.size(); ++i) {
    print_metrics_row(after[i].first, before[i].second, after[i].second);
  }
  using json::Value;
  std::vector<Value> epochs;
  for (const auto& e : outcome.epochs) epochs.push_back(e.to_json());
  std::vector<Value::Member> per_question;
  for (std::size_t i = 0; i < after.size(); ++i) {
    per_question.emplace_back(after[i].first,
                              Value::object({{"initial", tune::metrics_json(before[i].second)},
                                             {"tuned", tune::metrics_json(after[i].second)}}));
  }
  const Value report = Value::object({
      {"training_records", Value::integer(static_cast<std::int64_t>(train.size()))},
      {"shuffle_options", Value::boolean(o.augment.shuffle_options)},
      {"yes_no_share", Value::floating(o.augment.yes_no_share)},
      {"validation_records", Value::integer(static_cast<std::int64_t>(validation_rows.size()))},
      {"rows", Value::string(plan.describe())},
      {"lr", Value::floating(o.settings.adamw.lr)},
      {"batch_size", Value::integer(o.settings.batch_size)},
      {"weight_decay", Value::floating(o.settings.adamw.weight_decay)},
      {"max_grad_norm", Value::floating(o.settings.max_grad_norm)},
      {"seed", Value::integer(static_cast<std::int64_t>(o.settings.seed))},
      {"written_epoch", Value::integer(written_epoch)},
      {"stopped_early", Value::boolean(outcome.stopped_early)},
      {"dtype", Value::string(o.dtype)},
      {"epochs", Value::array(std::move(epochs))},
      {"validation", Value::object(std::move(per_question))},
  });
  write_text_file((out / std::string(kReportFile)).string(), json::dumps_unsorted(report) + "\n",
                  "out");
  std::string model_flags = !o.engine.model_dir.empty() ? "--model-dir " + o.engine.model_dir
                                                        : "--model " + o.engine.model;
  if (!o.engine.mmproj.empty()) model_flags += " --mmproj " + o.engine.mmproj;
  if (!o.engine.registry.empty()) model_flags += " --registry " + o.engine.registry;
  std::cout << "\nhead of epoch " << written_epoch << " written to " << o.out
            << " (serve it with: clef serve " << model_flags << " --head "
            << (out / "joint_head.safetensors").string() << ")\n";
  return 0;
}

}  // namespace

void add_tune_command(CLI::App& cmd, ExitCode& exit_code) {
  const auto options = add_engine_options<TuneCommandOptions>(cmd, exit_code, run_tune);
  cmd.add_option("--data", options->data,
                 "labeled requests, JSON Lines: a SystemOne request plus \"gold\" {question id: "
                 "option} and/or \"targets\" {question id: {option: probability}}, optional "
                 "\"id\"")
      ->required()
      ->check(CLI::ExistingFile);
  cmd.add_option("--validation", options->validation,
                 "labeled requests to validate on (default: a seeded --holdout share of --data)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--holdout", options->holdout,
                 "share of --data held out for validation when --validation is not given")
      ->capture_default_str()
      ->check(finite_range(0.01, 0.9));
  cmd.add_option("-o,--out", options->out,
                 "folder to write joint_head.safetensors, joint_head_config.json, "
                 "tune_report.json and the checkpoint to")
      ->required();
  cmd.add_option("--lr", options->settings.adamw.lr, "AdamW learning rate")
      ->capture_default_str()
      ->check(finite_range(1e-9, 1.0));
  cmd.add_option("--schedule", options->schedule,
                 "learning rate over the run: cosine (from --lr down to 0.1 x it at the last "
                 "epoch) or constant")
      ->capture_default_str()
      ->check(CLI::IsMember({"cosine", "constant"}));
  add_range_option(cmd, "--batch-size", options->settings.batch_size, "records per optimizer step",
                   1, 100000);
  add_range_option(cmd, "--epochs", options->settings.epochs,
                   "most passes over the training records", 1, 100000);
  add_range_option(cmd, "--patience", options->settings.patience,
                   "stop after this many epochs without a better validation Brier, once half of "
                   "--epochs have run (0: never)",
                   0, 100000);
  cmd.add_option("--max-grad-norm", options->settings.max_grad_norm,
                 "global gradient norm clipping (the recipe's _clip_gradients)")
      ->capture_default_str()
      ->check(finite_range(1e-9, 1e9));
  cmd.add_option("--weight-decay", options->settings.adamw.weight_decay,
                 "AdamW decoupled weight decay")
      ->capture_default_str()
      ->check(finite_range(0.0, 1.0));
  add_range_option(cmd, "--seed", options->seed,
                   "seed of the holdout split and of every epoch's batch order", std::int64_t{0},
                   std::numeric_limits<std::int64_t>::max());
  cmd.add_flag("--shuffle-options", options->augment.shuffle_options,
               "the recipe's augmentation: at every visit, each choice question's descriptions "
               "permuted among its option ids, the targets moved with them (runs the backbone "
               "on each visit's schema)");
  cmd.add_option("--yes-no-share", options->augment.yes_no_share,
                 "the recipe's augmentation: this share of visits gets a yes/no question \"is "
                 "option X the answer?\" with X's probability as its target")
      ->capture_default_str()
      ->check(finite_range(0.0, 1.0));
  add_size_option(cmd, "--rows-memory", options->rows_memory,
                  "most memory the backbone's rows may take (default: half the machine's)");
  cmd.add_option("--dtype", options->dtype,
                 "dtype of the written head: f32, or bf16 (rounds away most small updates; it "
                 "says how many)")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16"}));
  cmd.add_flag("--resume", options->resume,
               "continue the run whose checkpoint is in --out (same data, model and settings)");
  cmd.add_flag("--force", options->force,
               "overwrite a head or checkpoint in --out; write a head that validates no better "
               "than the initial one");
}

}  // namespace clef::cli
