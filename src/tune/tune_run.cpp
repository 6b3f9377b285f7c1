#include "tune/tune_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "util/error.hpp"

namespace clef::tune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double number_of(const json::Value& v, const char* key) {
  const json::Value* x = v.find(key);
  if (x == nullptr) throw invalid_request(std::string("checkpoint history lacks ") + key, "resume");
  if (x->is_integer()) return std::stod(x->integer_digits());
  return x->as_double();
}

/// The probabilities of one question's logits: softmax in double of the f32 logits.
std::vector<double> softmax(const std::vector<float>& logits) {
  const float top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double z = 0;
  for (std::size_t k = 0; k < logits.size(); ++k) {
    p[k] = std::exp(static_cast<double>(logits[k]) - top);
    z += p[k];
  }
  for (double& x : p) x /= z;
  return p;
}

}  // namespace

json::Value EpochReport::to_json() const {
  using json::Value;
  return Value::object({{"epoch", Value::integer(epoch)},
                        {"train_loss", Value::floating(train_loss)},
                        {"validation", metrics_json(validation)},
                        {"seconds", Value::floating(seconds)},
                        {"records_per_second", Value::floating(records_per_second)},
                        {"step", Value::integer(step)}});
}

EpochReport EpochReport::from_json(const json::Value& v) {
  EpochReport r;
  r.epoch = static_cast<int>(number_of(v, "epoch"));
  r.train_loss = number_of(v, "train_loss");
  r.seconds = number_of(v, "seconds");
  r.records_per_second = number_of(v, "records_per_second");
  r.step = static_cast<std::int64_t>(number_of(v, "step"));
  const json::Value* m = v.find("validation");
  if (m == nullptr) throw invalid_request("checkpoint history lacks validation", "resume");
  r.validation.questions = static_cast<std::size_t>(number_of(*m, "questions"));
  r.validation.brier = number_of(*m, "brier");
  r.validation.log_loss = number_of(*m, "log_loss");
  r.validation.single_answer = static_cast<std::size_t>(number_of(*m, "single_answer"));
  r.validation.accuracy = number_of(*m, "accuracy");
  r.validation.ece = number_of(*m, "ece");
  r.validation.confidently_wrong = number_of(*m, "confidently_wrong");
  r.validation.collapse = number_of(*m, "collapse");
  r.validation.near_collapse = number_of(*m, "near_collapse");
  return r;
}

double learning_rate(const TuneSettings& settings, std::int64_t step, std::int64_t total_steps) {
  if (settings.schedule == TuneSettings::Schedule::constant || total_steps <= 1) {
    return settings.adamw.lr;
  }
  const double pi = 3.14159265358979323846;
  const double progress =
      std::clamp(static_cast<double>(step) / static_cast<double>(total_steps - 1), 0.0, 1.0);
  return settings.adamw.lr * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(pi * progress)));
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, int epoch) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(epoch));
  // Fisher-Yates with our own index draw: std::shuffle's use of the engine is not specified.
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng() % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::vector<ScoredLabel> score(HeadTrainer& trainer, const std::vector<RowsRecord>& records) {
  std::vector<ScoredLabel> out;
  for (const RowsRecord& r : records) {
    const auto logits = trainer.logits(r.example());
    for (std::size_t q = 0; q < logits.size(); ++q) {
      if (r.targets[q].empty()) continue;
      out.push_back({r.question_ids[q], softmax(logits[q]),
                     std::vector<double>(r.targets[q].begin(), r.targets[q].end())});
    }
  }
  return out;
}

TuneOutcome run_training(HeadTrainer& trainer, std::size_t n_train, const TrainingVisit& visit,
                         const std::vector<RowsRecord>& validation, const TuneSettings& settings,
                         const std::string& fingerprint, std::optional<CheckpointState> resume_from,
                         const std::function<void(const CheckpointState&, bool)>& checkpoint,
                         const std::function<bool()>& interrupted,
                         const std::function<void(const TuneProgress&)>& on_progress) {
  if (n_train == 0 || validation.empty()) {
    throw invalid_request("tuning needs training and validation records", "data");
  }
  TuneOutcome out;
  int done = 0;
  if (resume_from) {
    try {
      for (const json::Value& e : resume_from->history.items()) {
        out.epochs.push_back(EpochReport::from_json(e));
      }
    } catch (const std::exception& e) {
      throw invalid_request(std::string("the checkpoint's history cannot be read (") + e.what() +
                                "); start anew over it with --force (without --resume)",
                            "resume");
    }
    out.best_epoch = resume_from->best_epoch;
    done = resume_from->epoch;
  } else {
    const auto t0 = Clock::now();
    EpochReport initial;
    initial.validation = measure(score(trainer, validation));
    initial.seconds = seconds_since(t0);
    out.epochs.push_back(initial);
  }
  double best_brier = out.best_epoch >= 1
                          ? out.epochs[static_cast<std::size_t>(out.best_epoch)].validation.brier
                          : std::numeric_limits<double>::infinity();
  // Not before half the epochs: a head often sits on a plateau near its initial loss for many
  // epochs before it finds what the records say (docs/performance.md, "clef tune").
  const auto stop_early = [&](int epoch) {
    return settings.patience > 0 && 2 * epoch >= settings.epochs &&
           epoch - out.best_epoch >= settings.patience;
  };
  if (done > 0 && stop_early(done)) {
    out.stopped_early = true;
    return out;
  }

  const std::size_t batch = static_cast<std::size_t>(std::max(1, settings.batch_size));
  const auto batches_per_epoch = static_cast<std::int64_t>((n_train + batch - 1) / batch);
  const std::int64_t total_steps = batches_per_epoch * settings.epochs;
  std::int64_t steps_taken = out.epochs.empty() ? 0 : out.epochs.back().step;
  double seconds_per_record = 0;
  std::size_t timed_records = 0;
  double timed_seconds = 0;
  for (int epoch = done + 1; epoch <= settings.epochs; ++epoch) {
    const auto t0 = Clock::now();
    const std::vector<std::size_t> order = epoch_order(n_train, settings.seed, epoch);
    double loss_sum = 0;
    std::size_t batches = 0;
    std::int64_t step = 0;
    for (std::size_t first = 0; first < order.size(); first += batch) {
      const std::size_t last = std::min(order.size(), first + batch);
      const double weight = 1.0 / static_cast<double>(last - first);
      double batch_loss = 0;
      const auto tb = Clock::now();
      // The batch's records in graphs of up to graph_rows rows, in order.
      std::vector<RowsRecord> visits;
      std::vector<HeadExample> examples;  // spans into visits (reserved: never moved)
      visits.reserve(last - first);
      std::int64_t rows = 0;
      const auto run_graph = [&] {
        if (examples.empty()) return;
        const std::vector<double> weights(examples.size(), weight);
        for (double loss : trainer.accumulate(examples, weights)) batch_loss += weight * loss;
        visits.clear();
        examples.clear();
        rows = 0;
      };
      for (std::size_t k = first; k < last; ++k) {
        if (interrupted && interrupted()) {
          out.interrupted = true;
          return out;
        }
        RowsRecord visit_k = visit(order[k], epoch);
        const std::int64_t n = visit_k.rows->n_tokens;
        if (!examples.empty() && rows + n > settings.graph_rows) run_graph();
        visits.push_back(std::move(visit_k));
        examples.push_back(visits.back().example());
        rows += n;
      }
      if (interrupted && interrupted()) {
        out.interrupted = true;
        return out;
      }
      run_graph();
      AdamWSettings adamw = settings.adamw;
      adamw.lr = learning_rate(settings, steps_taken, total_steps);
      step = trainer.step(adamw, settings.max_grad_norm).step;
      steps_taken = step;
      loss_sum += batch_loss;
      ++batches;
      timed_seconds += seconds_since(tb);
      timed_records += last - first;
      seconds_per_record = timed_seconds / static_cast<double>(timed_records);
      if (on_progress) {
        TuneProgress p;
        p.epoch = epoch;
        p.epochs = settings.epochs;
        p.records_done = last;
        p.records = order.size();
        p.records_per_second = seconds_per_record > 0 ? 1.0 / seconds_per_record : 0;
        const double left = static_cast<double>(order.size() - last) +
                            static_cast<double>(order.size()) * (settings.epochs - epoch);
        p.eta_seconds = left * seconds_per_record;
        on_progress(p);
      }
    }
    EpochReport report;
    report.epoch = epoch;
    report.train_loss = loss_sum / static_cast<double>(batches);
    report.validation = measure(score(trainer, validation));
    report.seconds = seconds_since(t0);
    report.records_per_second = static_cast<double>(n_train) / report.seconds;
    report.step = step;
    out.epochs.push_back(report);
    const bool best = report.validation.brier < best_brier;
    if (best) {
      best_brier = report.validation.brier;
      out.best_epoch = epoch;
    }
    if (checkpoint) {
      std::vector<json::Value> items;
      for (const EpochReport& e : out.epochs) items.push_back(e.to_json());
      checkpoint(CheckpointState{epoch,
                                 fingerprint,
                                 trainer.steps(),
                                 out.best_epoch,
                                 json::Value::array(std::move(items)),
                                 {}},
                 best);
    }
    if (stop_early(epoch)) {
      out.stopped_early = epoch < settings.epochs;
      break;
    }
  }
  return out;
}

}  // namespace clef::tune
