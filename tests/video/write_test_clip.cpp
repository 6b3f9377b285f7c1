// Writes a short MPEG-4 clip (8 frames of tests/support/video_clips.hpp's moving square, 64x48,
// 4 fps, in MP4) to the file named by its argument: a video file for the scripts that run the
// clef binary (tests/cli/installed_clef.sh), made with FFmpeg's own encoder.
#include <cstdio>
#include <fstream>

#include "support/video_clips.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.mp4\n", argv[0]);
    return 2;
  }
  clef::test::ClipSpec spec = clef::test::square_clip(8, 4, 64, 48);
  spec.container = "mp4";
  spec.codec = "mpeg4";
  spec.pixel_format = "yuv420p";
  const auto bytes = clef::test::write_clip(spec);
  std::ofstream out(argv[1], std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return out ? 0 : 1;
}
