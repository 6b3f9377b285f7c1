#include "support/video_clips.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

namespace clef::test {
namespace {

void check(int err, const char* what) {
  if (err < 0) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(err, buf, sizeof buf);
    throw std::runtime_error(std::string(what) + ": " + buf);
  }
}

}  // namespace

media::RgbImage solid_frame(int width, int height, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  media::RgbImage img(width, height);
  for (std::size_t i = 0; i < img.rgb.size(); i += 3) {
    img.rgb[i] = r;
    img.rgb[i + 1] = g;
    img.rgb[i + 2] = b;
  }
  return img;
}

media::RgbImage moving_square(int width, int height, int i) {
  media::RgbImage img = solid_frame(width, height, static_cast<std::uint8_t>(20 * i % 256),
                                    static_cast<std::uint8_t>(255 - 13 * i % 256), 90);
  for (int y = 4; y < 12 && y < height; ++y)
    for (int x = 4 * i; x < 4 * i + 8 && x < width; ++x) {
      std::uint8_t* p = img.pixel(x, y);
      p[0] = p[1] = p[2] = 255;
    }
  return img;
}

ClipSpec square_clip(int frames, int fps, int width, int height) {
  ClipSpec spec;
  spec.frames = frames;
  spec.fps = fps;
  spec.width = width;
  spec.height = height;
  spec.frame = [width, height](int i) { return moving_square(width, height, i); };
  return spec;
}

std::vector<std::uint8_t> write_clip(const ClipSpec& spec) {
  av_log_set_level(AV_LOG_ERROR);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("clef-clip-" + std::to_string(::getpid()) + "-" +
       std::to_string(reinterpret_cast<std::uintptr_t>(&spec)) + "." +
       (spec.container == "matroska" ? "mkv" : spec.container));
  AVFormatContext* fmt = nullptr;
  check(avformat_alloc_output_context2(&fmt, nullptr, spec.container.c_str(), path.c_str()),
        "output context");
  const AVCodec* codec = avcodec_find_encoder_by_name(spec.codec.c_str());
  if (codec == nullptr) throw std::runtime_error("no encoder " + spec.codec);
  AVStream* st = avformat_new_stream(fmt, nullptr);
  AVCodecContext* enc = avcodec_alloc_context3(codec);
  const AVPixelFormat pix = av_get_pix_fmt(spec.pixel_format.c_str());
  enc->width = spec.width;
  enc->height = spec.height;
  enc->pix_fmt = pix;
  const bool vfr = !spec.pts_ms.empty();
  enc->time_base = vfr ? AVRational{1, 1000} : AVRational{1, spec.fps};
  enc->framerate = AVRational{spec.fps, 1};
  enc->gop_size = 4;
  enc->max_b_frames = 0;
  enc->thread_count = 1;
  if (spec.codec == "libx264") av_opt_set(enc->priv_data, "preset", "ultrafast", 0);
  if (fmt->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  check(avcodec_open2(enc, codec, nullptr), "open encoder");
  check(avcodec_parameters_from_context(st->codecpar, enc), "stream parameters");
  st->time_base = enc->time_base;
  st->avg_frame_rate = enc->framerate;
  check(avio_open(&fmt->pb, path.c_str(), AVIO_FLAG_WRITE), "open file");
  check(avformat_write_header(fmt, nullptr), "write header");

  SwsContext* sws = sws_getContext(spec.width, spec.height, AV_PIX_FMT_RGB24, spec.width,
                                   spec.height, pix, SWS_BILINEAR, nullptr, nullptr, nullptr);
  AVFrame* frame = av_frame_alloc();
  frame->format = pix;
  frame->width = spec.width;
  frame->height = spec.height;
  check(av_frame_get_buffer(frame, 0), "frame buffer");
  AVPacket* pkt = av_packet_alloc();
  auto drain = [&](bool flush) {
    for (;;) {
      const int r = avcodec_receive_packet(enc, pkt);
      if (r == AVERROR(EAGAIN) || (flush && r == AVERROR_EOF)) return;
      check(r, "encode");
      av_packet_rescale_ts(pkt, enc->time_base, st->time_base);
      pkt->stream_index = st->index;
      check(av_interleaved_write_frame(fmt, pkt), "write packet");
    }
  };
  for (int i = 0; i < spec.frames; ++i) {
    check(av_frame_make_writable(frame), "writable");
    const media::RgbImage rgb = spec.frame(i);
    const std::uint8_t* src[1] = {rgb.rgb.data()};
    const int stride[1] = {spec.width * 3};
    sws_scale(sws, src, stride, 0, spec.height, frame->data, frame->linesize);
    frame->pts = vfr ? spec.pts_ms[static_cast<std::size_t>(i)] : i;
    check(avcodec_send_frame(enc, frame), "send frame");
    drain(false);
  }
  check(avcodec_send_frame(enc, nullptr), "flush");
  drain(true);
  check(av_write_trailer(fmt), "trailer");
  avio_closep(&fmt->pb);
  av_packet_free(&pkt);
  av_frame_free(&frame);
  sws_freeContext(sws);
  avcodec_free_context(&enc);
  avformat_free_context(fmt);

  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return bytes;
}

}  // namespace clef::test
