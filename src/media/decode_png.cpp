// PNG through libpng's low-level API, with the transforms chosen per colour type so the result
// equals Pillow's open + convert("RGB") (see decode.hpp). libpng reports errors by longjmp: the
// function that calls setjmp keeps no object with a destructor and touches state only through
// a reference, and the state is freed by its owner's destructor.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "media/decoders.hpp"
#include "media/errors.hpp"
#include "media/exif.hpp"

namespace clef::media::detail {
namespace {

struct PngState {
  std::span<const std::uint8_t> input;
  std::size_t pos = 0;
  std::string error;
  png_structp png = nullptr;
  png_infop info = nullptr;
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int color_type = 0;
  int bit_depth = 0;
  int channels = 0;   // after transforms
  int out_depth = 0;  // after transforms: 8, or 16 for 16-bit grey (clipped later)
  std::size_t rowbytes = 0;
  std::vector<std::uint8_t> pixels;
  std::vector<png_bytep> rows;
  int orientation = 1;

  ~PngState() {
    if (png != nullptr) png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
  }
};

void on_error(png_structp png, png_const_charp message) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  s->error = message != nullptr ? message : "unknown error";
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void on_read(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > s->input.size() - s->pos) png_error(png, "file is truncated");
  std::memcpy(out, s->input.data() + s->pos, n);
  s->pos += n;
}

void read_exif(PngState& s) {
  png_uint_32 n = 0;
  png_bytep exif = nullptr;
  if (s.orientation == 1 && png_get_eXIf_1(s.png, s.info, &n, &exif) != 0 && exif != nullptr) {
    s.orientation = exif_orientation({exif, n});
  }
}

/// Header: dimensions and colour type. Returns false after a libpng error (message in s.error).
bool read_header(PngState& s) {
  if (setjmp(png_jmpbuf(s.png)) != 0) return false;
  png_set_read_fn(s.png, &s, on_read);
  png_set_user_limits(s.png, 0x7fffffffL, 0x7fffffffL);  // clef's own pixel limit decides
  png_read_info(s.png, s.info);
  s.width = png_get_image_width(s.png, s.info);
  s.height = png_get_image_height(s.png, s.info);
  s.color_type = png_get_color_type(s.png, s.info);
  s.bit_depth = png_get_bit_depth(s.png, s.info);
  read_exif(s);
  return true;
}

/// Transforms and pixels. Returns false after a libpng error.
bool read_pixels(PngState& s) {
  if (setjmp(png_jmpbuf(s.png)) != 0) return false;
  s.out_depth = 8;
  switch (s.color_type) {
    case PNG_COLOR_TYPE_PALETTE:
      png_set_palette_to_rgb(s.png);  // RGB, or RGBA with tRNS (alpha dropped below)
      break;
    case PNG_COLOR_TYPE_GRAY:
      if (s.bit_depth < 8) png_set_expand_gray_1_2_4_to_8(s.png);  // scaled as Pillow's L;1/2/4
      if (s.bit_depth == 16) s.out_depth = 16;                     // clipped below, not stripped
      break;
    default:  // GRAY_ALPHA, RGB, RGBA: 16-bit keeps the high byte, like Pillow's *;16B raw modes
      if (s.bit_depth == 16) png_set_strip_16(s.png);
      break;
  }
  png_set_interlace_handling(s.png);
  png_read_update_info(s.png, s.info);
  s.channels = png_get_channels(s.png, s.info);
  s.rowbytes = png_get_rowbytes(s.png, s.info);
  s.pixels.resize(s.rowbytes * s.height);
  s.rows.resize(s.height);
  for (png_uint_32 y = 0; y < s.height; ++y) s.rows[y] = s.pixels.data() + y * s.rowbytes;
  png_read_image(s.png, s.rows.data());
  return true;
}

/// Chunks after the image data (an eXIf placed there). Errors here are ignored: the pixels are
/// already complete.
void read_tail(PngState& s) {
  if (setjmp(png_jmpbuf(s.png)) != 0) return;
  png_read_end(s.png, s.info);
  read_exif(s);
}

RgbImage to_rgb(const PngState& s) {
  RgbImage out(static_cast<int>(s.width), static_cast<int>(s.height));
  for (png_uint_32 y = 0; y < s.height; ++y) {
    const std::uint8_t* in = s.rows[y];
    std::uint8_t* o = out.pixel(0, static_cast<int>(y));
    for (png_uint_32 x = 0; x < s.width; ++x, o += 3) {
      if (s.channels >= 3) {
        std::memcpy(o, in + x * s.channels, 3);
      } else if (s.out_depth == 16) {  // 16-bit grey, big-endian: Pillow clips to 255
        const std::uint8_t hi = in[x * 2];
        const std::uint8_t v = hi != 0 ? 255 : in[x * 2 + 1];
        o[0] = o[1] = o[2] = v;
      } else {  // grey or grey+alpha
        o[0] = o[1] = o[2] = in[x * s.channels];
      }
    }
  }
  return out;
}

}  // namespace

Decoded decode_png(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  PngState s;
  s.input = bytes;
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
  if (s.png == nullptr) throw Error(ErrorKind::internal, "internal", "libpng init failed");
  s.info = png_create_info_struct(s.png);
  if (s.info == nullptr) throw Error(ErrorKind::internal, "internal", "libpng init failed");
  if (!read_header(s)) throw media::kImageMedia.invalid("PNG image is invalid: " + s.error);
  check_dimensions(s.width, s.height, limits);
  if (!read_pixels(s)) throw media::kImageMedia.invalid("PNG image is invalid: " + s.error);
  read_tail(s);
  return Decoded{to_rgb(s), s.orientation};
}

}  // namespace clef::media::detail
