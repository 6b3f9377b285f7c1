#include "eval/parity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace clef::eval {

RunParity compare_run(const FixtureRun& run, const ObservedRun& observed, bool compare_ids) {
  RunParity out;
  out.id = run.id;
  out.arm = run.arm;
  out.source = run.source;
  if (compare_ids && run.ids) {
    out.ids_equal = *run.ids == observed.ids;
    if (!*out.ids_equal) out.note = "token ids differ";
  }
  bool spans_equal = true;
  double sum_dp = 0;
  std::size_t n_options = 0;
  for (const FixtureQuestion& ref : run.questions) {
    const auto it = std::find_if(observed.questions.begin(), observed.questions.end(),
                                 [&](const ObservedQuestion& q) { return q.id == ref.id; });
    if (it == observed.questions.end()) {
      out.status = RunParity::Status::failed;
      out.note = "question \"" + ref.id + "\" was not decided";
      return out;
    }
    spans_equal = spans_equal && it->question_span == ref.question_span &&
                  it->option_spans == ref.option_spans && it->option_ids == ref.option_ids;
    QuestionParity q;
    q.id = ref.id;
    q.ref_margin = ref.top2_margin;
    q.near_tie = ref.near_tie;
    std::size_t ref_best = 0;
    std::size_t our_best = 0;
    double our_best_p = -1;
    for (std::size_t k = 0; k < ref.option_ids.size(); ++k) {
      const auto o = std::find(it->option_ids.begin(), it->option_ids.end(), ref.option_ids[k]);
      if (o == it->option_ids.end()) {
        out.status = RunParity::Status::failed;
        out.note = "question \"" + ref.id + "\" has no option \"" + ref.option_ids[k] + "\"";
        return out;
      }
      const double p = it->probs[static_cast<std::size_t>(o - it->option_ids.begin())];
      const double dp = std::fabs(p - ref.probs[k]);
      q.max_dp = std::max(q.max_dp, dp);
      q.mean_dp += dp;
      sum_dp += dp;
      ++n_options;
      if (ref.probs[k] > ref.probs[ref_best]) ref_best = k;
      if (p > our_best_p) {
        our_best_p = p;
        our_best = k;
      }
    }
    if (!ref.option_ids.empty()) q.mean_dp /= static_cast<double>(ref.option_ids.size());
    q.argmax_equal = ref_best == our_best;
    out.max_dp = std::max(out.max_dp, q.max_dp);
    out.questions.push_back(q);
  }
  if (n_options > 0) out.mean_dp = sum_dp / static_cast<double>(n_options);
  if (compare_ids && run.ids) {
    out.spans_equal = spans_equal;
    if (!spans_equal && out.note.empty()) out.note = "spans differ";
  }
  return out;
}

namespace {

void add(ParityTally& t, const RunParity& r, const ParityBar& bar) {
  if (r.status == RunParity::Status::skipped) {
    ++t.skipped;
    return;
  }
  if (r.status == RunParity::Status::failed) {
    ++t.failed;
    return;
  }
  // mean_dp is accumulated as a sum here and divided in finish().
  ++t.runs;
  if (r.ids_equal) {
    ++t.ids_checked;
    t.ids_equal += *r.ids_equal ? 1 : 0;
  }
  if (r.spans_equal) {
    ++t.spans_checked;
    t.spans_equal += *r.spans_equal ? 1 : 0;
  }
  for (const QuestionParity& q : r.questions) {
    if (q.near_tie) {
      ++t.near_ties;
      t.near_ties_agree += q.argmax_equal ? 1 : 0;
    }
    if (q.ref_margin > bar.margin) {
      ++t.above_margin;
      t.above_margin_agree += q.argmax_equal ? 1 : 0;
    }
  }
  if (t.max_dp_run.empty() || r.max_dp > t.max_dp) {
    t.max_dp = r.max_dp;
    t.max_dp_run = r.id + "/" + r.arm;
  }
  t.mean_dp += r.mean_dp;
}

void finish(ParityTally& t) {
  if (t.runs > 0) t.mean_dp /= t.runs;
}

std::string format(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

ParitySummary summarize(const std::vector<RunParity>& runs, const ParityBar& bar) {
  ParitySummary s;
  for (const RunParity& r : runs) {
    add(s.all, r, bar);
    add(s.by_arm[r.arm], r, bar);
    add(s.by_source[r.source], r, bar);
    if (r.status == RunParity::Status::compared) s.worst.push_back(&r);
  }
  finish(s.all);
  for (auto& [arm, t] : s.by_arm) finish(t);
  for (auto& [source, t] : s.by_source) finish(t);
  std::stable_sort(s.worst.begin(), s.worst.end(),
                   [](const RunParity* a, const RunParity* b) { return a->max_dp > b->max_dp; });
  if (s.worst.size() > 10) s.worst.resize(10);

  const ParityTally& a = s.all;
  if (a.runs == 0) s.reasons.push_back("no run was compared");
  if (a.failed > 0) s.reasons.push_back(std::to_string(a.failed) + " run(s) failed");
  if (a.ids_equal < a.ids_checked) {
    s.reasons.push_back("token ids differ on " + std::to_string(a.ids_checked - a.ids_equal) +
                        " of " + std::to_string(a.ids_checked) + " runs");
  }
  if (a.spans_equal < a.spans_checked) {
    s.reasons.push_back("spans differ on " + std::to_string(a.spans_checked - a.spans_equal) +
                        " of " + std::to_string(a.spans_checked) + " runs");
  }
  if (a.max_dp > bar.max_dp) {
    s.reasons.push_back("max |dp| " + format("%.6f", a.max_dp) + " (" + a.max_dp_run +
                        ") is over " + format("%g", bar.max_dp));
  }
  if (a.mean_dp > bar.mean_dp) {
    s.reasons.push_back("mean |dp| " + format("%.6f", a.mean_dp) + " is over " +
                        format("%g", bar.mean_dp));
  }
  if (a.above_margin > 0 &&
      static_cast<double>(a.above_margin_agree) < bar.argmax_rate * a.above_margin) {
    s.reasons.push_back("argmax agrees on " + std::to_string(a.above_margin_agree) + " of " +
                        std::to_string(a.above_margin) + " questions with margin above " +
                        format("%g", bar.margin));
  }
  s.pass = s.reasons.empty();
  return s;
}

}  // namespace clef::eval
