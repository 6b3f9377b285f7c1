#!/usr/bin/python3
"""Generates tests/data/vision: small images in every decoder path and what Pillow makes of them.

Run with Debian's Pillow (apt-get install -y python3-pil python3-numpy), from the repository root:
    /usr/bin/python3 scripts/gen_vision_expected.py
Deterministic: the images come from a fixed seed, so rerunning reproduces the same files.

Outputs (all small):
- decode/*.{png,jpg,webp} and decode/*.rgb: encoded images and the RGB bytes the reference gets
  from them, i.e. transformers' load_image(): PIL.Image.open -> ImageOps.exif_transpose ->
  convert("RGB"). decode_cases.txt lists `name file expected.rgb width height`, and refusals as
  `refuse name file http_status`.
- resize/*.rgb and resize_cases.txt: Pillow's Image.resize(..., BICUBIC) of two source images to
  a set of sizes (`source.rgb src_w src_h out.rgb out_w out_h`).
- smart_resize_cases.txt: transformers' smart_resize (factor 32, min 65536, max 16777216) and the
  grid it implies, from the reference formula below: `h w rh rw grid_t grid_h grid_w H W N shift`,
  or `h w error`; smart_resize_overrides.txt the same with other min/max pixels.
"""
import io
import math
import os
import struct
import zlib

import numpy as np
from PIL import Image, ImageOps

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "vision")
DEC = os.path.join(ROOT, "decode")
RES = os.path.join(ROOT, "resize")
rng = np.random.default_rng(20240607)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# ---------------------------------------------------------------- a minimal PNG writer, for the
# colour types and bit depths Pillow does not write (2/4-bit grey, 16-bit grey+alpha, ...)
def png_chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def raw_png(width, height, bit_depth, color_type, rows, extra=b""):
    """rows: list of bytes, each one scanline already packed (no filter byte)."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    raw = b"".join(b"\x00" + r for r in rows)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")


def pack_bits(values, bits):
    out = bytearray()
    acc, n = 0, 0
    for v in values:
        acc = (acc << bits) | int(v)
        n += bits
        if n == 8:
            out.append(acc)
            acc, n = 0, 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)


def pillow_rgb(data):
    """What the reference makes of encoded bytes."""
    im = Image.open(io.BytesIO(data))
    im = ImageOps.exif_transpose(im)
    return im.convert("RGB")


def picture(w, h):
    """An asymmetric picture: gradients plus noise, so any flip or channel swap shows."""
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1)).astype(np.uint8)
    g = (y * 255 // max(h - 1, 1)).astype(np.uint8)
    b = rng.integers(0, 256, size=(h, w), dtype=np.uint8)
    a = np.stack([r, g, b], -1)
    a[0, 0] = (255, 0, 0)  # a red top-left corner marks the orientation
    return a


def exif_bytes(orientation):
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


cases = []
refusals = []


def add(name, data, ext):
    fname = f"{name}.{ext}"
    write(os.path.join(DEC, fname), data)
    rgb = pillow_rgb(data)
    write(os.path.join(DEC, f"{name}.rgb"), rgb.tobytes())
    cases.append(f"{name} decode/{fname} decode/{name}.rgb {rgb.width} {rgb.height}")


def save(im, fmt, **kw):
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def gen_decode():
    W, H = 23, 17
    base = picture(W, H)
    rgb = Image.fromarray(base, "RGB")
    alpha = rng.integers(0, 256, size=(H, W), dtype=np.uint8)
    alpha[:, :3] = 0  # fully transparent columns: their colour must survive (alpha dropped)
    rgba = Image.fromarray(np.dstack([base, alpha]), "RGBA")
    grey = rgb.convert("L")

    # PNG, the colour types Pillow writes
    add("png_rgb8", save(rgb, "PNG"), "png")
    add("png_rgba8", save(rgba, "PNG"), "png")
    add("png_grey8", save(grey, "PNG"), "png")
    add("png_grey_alpha8", save(Image.merge("LA", (grey, Image.fromarray(alpha))), "PNG"), "png")
    pal = rgb.quantize(colors=37)
    add("png_palette8", save(pal, "PNG"), "png")
    pal16 = rgb.quantize(colors=13)
    add("png_palette4", save(pal16, "PNG", bits=4), "png")
    add("png_palette_trns", save(pal, "PNG", transparency=3), "png")
    add("png_bilevel1", save(grey.point(lambda v: 255 if v > 127 else 0).convert("1"), "PNG"), "png")
    add("png_exif_rot6", save(rgb, "PNG", exif=exif_bytes(6)), "png")

    # PNG, hand-written: low-bit grey, 16-bit everything, tRNS on RGB
    g2 = rng.integers(0, 4, size=(H, W))
    add("png_grey2", raw_png(W, H, 2, 0, [pack_bits(r, 2) for r in g2]), "png")
    g4 = rng.integers(0, 16, size=(H, W))
    add("png_grey4", raw_png(W, H, 4, 0, [pack_bits(r, 4) for r in g4]), "png")
    # 16-bit grey: values below and above 255, to show Pillow clips rather than taking the high byte
    g16 = rng.integers(0, 1024, size=(H, W)).astype(">u2")
    g16[0, :8] = [0, 1, 254, 255, 256, 257, 511, 65535]
    add("png_grey16", raw_png(W, H, 16, 0, [r.tobytes() for r in g16]), "png")
    la16 = rng.integers(0, 65536, size=(H, W, 2)).astype(">u2")
    add("png_grey_alpha16", raw_png(W, H, 16, 4, [r.tobytes() for r in la16]), "png")
    rgb16 = rng.integers(0, 65536, size=(H, W, 3)).astype(">u2")
    add("png_rgb16", raw_png(W, H, 16, 2, [r.tobytes() for r in rgb16]), "png")
    rgba16 = rng.integers(0, 65536, size=(H, W, 4)).astype(">u2")
    add("png_rgba16", raw_png(W, H, 16, 6, [r.tobytes() for r in rgba16]), "png")
    trns = png_chunk(b"tRNS", struct.pack(">HHH", int(base[1, 1, 0]), int(base[1, 1, 1]), int(base[1, 1, 2])))
    add("png_rgb8_trns", raw_png(W, H, 8, 2, [r.tobytes() for r in base], extra=trns), "png")

    # JPEG: baseline 4:2:0, 4:4:4, progressive, greyscale, every EXIF orientation
    add("jpeg_420", save(rgb, "JPEG", quality=90), "jpg")
    add("jpeg_444", save(rgb, "JPEG", quality=95, subsampling=0), "jpg")
    add("jpeg_progressive", save(rgb, "JPEG", quality=85, progressive=True), "jpg")
    add("jpeg_grey", save(grey, "JPEG", quality=90), "jpg")
    for o in range(1, 9):
        add(f"jpeg_exif_orient{o}", save(rgb, "JPEG", quality=92, exif=exif_bytes(o)), "jpg")

    # WebP: lossy, lossless, lossless with alpha, lossy with alpha, with EXIF orientation
    add("webp_lossy", save(rgb, "WEBP", quality=80), "webp")
    add("webp_lossless", save(rgb, "WEBP", lossless=True), "webp")
    add("webp_lossless_alpha", save(rgba, "WEBP", lossless=True, exact=True), "webp")
    add("webp_lossy_alpha", save(rgba, "WEBP", quality=80), "webp")
    add("webp_exif_rot8", save(rgb, "WEBP", lossless=True, exif=exif_bytes(8)), "webp")

    # Refusals
    cmyk = Image.new("CMYK", (W, H), (10, 20, 30, 40))
    write(os.path.join(DEC, "refuse_cmyk.jpg"), save(cmyk, "JPEG"))
    refusals.append("refuse cmyk decode/refuse_cmyk.jpg 415")
    write(os.path.join(DEC, "refuse_gif.gif"), save(rgb, "GIF"))
    refusals.append("refuse gif decode/refuse_gif.gif 415")
    anim = [rgb, rgb.transpose(Image.FLIP_LEFT_RIGHT)]
    buf = io.BytesIO()
    anim[0].save(buf, "WEBP", save_all=True, append_images=anim[1:], duration=100, lossless=True)
    write(os.path.join(DEC, "refuse_anim.webp"), buf.getvalue())
    refusals.append("refuse animated_webp decode/refuse_anim.webp 415")
    good = save(rgb, "PNG")
    write(os.path.join(DEC, "refuse_truncated.png"), good[: len(good) // 2])
    refusals.append("refuse truncated_png decode/refuse_truncated.png 400")
    goodj = save(rgb, "JPEG", quality=90)
    write(os.path.join(DEC, "refuse_truncated.jpg"), goodj[: len(goodj) * 2 // 3])
    refusals.append("refuse truncated_jpeg decode/refuse_truncated.jpg 400")
    # Decompression bombs: headers claiming 100000 x 100000 pixels (10 Gpx) with tiny bodies.
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    bomb = (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
            + png_chunk(b"IDAT", zlib.compress(b"\x00" * 4096)) + png_chunk(b"IEND", b""))
    write(os.path.join(DEC, "refuse_bomb.png"), bomb)
    refusals.append("refuse bomb_png decode/refuse_bomb.png 413")
    # A JPEG whose SOF claims 60000 x 60000: patch the frame header of a real file.
    j = bytearray(save(rgb, "JPEG", quality=50))
    i = 2
    while i < len(j):
        marker, length = j[i + 1], struct.unpack(">H", j[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            j[i + 5:i + 9] = struct.pack(">HH", 60000, 60000)
            break
        i += 2 + length
    write(os.path.join(DEC, "refuse_bomb.jpg"), bytes(j))
    refusals.append("refuse bomb_jpeg decode/refuse_bomb.jpg 413")


def gen_resize():
    lines = []
    noise = rng.integers(0, 256, size=(29, 37, 3), dtype=np.uint8)
    smooth = picture(41, 31)
    for sname, arr in (("noise_37x29", noise), ("picture_41x31", smooth)):
        write(os.path.join(RES, f"{sname}.rgb"), arr.tobytes())
        src = Image.fromarray(arr, "RGB")
        for (w, h) in ((16, 12), (8, 5), (64, 48), (50, 61), (37 if sname.startswith("noise") else 41, 10),
                       (80, 29 if sname.startswith("noise") else 31), (33, 27), (1, 1), (3, 90)):
            out = src.resize((w, h), Image.BICUBIC)
            oname = f"{sname}_to_{w}x{h}.rgb"
            write(os.path.join(RES, oname), out.tobytes())
            lines.append(f"resize/{sname}.rgb {src.width} {src.height} resize/{oname} {w} {h}")
    return lines


def smart_resize(height, width, factor=32, min_pixels=65536, max_pixels=16777216):
    """transformers 5.x models/qwen2_vl/image_processing_qwen2_vl.py smart_resize."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError("absolute aspect ratio must be smaller than 200")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def gen_smart_resize():
    sizes = [(224, 224), (480, 640), (640, 480), (1280, 960), (960, 1280), (441, 330), (330, 441),
             (3000, 4000), (4000, 3000), (10, 1000), (1000, 10), (1, 1), (1, 200), (1, 201),
             (200, 300), (240, 256), (256, 240), (768, 1024), (48, 48), (80, 80), (112, 112),
             (4096, 4096), (4097, 4096), (5000, 5000), (8000, 6000), (100, 20000), (100, 20001),
             (16, 4096), (635, 960), (333, 777), (12345, 678), (99, 19800), (2048, 2048),
             (65536, 400), (1080, 1920), (1920, 1080), (257, 255), (31, 33), (7, 1400)]
    lines = []
    for h, w in sizes:
        try:
            rh, rw = smart_resize(h, w)
        except ValueError:
            lines.append(f"{h} {w} error")
            continue
        gh, gw = rh // 16, rw // 16
        H, W = gh // 2, gw // 2
        n = H * W
        lines.append(f"{h} {w} {rh} {rw} 1 {gh} {gw} {H} {W} {n} {n - max(H, W)}")
    return lines


def gen_smart_resize_overrides():
    """Overridden min_pixels / max_pixels (the processor's size.shortest_edge / longest_edge)."""
    cases = [(768, 1024, 65536, 262144), (480, 640, 4096, 65536), (100, 100, 262144, 16777216),
             (3000, 4000, 65536, 1048576), (224, 224, 8192, 4194304), (10, 1000, 1024, 16777216)]
    return [f"{h} {w} {mn} {mx} {' '.join(map(str, smart_resize(h, w, 32, mn, mx)))}"
            for h, w, mn, mx in cases]


def main():
    gen_decode()
    with open(os.path.join(ROOT, "decode_cases.txt"), "w") as f:
        f.write("# name file expected_rgb width height | refuse name file status (scripts/gen_vision_expected.py)\n")
        f.write("\n".join(cases + refusals) + "\n")
    with open(os.path.join(ROOT, "resize_cases.txt"), "w") as f:
        f.write("# source.rgb src_w src_h expected.rgb out_w out_h: Pillow Image.resize BICUBIC\n")
        f.write("\n".join(gen_resize()) + "\n")
    with open(os.path.join(ROOT, "smart_resize_cases.txt"), "w") as f:
        f.write("# h w resized_h resized_w grid_t grid_h grid_w H W n_image_tokens rope_shift | h w error\n")
        f.write("\n".join(gen_smart_resize()) + "\n")
    with open(os.path.join(ROOT, "smart_resize_overrides.txt"), "w") as f:
        f.write("# h w min_pixels max_pixels resized_h resized_w (factor 32)\n")
        f.write("\n".join(gen_smart_resize_overrides()) + "\n")


if __name__ == "__main__":
    main()
