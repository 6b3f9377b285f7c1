#pragma once
// Bicubic resampling, bit-exact with the two implementations the reference uses:
// - Pillow's Image.resize(size, BICUBIC) (libImaging/Resample.c, ImagingResample): the g256 /
//   g448 arms resize with it before the processor;
// - torch's uint8 antialiased bicubic (F.interpolate(mode="bicubic", antialias=True) on a uint8
//   tensor, aten/src/ATen/native/cpu/UpSampleKernel.cpp: _compute_index_ranges_int16_weights and
//   the separable uint8 loops, or the AVX2 path that computes the same integers): the processor's
//   own resize (transformers' TorchvisionBackend -> torchvision resize, antialias=True).
// Both are separable with Keys' cubic (a = -0.5) widened by the scale when downsampling
// (support 2 * max(in/out, 1)), the same tap ranges and double weights normalized to sum 1; a
// horizontal pass then a vertical pass, each rounded to uint8 (a pass is skipped when its size
// is unchanged). They differ only in the fixed point: Pillow always uses 22 fractional bits;
// torch picks, per axis, the largest precision p < 22 such that round(max_weight * 2^(p+1))
// still fits int16 (so int16 weights with typically 14-15 bits), and evaluates the cubic with a
// different (algebraically equal) expression.

#include "media/image.hpp"

namespace clef::vision {

enum class ResampleKind {
  pillow_bicubic,   ///< Pillow Image.resize(..., Image.BICUBIC)
  torch_bicubic_aa  ///< torch interpolate(bicubic, antialias=True) on uint8 (torchvision resize)
};

/// `image` resized to out_width x out_height with `kind`. Throws clef::Error (invalid_request)
/// if a target size is not positive.
media::RgbImage resize_bicubic(const media::RgbImage& image, int out_width, int out_height,
                               ResampleKind kind);

}  // namespace clef::vision
