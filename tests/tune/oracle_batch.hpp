#pragma once
// Test support for tests/tune: records of a head oracle folder (tests/data/oracle/head/*) with
// their lexical prior rows and targets, as HeadTrainer examples.

#include <filesystem>
#include <string>
#include <vector>

#include "head/oracle_reader.hpp"
#include "tune/head_trainer.hpp"

namespace clef::tune::testing {

struct OracleBatch {
  std::vector<head::testing::OracleRecord> records;
  std::vector<std::vector<float>> lexical;               ///< per record
  std::vector<std::vector<std::vector<float>>> targets;  ///< per record, question, option

  /// Reads `names` (rec00, ...) of `head_dir`; the targets start empty (the caller's).
  static OracleBatch read(const std::filesystem::path& head_dir,
                          const std::vector<std::string>& names) {
    OracleBatch b;
    const std::vector<float> table = head::testing::read_lexical_table(head_dir);
    for (const std::string& name : names) {
      b.records.push_back(head::testing::read_record(head_dir / name));
      b.lexical.push_back(
          head::testing::lexical_vectors(b.records.back(), table, b.records.back().hidden_size));
      b.targets.emplace_back();
    }
    return b;
  }

  HeadExample example(std::size_t r) const {
    return {records[r].hidden, records[r].n_tokens, records[r].questions, lexical[r], targets[r]};
  }

  /// The recipe's batch: every record, each weighted 1 / records, one accumulate per record or
  /// (`one_graph`) all of them in one; returns the batch loss.
  double accumulate(HeadTrainer& trainer, bool one_graph = false) const {
    double loss = 0;
    const double weight = 1.0 / static_cast<double>(records.size());
    if (one_graph) {
      std::vector<HeadExample> examples;
      for (std::size_t r = 0; r < records.size(); ++r) examples.push_back(example(r));
      const std::vector<double> weights(records.size(), weight);
      for (double l : trainer.accumulate(examples, weights)) loss += weight * l;
      return loss;
    }
    for (std::size_t r = 0; r < records.size(); ++r) {
      loss += weight * trainer.accumulate(example(r), weight);
    }
    return loss;
  }
};

}  // namespace clef::tune::testing
