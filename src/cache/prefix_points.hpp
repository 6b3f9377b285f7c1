#pragma once
// Where a record's prefill can be snapshotted and resumed: the points a record's layout is cut at
// when a state cache may keep them, placed so that the cuts change no answer.

#include <cstddef>
#include <functional>
#include <span>
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
/// Each point is moved down to a multiple of backbone::kBatchRowAlignment from the start of its
/// text segment, so a cut moves no batch's row blocks: with flash attention off the hidden states
/// are the same with the cuts as without them (and, for a text-only record, as one pass), also
/// with repacked weights; a snapshot then holds up to 15 tokens fewer. A point that would leave a
/// text segment of one token on either side is dropped (a 1-token decode takes other kernels:
/// backbone::chunk_length), as is a duplicate. The points depend only on the record, so cold and
/// warm prefills of it are cut alike (backbone::PrefillOptions::cuts).
std::vector<int> snapshot_points(const record::Record& rec);

/// The snapshot point the end of `rec`'s state became (moved down to the row alignment), or 0
/// when the state end is not one of snapshot_points(rec).
int state_end_point(const record::Record& rec);

/// Prefixes shorter than this are prefilled again rather than cached (cheaper to recompute than
/// to keep; the 36-token system prefix is just over it).
inline constexpr int kMinCachedTokens = 32;
/// Recurrent-only checkpoints kept with one cached state (each holds every Gated DeltaNet state:
/// ~53 MB on the 9B).
inline constexpr std::size_t kMaxCheckpoints = 8;

/// What one prefill takes for the state cache (backbone::PrefillOptions::snapshot_at and
/// checkpoint_at), ascending token counts.
struct SnapshotPlan {
  std::vector<int> snapshot_at;
  std::vector<int> checkpoint_at;
};

/// Pure: the snapshots a prefill resumed after `resumed` tokens takes. Full snapshots at the
/// `points` (snapshot_points()) after `resumed`, of at least kMinCachedTokens, that `cached` says
/// are not kept yet; when the last of them is `state_end` (state_end_point(), 0: none),
/// recurrent-only checkpoints at up to kMaxCheckpoints of the layout's batch `boundaries` after
/// `resumed` inside the state (after `state_begin`, before `state_end`), evenly spaced and always
/// the last one (an appended state resumes from it; any subset of the layout's boundaries is
/// safe: a resume point only has to be one of them).
SnapshotPlan plan_snapshots(std::span<const int> points, const std::function<bool(int)>& cached,
                            std::span<const int> boundaries, int resumed, int state_begin,
                            int state_end);

}  // namespace clef::cache
