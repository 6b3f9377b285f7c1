#pragma once
// Where a record's prefill can be snapshotted and resumed: the points every record's layout is
// cut at, cached or not, so a resumed prefill decodes exactly the batches a cold one does.

#include <vector>

#include "record/record.hpp"

namespace clef::cache {

/// The tokens every record of `rec`'s kind starts with: the system prefix, and <|vision_start|>
/// when it has images (the first image's first image-pad token).
int fixed_prefix_tokens(const record::Record& rec);

/// The snapshot points of `rec`, ascending, each a token count in (0, len(ids)):
///  - the end of the first text segment: the fixed system prefix (the first image's first
///    image-pad token when there are images: the prefix plus <|vision_start|>), shared by all
///    records of one kind;
///  - the end of the state (after truncation), shared by every question set asked of one state
///    (and its images).
/// In a text-only record each point is moved down to a multiple of backbone::kBatchRowAlignment
/// (so repacked weights give it the hidden states of one pass; a snapshot then holds up to 15
/// tokens fewer). A point that would leave a text segment of one token on either
/// side is dropped (a 1-token
/// decode takes other kernels: backbone::chunk_length), as is a duplicate. The points depend only
/// on the record, so cold and warm prefills of it are cut alike (backbone::PrefillOptions::cuts).
std::vector<int> snapshot_points(const record::Record& rec);

/// The snapshot point the end of `rec`'s state became (moved down to the row alignment), or 0
/// when the state end is not one of snapshot_points(rec).
int state_end_point(const record::Record& rec);

}  // namespace clef::cache
