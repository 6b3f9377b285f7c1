// FFmpeg behind VideoContainer: built as the module libclef_video_ffmpeg.so
// (container_backend.hpp).

#include "video/container_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mem.h>
#include <libswscale/swscale.h>
}

#include "media/errors.hpp"
#include "video/rgb_conversion.hpp"

namespace clef::video {
namespace {

using Clock = std::chrono::steady_clock;

// Containers and decoders clef accepts; anything else is refused before it is parsed further.
constexpr const char* kFormatWhitelist = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi";
constexpr const char* kCodecWhitelist =
    "h264,hevc,vp8,vp9,libvpx,libvpx-vp9,av1,libdav1d,libaom-av1,mpeg4,mpeg1video,mpeg2video,"
    "mjpeg,ffv1,png,rawvideo";

/// Seconds for a message: up to 6 significant digits, no trailing zeros ("2.5", "600").
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", s);
  return buf;
}

std::string av_error_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

struct FormatDeleter {
  void operator()(AVFormatContext* p) const { avformat_close_input(&p); }
};
struct IoDeleter {
  void operator()(AVIOContext* p) const {
    if (p != nullptr) av_freep(&p->buffer);
    avio_context_free(&p);
  }
};
struct CodecDeleter {
  void operator()(AVCodecContext* p) const { avcodec_free_context(&p); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameDeleter {
  void operator()(AVFrame* p) const { av_frame_free(&p); }
};

}  // namespace

class FfmpegContainer final : public ContainerBackend {
 public:
  std::vector<std::uint8_t> bytes;
  std::int64_t pos = 0;
  VideoLimits limits;
  std::string param;
  /// Work on this video is bounded by limits.decode_timeout in all: each operation (open, scan,
  /// decode) gets what earlier ones left (time spent on other videos does not count).
  Clock::duration spent{};
  Clock::time_point deadline;
  bool timed_out = false;
  std::function<bool()> cancelled;  ///< the client is gone (may be empty)
  bool gone = false;

  /// Starts one operation's clock; its destructor adds the time to `spent`.
  struct Operation {
    explicit Operation(FfmpegContainer& c) : c(c), start(Clock::now()) {
      c.deadline = start + (c.limits.decode_timeout - c.spent);
    }
    ~Operation() { c.spent += Clock::now() - start; }
    Operation(const Operation&) = delete;
    Operation& operator=(const Operation&) = delete;
    FfmpegContainer& c;
    Clock::time_point start;
  };
  std::unique_ptr<AVIOContext, IoDeleter> io;
  std::unique_ptr<AVFormatContext, FormatDeleter> format;
  int stream_index = -1;
  const AVCodec* codec = nullptr;
  StreamInfo info_;

  static int read(void* opaque, std::uint8_t* buf, int size) {
    auto* s = static_cast<FfmpegContainer*>(opaque);
    const auto left = static_cast<std::int64_t>(s->bytes.size()) - s->pos;
    if (left <= 0) return AVERROR_EOF;
    const int n = static_cast<int>(std::min<std::int64_t>(left, size));
    std::memcpy(buf, s->bytes.data() + s->pos, static_cast<std::size_t>(n));
    s->pos += n;
    return n;
  }

  static std::int64_t seek(void* opaque, std::int64_t offset, int whence) {
    auto* s = static_cast<FfmpegContainer*>(opaque);
    const auto size = static_cast<std::int64_t>(s->bytes.size());
    switch (whence & ~AVSEEK_FORCE) {
      case AVSEEK_SIZE:
        return size;
      case SEEK_SET:
        break;
      case SEEK_CUR:
        offset += s->pos;
        break;
      case SEEK_END:
        offset += size;
        break;
      default:
        return AVERROR(EINVAL);
    }
    if (offset < 0 || offset > size) return AVERROR(EINVAL);
    s->pos = offset;
    return offset;
  }

  static int interrupt(void* opaque) {
    auto* s = static_cast<FfmpegContainer*>(opaque);
    if (Clock::now() > s->deadline) s->timed_out = true;
    if (s->cancelled && s->cancelled()) s->gone = true;
    return s->timed_out || s->gone ? 1 : 0;
  }

  void check_time() {
    if (Clock::now() > deadline) timed_out = true;
    if (gone || (cancelled && cancelled())) {
      throw DecisionCancelled(param +
                              ": the client closed its connection while the video was read");
    }
    if (timed_out) {
      throw media::kVideoMedia.too_large("decoding the video took longer than " +
                                             std::to_string(limits.decode_timeout.count()) + " ms",
                                         param);
    }
  }

  // An FFmpeg failure while reading: the deadline's refusal when it was the cause.
  [[noreturn]] void fail(const std::string& what, int err) {
    check_time();
    throw media::kVideoMedia.invalid(what + ": " + av_error_text(err), param);
  }

  void open() {
    constexpr int kIoBuffer = 64 * 1024;
    auto* buffer = static_cast<unsigned char*>(av_malloc(kIoBuffer));
    if (buffer == nullptr) throw Error(ErrorKind::internal, "internal", "out of memory", param);
    io.reset(avio_alloc_context(buffer, kIoBuffer, 0, this, &FfmpegContainer::read, nullptr,
                                &FfmpegContainer::seek));
    if (!io) {
      av_free(buffer);
      throw Error(ErrorKind::internal, "internal", "out of memory", param);
    }
    AVFormatContext* fmt = avformat_alloc_context();
    if (fmt == nullptr) throw Error(ErrorKind::internal, "internal", "out of memory", param);
    fmt->pb = io.get();
    fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    fmt->interrupt_callback.callback = &FfmpegContainer::interrupt;
    fmt->interrupt_callback.opaque = this;
    AVDictionary* opts = nullptr;
    av_dict_set(&opts, "format_whitelist", kFormatWhitelist, 0);
    av_dict_set(&opts, "codec_whitelist", kCodecWhitelist, 0);
    const int err = avformat_open_input(&fmt, nullptr, nullptr, &opts);
    av_dict_free(&opts);
    if (err < 0) {  // avformat_open_input frees fmt on failure
      check_time();
      // A format outside the whitelist is probed but not opened: say it is not accepted.
      const AVInputFormat* probed = nullptr;
      AVProbeData pd{};
      pd.buf = bytes.data();
      pd.buf_size = static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 20));
      pd.filename = "";
      std::vector<std::uint8_t> padded(static_cast<std::size_t>(pd.buf_size) +
                                       AVPROBE_PADDING_SIZE);
      std::memcpy(padded.data(), bytes.data(), static_cast<std::size_t>(pd.buf_size));
      pd.buf = padded.data();
      probed = av_probe_input_format(&pd, 1);
      if (probed != nullptr &&
          std::string(kFormatWhitelist).find(probed->name) == std::string::npos) {
        throw media::kVideoMedia.unsupported(
            std::string("the video container '") + probed->name +
                "' is not supported; use MP4/QuickTime, Matroska/WebM or AVI",
            param);
      }
      throw media::kVideoMedia.invalid(
          "the video could not be read as a container: " + av_error_text(err), param);
    }
    format.reset(fmt);
    if (const int e = avformat_find_stream_info(fmt, nullptr); e < 0) {
      fail("the video's streams could not be read", e);
    }
    stream_index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (stream_index < 0) throw media::kVideoMedia.invalid("the file has no video stream", param);
    const AVStream* st = fmt->streams[stream_index];
    const AVCodecParameters* par = st->codecpar;
    codec = avcodec_find_decoder(par->codec_id);
    const char* codec_name = avcodec_get_name(par->codec_id);
    if (codec == nullptr ||
        std::string(",")
                .append(kCodecWhitelist)
                .append(",")
                .find(std::string(",") + codec->name + ",") == std::string::npos) {
      throw media::kVideoMedia.unsupported(
          std::string("the video codec '") + codec_name +
              "' is not supported; use H.264, HEVC, VP8, VP9, AV1, MPEG-1/2/4, "
              "Motion JPEG, FFV1, PNG or raw video",
          param);
    }
    info_.container = fmt->iformat->name;
    info_.codec = codec->name;
    info_.width = par->width;
    info_.height = par->height;
    info_.header_frames = st->nb_frames;
    if (st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0) {
      info_.average_fps = av_q2d(st->avg_frame_rate);
    }
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0) {
      info_.duration_s = static_cast<double>(st->duration) * av_q2d(st->time_base);
    } else if (fmt->duration != AV_NOPTS_VALUE && fmt->duration > 0) {
      info_.duration_s = static_cast<double>(fmt->duration) / AV_TIME_BASE;
    }
    if (info_.width <= 0 || info_.height <= 0) {
      throw media::kVideoMedia.invalid("the video stream declares no frame size", param);
    }
    const auto pixels =
        static_cast<std::uint64_t>(info_.width) * static_cast<std::uint64_t>(info_.height);
    if (pixels > limits.max_frame_pixels) {
      throw media::kVideoMedia.too_large("video frames are " + std::to_string(info_.width) + "x" +
                                             std::to_string(info_.height) + " = " +
                                             std::to_string(pixels) + " pixels; the limit is " +
                                             std::to_string(limits.max_frame_pixels),
                                         param);
    }
    // The header's duration and frame count are not trusted for the limits (a header may claim
    // anything, and libavformat estimates a missing duration from the bit rate): scan() measures
    // the packets.
  }

  /// Back to the first packet before an operation that reads packets, when an earlier one has
  /// read some: the container is opened again from its bytes (any demuxer can, where seeking to
  /// the start is not supported by all of them). The last operation leaves it where it is.
  void start_reading() {
    if (read_packets) {
      format.reset();
      io.reset();
      pos = 0;
      open();
    }
    read_packets = true;
  }
  bool read_packets = false;  ///< an operation has read packets since the container was opened

  const StreamInfo& info() const noexcept override { return info_; }
  ContentScan scan() override;
  std::vector<media::RgbImage> decode(
      std::span<const std::int64_t> indices,
      const std::function<media::RgbImage(media::RgbImage)>& transform) override;
};

ContentScan FfmpegContainer::scan() {
  FfmpegContainer& s = *this;
  const Operation op(s);
  s.start_reading();
  std::unique_ptr<AVPacket, PacketDeleter> pkt(av_packet_alloc());
  const AVRational time_base = s.format->streams[s.stream_index]->time_base;
  ContentScan out;
  std::int64_t begin = INT64_MAX;
  std::int64_t end = INT64_MIN;
  for (;;) {
    const int e = av_read_frame(s.format.get(), pkt.get());
    if (e == AVERROR_EOF) break;
    if (e < 0) s.fail("the video's packets could not be read", e);
    if (pkt->stream_index == s.stream_index) {
      ++out.frames;
      const std::int64_t pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
      if (pts != AV_NOPTS_VALUE) {
        begin = std::min(begin, pts);
        end = std::max(end, pts + std::max<std::int64_t>(pkt->duration, 0));
      }
    }
    av_packet_unref(pkt.get());
    if (out.frames > s.limits.max_stream_frames) {
      throw media::kVideoMedia.too_large(
          "the video has more than " + std::to_string(s.limits.max_stream_frames) + " frames",
          s.param);
    }
    s.check_time();
  }
  if (begin != INT64_MAX) {
    out.begin_s = static_cast<double>(begin) * av_q2d(time_base);
    out.end_s = static_cast<double>(end) * av_q2d(time_base);
  }
  out.average_fps = out.end_s > out.begin_s && out.frames > 0
                        ? static_cast<double>(out.frames) / (out.end_s - out.begin_s)
                        : s.info_.average_fps;
  if (out.end_s - out.begin_s > s.limits.max_duration_s) {
    throw media::kVideoMedia.too_large(
        "the video's frames span " + seconds_text(out.end_s - out.begin_s) + " s; the limit is " +
            seconds_text(s.limits.max_duration_s) + " s",
        s.param);
  }
  return out;
}

std::vector<media::RgbImage> FfmpegContainer::decode(
    std::span<const std::int64_t> indices,
    const std::function<media::RgbImage(media::RgbImage)>& transform) {
  FfmpegContainer& s = *this;
  const Operation op(s);
  std::vector<media::RgbImage> out;
  if (indices.empty()) return out;
  if (!std::is_sorted(indices.begin(), indices.end()) || indices.front() < 0) {
    throw Error(ErrorKind::internal, "internal", "frame indices must be ascending and >= 0",
                s.param);
  }
  s.start_reading();
  std::unique_ptr<AVCodecContext, CodecDeleter> dec(avcodec_alloc_context3(s.codec));
  if (!dec) throw Error(ErrorKind::internal, "internal", "out of memory", s.param);
  if (const int e =
          avcodec_parameters_to_context(dec.get(), s.format->streams[s.stream_index]->codecpar);
      e < 0) {
    s.fail("the video's codec parameters are unusable", e);
  }
  dec->thread_count = 1;
  // The decoder refuses a larger frame before allocating it (a header may say 64x48 and a frame
  // 16000x16000).
  dec->max_pixels = static_cast<std::int64_t>(
      std::min<std::uint64_t>(s.limits.max_frame_pixels, static_cast<std::uint64_t>(INT64_MAX)));
  dec->pkt_timebase = s.format->streams[s.stream_index]->time_base;
  AVDictionary* opts = nullptr;
  av_dict_set(&opts, "codec_whitelist", kCodecWhitelist, 0);
  const int opened = avcodec_open2(dec.get(), s.codec, &opts);
  av_dict_free(&opts);
  if (opened < 0) s.fail("the video's decoder could not be opened", opened);

  std::unique_ptr<AVPacket, PacketDeleter> pkt(av_packet_alloc());
  std::unique_ptr<AVFrame, FrameDeleter> frame(av_frame_alloc());
  RgbConverter converter;
  std::size_t next = 0;    // the next entry of indices to fill
  std::int64_t index = 0;  // the decoder's output frame count so far
  bool draining = false;
  auto take_frames = [&]() {
    for (;;) {
      const int r = avcodec_receive_frame(dec.get(), frame.get());
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return r;
      if (r < 0) s.fail("a video frame could not be decoded", r);
      if (index > s.limits.max_stream_frames) {
        throw media::kVideoMedia.too_large(
            "the video has more than " + std::to_string(s.limits.max_stream_frames) + " frames",
            s.param);
      }
      if (frame->width * static_cast<std::uint64_t>(frame->height) > s.limits.max_frame_pixels) {
        throw media::kVideoMedia.too_large("a video frame is larger than the frame pixel limit",
                                           s.param);
      }
      while (next < indices.size() && indices[next] == index) {
        if (!out.empty() && next > 0 && indices[next - 1] == index) {
          out.push_back(out.back());
        } else {
          media::RgbImage rgb = converter.convert(*frame, s.param);
          out.push_back(transform ? transform(std::move(rgb)) : std::move(rgb));
        }
        ++next;
      }
      av_frame_unref(frame.get());
      ++index;
      s.check_time();
      if (next == indices.size()) return AVERROR_EOF;
    }
  };
  while (next < indices.size()) {
    if (!draining) {
      const int e = av_read_frame(s.format.get(), pkt.get());
      if (e == AVERROR_EOF) {
        draining = true;
        avcodec_send_packet(dec.get(), nullptr);
      } else if (e < 0) {
        s.fail("the video's packets could not be read", e);
      } else {
        if (pkt->stream_index == s.stream_index) {
          const int sent = avcodec_send_packet(dec.get(), pkt.get());
          av_packet_unref(pkt.get());
          if (sent < 0 && sent != AVERROR(EAGAIN))
            s.fail("a video packet could not be decoded", sent);
        } else {
          av_packet_unref(pkt.get());
        }
      }
    }
    const int r = take_frames();
    if (r == AVERROR_EOF && (draining || next == indices.size())) break;
    s.check_time();
  }
  if (next < indices.size()) {
    throw media::kVideoMedia.invalid("the video has " + std::to_string(index) +
                                         " decodable frames; frame " +
                                         std::to_string(indices[next]) + " was asked for",
                                     s.param);
  }
  return out;
}

}  // namespace clef::video

/// The module's entry point (container_backend.hpp: OpenContainerFn).
extern "C" __attribute__((visibility("default"))) void clef_video_open_container(
    std::vector<std::uint8_t>& bytes, const clef::video::VideoLimits& limits,
    const std::string& param, const std::function<bool()>& cancelled,
    std::unique_ptr<clef::video::ContainerBackend>& out) {
  auto c = std::make_unique<clef::video::FfmpegContainer>();
  c->limits = limits;
  c->param = param;
  c->cancelled = cancelled;
  c->bytes = std::move(bytes);
  av_log_set_level(AV_LOG_QUIET);
  {
    const clef::video::FfmpegContainer::Operation op(*c);
    c->open();
  }
  out = std::move(c);
}
