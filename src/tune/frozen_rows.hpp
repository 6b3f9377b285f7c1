#pragma once
// The frozen backbone's rows of every labeled record, computed once: while only the head trains,
// a record's hidden states do not change, so the backbone runs once per record (through the same
// runner that serves, so what the head sees in training is what it sees when served) and the
// rows are kept in memory within a budget the user sets, said before any backbone call.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine/head_inputs.hpp"
#include "runtime/make_engine.hpp"
#include "tune/head_trainer.hpp"
#include "tune/labeled_records.hpp"

namespace clef::tune {

/// A labeled record prepared (tokenized, labels placed on its options), not yet run.
struct PreparedRecord {
  std::string where;  ///< "FILE line N"
  std::string id;
  runtime::PreparedRequest prepared;
  /// Per question (record order), one probability per option in model order; empty: unlabeled.
  std::vector<std::vector<float>> targets;
  std::vector<std::string> question_ids;  ///< record order
};

/// A labeled record with the backbone's rows: what the head trains and validates on.
struct RowsRecord {
  std::string where;
  std::string id;
  std::shared_ptr<const runtime::HeadRows> rows;
  std::vector<std::vector<float>> targets;
  std::vector<std::string> question_ids;

  /// The head's view of it (spans into `rows`, valid while this record lives).
  HeadExample example() const;
};

/// Prepares `records` with `preparer` (tokenization only, no backbone call). Throws clef::Error
/// (invalid_request) naming the record's file and line for a request the model refuses, a label
/// on a question the request does not have, a gold option or a target option the question does
/// not have, or a record longer than the context: refused with its token count, never truncated
/// (no label is paired with lost evidence; the recipe refuses too).
std::vector<PreparedRecord> prepare_records(const runtime::Preparer& preparer,
                                            const std::vector<LabeledRecord>& records);

/// The rows' memory, said before the backbone runs: tokens x hidden size x 4 bytes (f32), plus
/// one lexical row per option.
struct RowsPlan {
  std::size_t records = 0;
  std::int64_t tokens = 0;
  std::int64_t options = 0;
  std::int64_t hidden_size = 0;
  std::uint64_t bytes = 0;
  /// "150 records, 61,200 tokens x 4096 x 4 B + 900 option rows = 0.94 GiB"
  std::string describe() const;
};

/// The plan of keeping the rows of `records` (hidden size `hidden_size`).
RowsPlan plan_rows(const std::vector<const PreparedRecord*>& records, std::int64_t hidden_size);

/// Thrown by compute_rows when `interrupted()` said so (between two records).
struct RowsInterrupted {
  std::size_t done = 0;
  std::size_t total = 0;
};

/// Runs the backbone once per record (`engine.decide`, the serving path) and keeps its rows.
/// `on_record(done, total)` after each; `interrupted()` (when set) is asked before each. Throws
/// what Engine::decide throws, naming the record; RowsInterrupted.
std::vector<RowsRecord> compute_rows(runtime::Engine& engine, std::vector<PreparedRecord> records,
                                     const std::function<void(std::size_t, std::size_t)>& on_record,
                                     const std::function<bool()>& interrupted = {});

}  // namespace clef::tune
