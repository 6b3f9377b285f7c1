#include "tune/frozen_rows.hpp"

#include <algorithm>
#include <cstdio>

#include "util/error.hpp"

namespace clef::tune {
namespace {

[[noreturn]] void refuse(const std::string& where, const std::string& what,
                         const std::string& field) {
  throw invalid_request(where + ": " + what, field);
}

/// The label's probabilities in the question's model option order.
std::vector<float> place(const QuestionLabel& label, const record::QuestionRecord& q,
                         const std::string& where) {
  std::vector<float> t(q.option_ids.size(), 0.0f);
  for (const auto& [option, p] : label.probs) {
    const auto it = std::find(q.option_ids.begin(), q.option_ids.end(), option);
    if (it == q.option_ids.end()) {
      std::string options;
      for (const std::string& o : q.option_ids) {
        if (!options.empty()) options += ", ";
        options += o;
      }
      refuse(where,
             std::string(label.gold ? "gold." : "targets.") + q.question_id + ": \"" + option +
                 "\" is not one of the question's options (" + options + ")",
             label.gold ? "gold" : "targets");
    }
    t[static_cast<std::size_t>(it - q.option_ids.begin())] = static_cast<float>(p);
  }
  return t;
}

std::string thousands(std::int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace

HeadExample RowsRecord::example() const {
  return {rows->hidden, rows->n_tokens, rows->inputs.questions, rows->inputs.lexical, targets};
}

std::vector<PreparedRecord> prepare_records(const runtime::Preparer& preparer,
                                            const std::vector<LabeledRecord>& records) {
  std::vector<PreparedRecord> out;
  out.reserve(records.size());
  const int context = preparer.served().context_size;
  for (const LabeledRecord& r : records) {
    PreparedRecord p;
    p.where = r.where;
    p.id = r.id;
    try {
      p.prepared = preparer.prepare(r.request);
    } catch (const DecisionCancelled&) {
      throw;
    } catch (const Error& e) {
      throw Error(e.kind(), e.code(), r.where + ": " + e.what(), e.param());
    }
    const record::Record& rec = p.prepared.record;
    if (rec.state_tokens_cut > 0) {
      refuse(r.where,
             "the record is " + std::to_string(rec.input_tokens() + rec.state_tokens_cut) +
                 " tokens, over the context of " + std::to_string(context) +
                 " (or its max_state_tokens): refused, never truncated (a label paired with "
                 "evidence cut away would teach the head the wrong thing); shorten its state or "
                 "raise --context-size",
             "state");
    }
    p.targets.resize(rec.questions.size());
    for (const auto& q : rec.questions) p.question_ids.push_back(q.question_id);
    for (const QuestionLabel& label : r.labels) {
      const auto it = std::find(p.question_ids.begin(), p.question_ids.end(), label.question);
      if (it == p.question_ids.end()) {
        refuse(r.where,
               std::string(label.gold ? "gold." : "targets.") + label.question +
                   ": the request has no question \"" + label.question + "\"",
               label.gold ? "gold" : "targets");
      }
      const auto q = static_cast<std::size_t>(it - p.question_ids.begin());
      p.targets[q] = place(label, rec.questions[q], r.where);
    }
    p.prepared.keep_head_rows = true;
    out.push_back(std::move(p));
  }
  return out;
}

std::string RowsPlan::describe() const {
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return std::to_string(records) + " records: " + thousands(tokens) + " tokens x " +
         std::to_string(hidden_size) + " x 4 B + " + thousands(options) + " option rows x " +
         std::to_string(hidden_size) + " x 4 B = " + gib;
}

RowsPlan plan_rows(const std::vector<const PreparedRecord*>& records, std::int64_t hidden_size) {
  RowsPlan plan;
  plan.records = records.size();
  plan.hidden_size = hidden_size;
  for (const PreparedRecord* r : records) {
    plan.tokens += static_cast<std::int64_t>(r->prepared.record.input_tokens());
    for (const auto& q : r->prepared.record.questions) {
      plan.options += static_cast<std::int64_t>(q.option_ids.size());
    }
  }
  plan.bytes = static_cast<std::uint64_t>(plan.tokens + plan.options) *
               static_cast<std::uint64_t>(hidden_size) * sizeof(float);
  return plan;
}

std::vector<RowsRecord> compute_rows(runtime::Engine& engine, std::vector<PreparedRecord> records,
                                     const std::function<void(std::size_t, std::size_t)>& on_record,
                                     const std::function<bool()>& interrupted) {
  std::vector<RowsRecord> out;
  out.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (interrupted && interrupted()) throw RowsInterrupted{i, records.size()};
    PreparedRecord& p = records[i];
    runtime::Decision d;
    try {
      d = engine.decide(p.prepared);
    } catch (const DecisionCancelled&) {
      throw;
    } catch (const Error& e) {
      throw Error(e.kind(), e.code(), p.where + ": " + e.what(), e.param());
    }
    if (!d.head_rows) throw Error(ErrorKind::internal, "internal", p.where + ": no head rows");
    out.push_back({std::move(p.where), std::move(p.id), std::move(d.head_rows),
                   std::move(p.targets), std::move(p.question_ids)});
    if (on_record) on_record(i + 1, records.size());
  }
  return out;
}

}  // namespace clef::tune
