#include "eval/verify_report.hpp"

#include <algorithm>
#include <cstdio>

namespace clef::eval {
namespace {

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string ratio(int n, int of) {
  return of == 0 ? "-" : std::to_string(n) + "/" + std::to_string(of);
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

/// One row of the gate table; `name_width` fits the longest row name. A row without compared
/// runs shows "-" for |dp| (nothing was measured there).
std::string tally_line(const std::string& name, std::size_t name_width, const ParityTally& t) {
  const bool measured = t.runs > 0;
  return pad(name, name_width) + pad(std::to_string(t.runs), 10) +
         pad(std::to_string(t.skipped), 9) + pad(std::to_string(t.failed), 8) +
         pad(ratio(t.ids_equal, t.ids_checked), 10) +
         pad(ratio(t.spans_equal, t.spans_checked), 10) +
         pad(ratio(t.above_margin_agree, t.above_margin), 11) +
         pad(ratio(t.near_ties_agree, t.near_ties), 9) +
         pad(measured ? fixed(t.max_dp, 6) : "-", 10) + (measured ? fixed(t.mean_dp, 6) : "-") +
         "\n";
}

json::Value number(double v) {
  return json::Value::floating(v);
}
json::Value count(int v) {
  return json::Value::integer(static_cast<std::int64_t>(v));
}

json::Value tally_json(const ParityTally& t) {
  return json::Value::object({{"runs", count(t.runs)},
                              {"skipped", count(t.skipped)},
                              {"failed", count(t.failed)},
                              {"ids_checked", count(t.ids_checked)},
                              {"ids_equal", count(t.ids_equal)},
                              {"spans_checked", count(t.spans_checked)},
                              {"spans_equal", count(t.spans_equal)},
                              {"above_margin", count(t.above_margin)},
                              {"above_margin_agree", count(t.above_margin_agree)},
                              {"near_ties", count(t.near_ties)},
                              {"near_ties_agree", count(t.near_ties_agree)},
                              {"max_dp", number(t.max_dp)},
                              {"max_dp_run", json::Value::string(t.max_dp_run)},
                              {"mean_dp", number(t.mean_dp)}});
}

const char* status_name(RunParity::Status s) {
  switch (s) {
    case RunParity::Status::compared:
      return "compared";
    case RunParity::Status::skipped:
      return "skipped";
    case RunParity::Status::failed:
      return "failed";
  }
  return "?";
}

json::Value run_json(const RunParity& r) {
  json::Value out = json::Value::object({{"id", json::Value::string(r.id)},
                                         {"arm", json::Value::string(r.arm)},
                                         {"source", json::Value::string(r.source)},
                                         {"status", json::Value::string(status_name(r.status))},
                                         {"note", json::Value::string(r.note)},
                                         {"max_dp", number(r.max_dp)},
                                         {"mean_dp", number(r.mean_dp)}});
  out.set("ids_equal", r.ids_equal ? json::Value::boolean(*r.ids_equal) : json::Value::null());
  out.set("spans_equal",
          r.spans_equal ? json::Value::boolean(*r.spans_equal) : json::Value::null());
  std::vector<json::Value> questions;
  for (const QuestionParity& q : r.questions) {
    questions.push_back(json::Value::object({{"id", json::Value::string(q.id)},
                                             {"max_dp", number(q.max_dp)},
                                             {"mean_dp", number(q.mean_dp)},
                                             {"argmax_equal", json::Value::boolean(q.argmax_equal)},
                                             {"ref_margin", number(q.ref_margin)},
                                             {"near_tie", json::Value::boolean(q.near_tie)}}));
  }
  out.set("questions", json::Value::array(std::move(questions)));
  return out;
}

}  // namespace

std::string format_report(const VerifySetup& setup, const VerifyResult& result,
                          const ParitySummary& summary, const ParityBar& bar) {
  std::string out = "clef verify (clef " + setup.clef_version + ")\n";
  out += "fixture: " + setup.fixture + "\n";
  for (const std::string& f : setup.model_files) out += "model file: " + f + "\n";
  if (!setup.quantization.empty()) out += "backbone tensor types: " + setup.quantization + "\n";
  if (!setup.head.empty()) out += "joint schema head: " + setup.head + "\n";
  if (!setup.clef_flash_head) {
    out +=
        "note: the authors' fixture (the default) holds clef-flash's answers; another model's "
        "answers are compared with a fixture written from it (--write-fixture)\n";
  }
  out += "backend: " + setup.backend + ", threads " + std::to_string(setup.threads) + "\n";
  if (!result.same_vocabulary) {
    out +=
        "vocabulary: NOT the fixture's (the authors' fixture has the real Qwen3.5 one; a test "
        "model?): token ids and spans are not compared, and probabilities from other weights "
        "say nothing of parity\n";
  }
  if (result.runs_over_limit > 0) {
    out += "runs: " + std::to_string(result.runs_selected - result.runs_over_limit) + " of the " +
           std::to_string(result.runs_selected) + " selected, " +
           std::to_string(result.runs_over_limit) + " left out by --limit (not run)\n";
  }
  out += "\n";
  std::size_t name_width = 20;
  for (const auto& [arm, t] : summary.by_arm) name_width = std::max(name_width, arm.size() + 6);
  for (const auto& [source, t] : summary.by_source) {
    name_width = std::max(name_width, source.size() + 9);
  }
  out += pad("", name_width);
  // compared: runs whose answers were measured; skipped: runs the engine could not take as the
  // fixture asks (e.g. images without a vision tower); errors: runs whose decision failed.
  for (const auto& [title, width] : {std::pair<std::string, std::size_t>{"compared", 10},
                                     {"skipped", 9},
                                     {"errors", 8},
                                     {"ids", 10},
                                     {"spans", 10},
                                     {"argmax>" + fixed(bar.margin, 2), 11},
                                     {"ties", 9},
                                     {"max|dp|", 10}}) {
    out += pad(title, width);
  }
  out += "mean|dp|\n";
  out += tally_line("all", name_width, summary.all);
  for (const auto& [arm, t] : summary.by_arm) out += tally_line("arm " + arm, name_width, t);
  for (const auto& [source, t] : summary.by_source) {
    out += tally_line("source " + source, name_width, t);
  }
  if (!summary.worst.empty()) {
    out += "\nworst runs (max |dp|):\n";
    for (const RunParity* r : summary.worst) {
      out += "  " + pad(r->id + "/" + r->arm, 28) + fixed(r->max_dp, 6) +
             (r->note.empty() ? "" : "  " + r->note) + "\n";
    }
  }
  bool noted = false;
  for (const RunParity& r : result.runs) {
    if (r.status == RunParity::Status::compared) continue;
    if (!noted) out += "\nnot compared:\n";
    noted = true;
    out += "  " + pad(r.id + "/" + r.arm, 28) + status_name(r.status) + ": " + r.note + "\n";
  }
  out += "\nanswers built by clef from the reference's own logits: " +
         ratio(result.responses_equal, result.responses_checked) +
         " equal the reference's responses";
  for (const std::string& d : result.responses_differing) out += " [differs: " + d + "]";
  out += "\n\nbar: max |dp| <= " + fixed(bar.max_dp, 4) +
         ", mean |dp| <= " + fixed(bar.mean_dp, 4) +
         ", argmax agreement >= " + fixed(100 * bar.argmax_rate, 1) +
         "% where the reference's top-2 margin > " + fixed(bar.margin, 2) + "\n";
  out += summary.pass ? "PASS\n" : "FAIL\n";
  for (const std::string& r : summary.reasons) out += "  - " + r + "\n";
  return out;
}

json::Value report_json(const VerifySetup& setup, const VerifyResult& result,
                        const ParitySummary& summary, const ParityBar& bar) {
  std::vector<json::Value> files;
  for (const std::string& f : setup.model_files) files.push_back(json::Value::string(f));
  std::vector<json::Value> reasons;
  for (const std::string& r : summary.reasons) reasons.push_back(json::Value::string(r));
  std::vector<json::Value::Member> by_arm;
  for (const auto& [arm, t] : summary.by_arm) by_arm.emplace_back(arm, tally_json(t));
  std::vector<json::Value::Member> by_source;
  for (const auto& [source, t] : summary.by_source) by_source.emplace_back(source, tally_json(t));
  std::vector<json::Value> worst;
  for (const RunParity* r : summary.worst) {
    worst.push_back(json::Value::string(r->id + "/" + r->arm));
  }
  std::vector<json::Value> runs;
  for (const RunParity& r : result.runs) runs.push_back(run_json(r));
  std::vector<json::Value> differing;
  for (const std::string& d : result.responses_differing) {
    differing.push_back(json::Value::string(d));
  }
  return json::Value::object(
      {{"clef_version", json::Value::string(setup.clef_version)},
       {"fixture", json::Value::string(setup.fixture)},
       {"model_files", json::Value::array(std::move(files))},
       {"quantization", json::Value::string(setup.quantization)},
       {"head", json::Value::string(setup.head)},
       {"backend", json::Value::string(setup.backend)},
       {"threads", count(setup.threads)},
       {"same_vocabulary", json::Value::boolean(result.same_vocabulary)},
       {"bar", json::Value::object({{"max_dp", number(bar.max_dp)},
                                    {"mean_dp", number(bar.mean_dp)},
                                    {"margin", number(bar.margin)},
                                    {"argmax_rate", number(bar.argmax_rate)}})},
       {"pass", json::Value::boolean(summary.pass)},
       {"reasons", json::Value::array(std::move(reasons))},
       {"responses_checked", count(result.responses_checked)},
       {"responses_equal", count(result.responses_equal)},
       {"responses_differing", json::Value::array(std::move(differing))},
       {"all", tally_json(summary.all)},
       {"by_arm", json::Value::object(std::move(by_arm))},
       {"by_source", json::Value::object(std::move(by_source))},
       {"worst", json::Value::array(std::move(worst))},
       {"runs", json::Value::array(std::move(runs))}});
}

}  // namespace clef::eval
