#include "media/encode_png.hpp"

#include <png.h>

#include <csetjmp>
#include <memory>

#include "util/error.hpp"

namespace clef::media {
namespace {

void append_bytes(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::vector<std::uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

void no_flush(png_structp) {}

[[noreturn]] void fail(const char* what) {
  throw Error(ErrorKind::internal, "internal", std::string("PNG encoding failed: ") + what);
}

/// Owns libpng's write structs.
struct WriteStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  WriteStructs() {
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    if (png != nullptr) info = png_create_info_struct(png);
  }
  ~WriteStructs() { png_destroy_write_struct(&png, &info); }
  WriteStructs(const WriteStructs&) = delete;
  WriteStructs& operator=(const WriteStructs&) = delete;
};

/// The libpng calls, in a function of their own: longjmp out of it skips no destructor.
bool write_rows(png_structp png, png_infop info, const RgbImage& image,
                std::vector<std::uint8_t>& out) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, &out, append_bytes, no_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.width),
               static_cast<png_uint_32>(image.height), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  for (int y = 0; y < image.height; ++y) {
    // libpng only reads the row; its API takes a non-const pointer.
    png_write_row(png,
                  const_cast<png_bytep>(image.rgb.data() + stride * static_cast<std::size_t>(y)));
  }
  png_write_end(png, nullptr);
  return true;
}

}  // namespace

std::vector<std::uint8_t> encode_png(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    fail("the image is empty or its pixel buffer does not fit its size");
  }
  WriteStructs s;
  if (s.png == nullptr || s.info == nullptr) fail("libpng could not start");
  std::vector<std::uint8_t> out;
  if (!write_rows(s.png, s.info, image, out)) fail("libpng reported an error");
  return out;
}

}  // namespace clef::media
