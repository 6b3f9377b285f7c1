#include "eval/calibration_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace clef::eval {
namespace {

std::vector<double> softmax(const std::vector<double>& z) {
  const double m = *std::max_element(z.begin(), z.end());
  std::vector<double> p(z.size());
  double s = 0;
  for (std::size_t i = 0; i < z.size(); ++i) s += (p[i] = std::exp(z[i] - m));
  for (double& x : p) x /= s;
  return p;
}

double nll(const std::vector<const LabeledQuestion*>& samples, double temperature) {
  double total = 0;
  for (const LabeledQuestion* q : samples) {
    std::vector<double> z = q->logits;
    for (double& x : z) x /= temperature;
    const double m = *std::max_element(z.begin(), z.end());
    double s = 0;
    for (double x : z) s += std::exp(x - m);
    total -= z[q->gold] - m - std::log(s);
  }
  return total;
}

double sigmoid(double x) {
  return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}

/// log(1 + e^x) without overflow.
double softplus(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

/// The penalized log likelihood of noul labels under p_true = sigmoid(a d + b).
double platt_log_likelihood(const std::vector<const LabeledQuestion*>& samples, double a, double b,
                            double ridge) {
  double ll = -ridge / 2 * (a * a + b * b);
  for (const LabeledQuestion* q : samples) {
    const double z = a * (q->logits[0] - q->logits[1]) + b;
    ll -= q->gold == 0 ? softplus(-z) : softplus(z);
  }
  return ll;
}

}  // namespace

double fit_temperature(const std::vector<const LabeledQuestion*>& samples) {
  if (samples.empty()) return 1.0;
  // Golden-section search on u = log T.
  double lo = std::log(0.05);
  double hi = std::log(20.0);
  const double r = (std::sqrt(5.0) - 1) / 2;
  double a = hi - r * (hi - lo);
  double b = lo + r * (hi - lo);
  double fa = nll(samples, std::exp(a));
  double fb = nll(samples, std::exp(b));
  for (int i = 0; i < 100 && hi - lo > 1e-7; ++i) {
    if (fa <= fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - r * (hi - lo);
      fa = nll(samples, std::exp(a));
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + r * (hi - lo);
      fb = nll(samples, std::exp(b));
    }
  }
  return std::exp((lo + hi) / 2);
}

decision::Scaling fit_platt(const std::vector<const LabeledQuestion*>& samples) {
  decision::Scaling out;
  out.examples = static_cast<int>(samples.size());
  std::size_t positives = 0;
  for (const LabeledQuestion* q : samples) positives += q->gold == 0 ? 1 : 0;
  if (samples.empty() || positives == 0 || positives == samples.size()) return out;
  // Newton's method on the log likelihood of y ~ Bernoulli(sigmoid(a d + b)), a tiny ridge for
  // separable data.
  double a = 1;
  double b = 0;
  const double ridge = 1e-6;
  for (int it = 0; it < 100; ++it) {
    double ga = -ridge * a;
    double gb = -ridge * b;
    double haa = ridge;
    double hab = 0;
    double hbb = ridge;
    for (const LabeledQuestion* q : samples) {
      const double d = q->logits[0] - q->logits[1];
      const double y = q->gold == 0 ? 1.0 : 0.0;
      const double p = sigmoid(a * d + b);
      const double w = p * (1 - p);
      ga += (y - p) * d;
      gb += (y - p);
      haa += w * d * d;
      hab += w * d;
      hbb += w;
    }
    const double det = haa * hbb - hab * hab;
    if (det <= 0) break;
    double da = (hbb * ga - hab * gb) / det;
    double db = (haa * gb - hab * ga) / det;
    // Newton's step, halved until the likelihood does not fall (plain Newton can overshoot when
    // the start is far and the sigmoid saturates).
    const double before = platt_log_likelihood(samples, a, b, ridge);
    while (platt_log_likelihood(samples, a + da, b + db, ridge) < before &&
           std::fabs(da) + std::fabs(db) > 1e-14) {
      da /= 2;
      db /= 2;
    }
    a += da;
    b += db;
    if (std::fabs(da) + std::fabs(db) < 1e-10) break;
  }
  const double clamped = std::clamp(a, 1.0 / 20, 1.0 / 0.05);  // the temperatures' range
  if (clamped != a) {
    // The bias that is best for the clamped slope: Newton on b alone, from the base rate's
    // log-odds, with the step halved until the likelihood does not fall (a saturated sigmoid
    // once gave a step of 3e7: every answer 0).
    a = clamped;
    b = std::log((static_cast<double>(positives) + 0.5) /
                 (static_cast<double>(samples.size() - positives) + 0.5));
    for (int it = 0; it < 100; ++it) {
      double g = -ridge * b;
      double h = ridge;
      for (const LabeledQuestion* q : samples) {
        const double p = sigmoid(a * (q->logits[0] - q->logits[1]) + b);
        g += (q->gold == 0 ? 1.0 : 0.0) - p;
        h += p * (1 - p);
      }
      double step = g / h;
      const double before = platt_log_likelihood(samples, a, b, ridge);
      while (platt_log_likelihood(samples, a, b + step, ridge) < before &&
             std::fabs(step) > 1e-14) {
        step /= 2;
      }
      b += step;
      if (std::fabs(step) < 1e-12) break;
    }
  }
  b = std::clamp(b, -100.0, 100.0);  // what a calibration file may hold
  out.temperature = 1 / a;
  out.bias = b;
  return out;
}

decision::Calibration fit_calibration(const std::vector<LabeledQuestion>& samples,
                                      std::size_t min_per_question) {
  decision::Calibration c;
  std::map<std::string, std::vector<const LabeledQuestion*>> by_id;
  std::vector<const LabeledQuestion*> by_type[3];
  for (const LabeledQuestion& q : samples) {
    by_type[static_cast<int>(q.type)].push_back(&q);
    by_id[q.question_id].push_back(&q);
  }
  auto fit = [](request::QuestionType type, const std::vector<const LabeledQuestion*>& s) {
    if (type == request::QuestionType::noul) return fit_platt(s);
    decision::Scaling out;
    out.temperature = fit_temperature(s);
    out.examples = static_cast<int>(s.size());
    return out;
  };
  for (int t = 0; t < 3; ++t) {
    if (!by_type[t].empty()) c.by_type[t] = fit(static_cast<request::QuestionType>(t), by_type[t]);
  }
  for (const auto& [id, s] : by_id) {
    const request::QuestionType type = s.front()->type;
    const bool one_type = std::all_of(s.begin(), s.end(), [&](auto* q) { return q->type == type; });
    if (min_per_question > 0 && s.size() >= min_per_question && one_type) {
      c.by_question[id] = fit(type, s);
    }
  }
  return c;
}

std::vector<double> probabilities(const LabeledQuestion& sample,
                                  const decision::Calibration* calibration) {
  std::vector<double> z = sample.logits;
  if (calibration != nullptr) {
    if (const decision::Scaling* s = calibration->scaling_for(sample.type, sample.question_id)) {
      for (double& x : z) x /= s->temperature;
      if (sample.type == request::QuestionType::noul && !z.empty()) z[0] += s->bias;
    }
  }
  return softmax(z);
}

}  // namespace clef::eval
