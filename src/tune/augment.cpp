#include "tune/augment.hpp"

#include <algorithm>
#include <map>
#include <random>

namespace clef::tune {
namespace {

using json::Value;

/// The description text of an option: a JSON string as it is, nothing for any other value.
std::string text_of(const Value& v) {
  return v.is_string() ? v.as_string() : std::string();
}

/// Fisher-Yates with our own index draw (std::shuffle's use of the engine is unspecified).
template <class T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}

/// Permutes the descriptions of choice question `id` among its option ids; the label moves along.
void shuffle_choice(Value& question, QuestionLabel* label, std::mt19937_64& rng) {
  Value* criteria = nullptr;
  for (auto& [key, value] : question.members()) {
    if (key == "criteria") criteria = &value;
  }
  if (criteria == nullptr || !criteria->is_object() || criteria->members().size() < 2) return;
  auto& members = criteria->members();
  std::vector<std::size_t> from(members.size());
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = i;
  shuffle(from, rng);
  // Option k now says what option from[k] said, and carries its probability.
  std::vector<Value> descriptions;
  std::vector<std::string> ids;
  for (const auto& [id, d] : members) {
    ids.push_back(id);
    descriptions.push_back(d);
  }
  for (std::size_t k = 0; k < members.size(); ++k) members[k].second = descriptions[from[k]];
  if (label == nullptr) return;
  std::map<std::string, double> p;
  for (const auto& [option, prob] : label->probs) p[option] = prob;
  label->probs.clear();
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const auto it = p.find(ids[from[k]]);
    if (it != p.end() && it->second > 0) label->probs.emplace_back(ids[k], it->second);
  }
}

/// Option ids and descriptions of a choice (object) or score (array) question, or empty.
std::vector<std::pair<std::string, std::string>> options_of(const Value& question) {
  std::vector<std::pair<std::string, std::string>> out;
  const Value* type = question.find("type");
  const Value* criteria = question.find("criteria");
  if (type == nullptr || !type->is_string() || criteria == nullptr) return out;
  if (type->as_string() == "choice" && criteria->is_object()) {
    for (const auto& [id, d] : criteria->members()) out.emplace_back(id, text_of(d));
  } else if (type->as_string() == "score" && criteria->is_array()) {
    for (std::size_t i = 0; i < criteria->items().size(); ++i) {
      out.emplace_back(std::to_string(i), text_of(criteria->items()[i]));
    }
  }
  return out;
}

}  // namespace

LabeledRecord augment(const LabeledRecord& record, const AugmentSettings& settings,
                      std::uint64_t seed, int epoch, std::size_t index) {
  if (!settings.any()) return record;
  LabeledRecord out = record;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(epoch) << 32 |
                                                      static_cast<std::uint64_t>(index)));
  Value* questions = nullptr;
  for (auto& [key, value] : out.request.members()) {
    if (key == "questions") questions = &value;
  }
  if (questions == nullptr || !questions->is_object()) return out;
  const auto label_of = [&](const std::string& id) -> QuestionLabel* {
    for (QuestionLabel& l : out.labels) {
      if (l.question == id) return &l;
    }
    return nullptr;
  };
  if (settings.shuffle_options) {
    for (auto& [id, q] : questions->members()) {
      const Value* type = q.find("type");
      if (q.is_object() && type != nullptr && type->is_string() && type->as_string() == "choice") {
        shuffle_choice(q, label_of(id), rng);
      }
    }
  }
  if (settings.yes_no_share > 0 &&
      std::uniform_real_distribution<double>(0.0, 1.0)(rng) < settings.yes_no_share) {
    // Candidates: labeled choice and score questions.
    std::vector<std::pair<std::string, const Value*>> candidates;
    for (const auto& [id, q] : questions->members()) {
      if (label_of(id) != nullptr && !options_of(q).empty()) candidates.emplace_back(id, &q);
    }
    if (!candidates.empty()) {
      const auto& [id, q] = candidates[rng() % candidates.size()];
      const auto options = options_of(*q);
      const auto& [option, description] = options[rng() % options.size()];
      double p = 0;
      for (const auto& [o, prob] : label_of(id)->probs) {
        if (o == option) p = prob;
      }
      std::string field = "is_" + id + "_" + option;
      while (questions->find(field) != nullptr) field += "_";
      const Value* instructions = q->find("instructions");
      const std::string asked =
          instructions != nullptr && instructions->is_string() && !instructions->as_string().empty()
              ? instructions->as_string()
              : id;
      const std::string says = description.empty() ? option : description;
      questions->set(
          field, Value::object({{"type", Value::string("noul")},
                                {"instructions",
                                 Value::string("Is \"" + says + "\" the answer to: " + asked)}}));
      out.labels.push_back({field, {{"true", p}, {"false", 1.0 - p}}, false});
    }
  }
  return out;
}

}  // namespace clef::tune
