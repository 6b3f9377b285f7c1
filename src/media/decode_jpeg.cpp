// JPEG through libjpeg(-turbo) with its defaults (islow DCT, fancy upsampling), as Pillow
// decodes it; grey is expanded to RGB by libjpeg (R=G=B, as Pillow's L -> RGB). libjpeg reports
// fatal errors by longjmp: the function that calls setjmp keeps no object with a destructor
// and touches state only through a reference; the state's owner destroys the decompressor.
#include <cstdio>  // jpeglib.h needs FILE

#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstring>
#include <string>

#include "media/decoders.hpp"
#include "media/errors.hpp"
#include "media/exif.hpp"

namespace clef::media::detail {
namespace {

struct JpegError {
  jpeg_error_mgr mgr;  // first member: libjpeg passes &mgr, we cast back
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
};

struct JpegState {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  bool created = false;
  RgbImage image;
  int orientation = 1;
  bool cmyk = false;
  ~JpegState() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
  // Warnings (level -1): Pillow refuses a truncated JPEG ("image file is truncated"), so a
  // premature end is remembered and refused; other warnings are ignored like Pillow does.
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
}

void on_output_message(j_common_ptr) {}

/// Reads the header: dimensions, colour space and the first APP1 Exif segment. Returns false
/// after a libjpeg error (message in err.message).
bool read_header(JpegState& s, std::span<const std::uint8_t> bytes) {
  if (setjmp(s.err.jump) != 0) return false;
  jpeg_mem_src(&s.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&s.cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&s.cinfo, TRUE);
  for (jpeg_saved_marker_ptr m = s.cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
        std::memcmp(m->data, "Exif\0\0", 6) == 0) {
      s.orientation = exif_orientation({m->data, m->data_length});
      break;  // Pillow keeps the first Exif segment
    }
  }
  s.cmyk = s.cinfo.jpeg_color_space == JCS_CMYK || s.cinfo.jpeg_color_space == JCS_YCCK;
  return true;
}

bool read_pixels(JpegState& s) {
  if (setjmp(s.err.jump) != 0) return false;
  s.cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&s.cinfo);
  s.image =
      RgbImage(static_cast<int>(s.cinfo.output_width), static_cast<int>(s.cinfo.output_height));
  while (s.cinfo.output_scanline < s.cinfo.output_height) {
    JSAMPROW row = s.image.pixel(0, static_cast<int>(s.cinfo.output_scanline));
    jpeg_read_scanlines(&s.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&s.cinfo);
  return true;
}

/// Installs clef's error handlers and creates the decompressor.
void create(JpegState& s) {
  s.cinfo.err = jpeg_std_error(&s.err.mgr);
  s.err.mgr.error_exit = on_error_exit;
  s.err.mgr.emit_message = on_emit_message;
  s.err.mgr.output_message = on_output_message;
  jpeg_create_decompress(&s.cinfo);
  s.created = true;
}

}  // namespace

std::optional<StoredSize> jpeg_stored_size(std::span<const std::uint8_t> bytes) noexcept {
  try {
    JpegState s;
    create(s);
    if (!read_header(s, bytes)) return std::nullopt;
    if (s.cinfo.image_width == 0 || s.cinfo.image_height == 0) return std::nullopt;
    return StoredSize{static_cast<int>(s.cinfo.image_width),
                      static_cast<int>(s.cinfo.image_height)};
  } catch (...) {
    return std::nullopt;
  }
}

Decoded decode_jpeg(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  JpegState s;
  create(s);
  if (!read_header(s, bytes))
    throw media::kImageMedia.invalid(std::string("JPEG image is invalid: ") + s.err.message);
  check_dimensions(s.cinfo.image_width, s.cinfo.image_height, limits);
  if (s.cmyk) {
    throw media::kImageMedia.unsupported(
        "CMYK JPEG images are not supported; convert the image to RGB");
  }
  if (!read_pixels(s))
    throw media::kImageMedia.invalid(std::string("JPEG image is invalid: ") + s.err.message);
  if (s.err.truncated) throw media::kImageMedia.invalid("JPEG image is truncated");
  return Decoded{std::move(s.image), s.orientation};
}

}  // namespace clef::media::detail
