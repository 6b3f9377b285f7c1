#!/usr/bin/env python3
"""Generates tests/data/render_corpus/: CPython's own answers for clef's JSON module.

render_cases.txt -- JSON texts and what CPython makes of them:
    json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
  or that it refuses them. Texts are written by a randomized writer (whitespace, escapes, number
  spellings, duplicate keys), plus mutated and hand-picked invalid ones. Format, binary-safe so that
  the expected bytes are never decoded by the code under test:
      line 1: "# ..." header
      then per case: "<verdict> <input length> <output length>\\n" <input bytes> "\\n"
                     <output bytes> "\\n"
  verdict: "ok" (output is CPython's dumps), "err" (CPython's json.loads raises), "clef-err"
  (CPython accepts, clef refuses by contract: lone surrogate escapes, nesting deeper than 128).

floats.tsv -- per line: IEEE-754 bits of x (16 hex digits), repr(x), repr(round(x, 4)), ndigits,
  repr(round(x, ndigits)); for floats across all exponents, subnormals, repr's notation
  boundaries and rounding ties.

Deterministic (fixed seed). Run with CPython 3.11 from the repository root:
    python3 scripts/gen_render_corpus.py [--out tests/data/render_corpus]
"""

import argparse
from decimal import Decimal, getcontext
import json
import math
import os
import random
import struct
import sys

SEED = 20250611
N_VALID = 11000
N_MUTATED = 2500
N_FLOATS = 12000
MAX_DEPTH = 128  # clef's default ParseLimits::max_depth
getcontext().prec = 800  # exact sums of two doubles


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


# ----------------------------------------------------------------------------- random values


class Gen:
    def __init__(self, rng):
        self.r = rng

    # characters -------------------------------------------------------------------------------
    def char(self):
        r = self.r
        k = r.random()
        if k < 0.45:
            return chr(r.randint(0x20, 0x7E))
        if k < 0.52:
            return chr(r.randint(0x00, 0x1F))  # control: must be escaped in the text
        if k < 0.55:
            return "\x7f"
        if k < 0.62:
            return r.choice('"\\/')
        if k < 0.70:
            return chr(r.randint(0xA0, 0x7FF))  # Latin, Greek, Cyrillic, Hebrew, Arabic
        if k < 0.76:
            return chr(r.choice([0x300, 0x301, 0x308, 0x327, 0x93F, 0xE31, 0x64B]))  # combining
        if k < 0.82:
            return chr(r.randint(0x800, 0xD7FF))  # BMP below the surrogates (CJK, Hangul...)
        if k < 0.88:
            return chr(r.randint(0xE000, 0xFFFF))  # BMP above the surrogates
        if k < 0.90:
            return chr(r.choice([0x2028, 0x2029, 0xFEFF, 0xFFFD, 0xFFFF, 0xE000, 0x85, 0xA0]))
        return chr(r.randint(0x10000, 0x10FFFF))  # astral

    def text(self, max_len=8):
        return "".join(self.char() for _ in range(self.r.randint(0, max_len)))

    def key(self):
        r = self.r
        k = r.random()
        if k < 0.3:
            return r.choice(["a", "b", "A", "", "id", "option_id", "description", "z", "é",
                             "\ue000", "\uffff", "\U0001f600", "\U00010000", "a\x00", "a\x7f"])
        if k < 0.6:
            # Sorting traps: astral vs BMP above the surrogates (UTF-16 order would differ).
            return "".join(r.choice(["\ue000", "\uffff", "\U00010000", "\U0001f600", "\ufb01",
                                     "x", "\x7f", "\x80", "\ud7ff"])
                           for _ in range(r.randint(1, 3)))
        return self.text(6)

    # numbers ----------------------------------------------------------------------------------
    def random_double(self):
        r = self.r
        k = r.random()
        if k < 0.4:
            bits = r.getrandbits(64)
            x = struct.unpack("<d", struct.pack("<Q", bits))[0]
            return x if math.isfinite(x) else r.random()
        if k < 0.7:
            x = float(f"{r.randint(1, 99999)}e{r.randint(-330, 310)}") * r.choice([1, -1])
            return x if math.isfinite(x) else 1.0
        if k < 0.85:
            return r.choice([1e16, 1e-4, 1e-5, 9999999999999998.0, 1e15, 123456789012345.6,
                             0.0001, 0.00009999, 1e22, 1e23, 5e-324, 2.2250738585072014e-308,
                             1.7976931348623157e308, 0.1, 0.5, 2.5, -0.0, 0.0, 100.0, 1.5e300])
        return r.uniform(-1e6, 1e6)

    def int_text(self):
        r = self.r
        k = r.random()
        if k < 0.5:
            return str(r.randint(-1000, 1000))
        if k < 0.7:
            return str(r.randint(-(2**70), 2**70))
        if k < 0.8:
            return "-0"
        n = r.randint(20, 60) if r.random() < 0.98 else r.randint(300, 400)
        return r.choice(["", "-"]) + str(r.randint(1, 9)) + "".join(
            str(r.randint(0, 9)) for _ in range(n - 1))

    def float_text(self):
        r = self.r
        k = r.random()
        if k < 0.35:
            s = repr(self.random_double())
            if "e" not in s:
                return s if "." in s else s + ".0"
            mant, exp = s.split("e")
            sign = "-" if exp.startswith("-") else r.choice(["", "+"])
            return mant + r.choice("eE") + sign + exp.lstrip("+-")
        if k < 0.5:  # exponent spellings
            return (r.choice(["", "-"]) + str(r.randint(0, 9)) + r.choice(["", ".5", ".25"]) +
                    r.choice("eE") + r.choice(["", "+", "-"]) + r.choice(["0", "00", "05", "1",
                                                                          "308", "309", "324",
                                                                          "400", "99999"]))
        if k < 0.65:  # many significant digits: correct rounding
            digits = "".join(str(r.randint(0, 9)) for _ in range(r.randint(17, 60)))
            point = r.randint(1, len(digits) - 1)
            mant = digits[:point].lstrip("0") or "0"
            return (r.choice(["", "-"]) + mant + "." + digits[point:] +
                    (f"e{r.randint(-340, 320)}" if r.random() < 0.5 else ""))
        if k < 0.72:  # exactly halfway between two doubles: ties to even
            x = abs(self.random_double()) or 1.0
            if not 1e-20 < x < 1e20:
                x = r.uniform(1e-3, 1e6)
            mid = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
            return format(mid, "f")
        return r.choice(["1e400", "-1e400", "1e-400", "-1e-400", "-0.0", "0.0", "0e0", "-0e-0",
                         "1e16", "1e-4", "1e-5", "1E+16", "0.0001", "0.00001", "1e15", "1.0",
                         "2.4703282292062327e-324", "2.4703282292062328e-324", "1e308",
                         "1.7976931348623157e308", "1.7976931348623158e308",
                         "1.7976931348623159e308", "4.9406564584124654e-324"])

    # values as text ---------------------------------------------------------------------------
    def ws(self):
        r = self.r
        if r.random() < 0.8:
            return ""
        return "".join(r.choice(" \t\n\r") for _ in range(r.randint(1, 3)))

    def quote(self, s):
        r = self.r
        out = ['"']
        for ch in s:
            cp = ord(ch)
            short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                     "\b": "\\b", "\f": "\\f", "/": "\\/"}
            must = cp < 0x20 or ch in '"\\'
            if must or r.random() < 0.2:
                if ch in short and r.random() < 0.7:
                    out.append(short[ch])
                    continue
                hexfmt = "\\u%04x" if r.random() < 0.5 else "\\u%04X"
                if cp >= 0x10000:
                    v = cp - 0x10000
                    out.append(hexfmt % (0xD800 + (v >> 10)) + hexfmt % (0xDC00 + (v & 0x3FF)))
                else:
                    out.append(hexfmt % cp)
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)

    def value_text(self, depth, budget):
        r = self.r
        k = r.random()
        if depth > 6 or budget[0] <= 0:
            k = r.random() * 0.6
        budget[0] -= 1
        if k < 0.12:
            return self.quote(self.text())
        if k < 0.24:
            return self.int_text()
        if k < 0.38:
            return self.float_text()
        if k < 0.42:
            return r.choice(["true", "false", "null", "NaN", "Infinity", "-Infinity"])
        if k < 0.6:
            items = [self.value_text(depth + 1, budget) for _ in range(r.randint(0, 5))]
            sep = self.ws() + "," + self.ws()
            return "[" + self.ws() + sep.join(items) + self.ws() + "]"
        n = r.randint(0, 5)
        keys = [self.key() for _ in range(n)]
        if n and r.random() < 0.3:  # duplicate keys: last value, first position
            keys.append(r.choice(keys))
            r.shuffle(keys)
        parts = [self.ws() + self.quote(key) + self.ws() + ":" + self.ws() +
                 self.value_text(depth + 1, budget) + self.ws() for key in keys]
        return "{" + ",".join(parts) + "}" if parts else "{" + self.ws() + "}"

    def document(self):
        return self.ws() + self.value_text(0, [self.r.randint(1, 10)]) + self.ws()


# ----------------------------------------------------------------------------- verdicts


def has_lone_surrogate(v):
    if isinstance(v, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, list):
        return any(has_lone_surrogate(x) for x in v)
    if isinstance(v, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(x) for k, x in v.items())
    return False


def depth_of(v):
    if isinstance(v, list):
        return 1 + max((depth_of(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((depth_of(x) for x in v.values()), default=0)
    return 0


def verdict(data: bytes):
    """("ok", dumps bytes) | ("err", b"") | ("clef-err", b"")."""
    try:
        text = data.decode("utf-8")  # strict: what bytes.decode accepts
        value = json.loads(text)
    except (ValueError, RecursionError):
        return "err", b""
    # clef refuses lone surrogates and deep nesting anywhere in the text, also inside a value
    # that a later duplicate key replaces: look at every key and value, objects as flat lists.
    everything = json.loads(text, object_pairs_hook=lambda pairs: [x for kv in pairs for x in kv])
    if has_lone_surrogate(everything) or depth_of(everything) > MAX_DEPTH:
        return "clef-err", b""
    return "ok", dumps(value).encode("utf-8")


# ----------------------------------------------------------------------------- invalid texts


def mutate(rng, data: bytes) -> bytes:
    k = rng.random()
    pos = rng.randint(0, len(data))
    if k < 0.25 and data:
        return data[:pos] + data[pos + 1:]
    if k < 0.5:
        ins = rng.choice([b",", b"]", b"}", b"[", b"{", b'"', b":", b"x", b"\x00", b"\x1f",
                          b"\\", b"\\u", b"\\ud800", b"\\udc00", b"\xff", b"\xc0\x80",
                          b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b" ", b"\x7f",
                          b"\x0c", b"\xc2\xa0", b"0", b"-", b".", b"e", b"'"])
        return data[:pos] + ins + data[pos:]
    if k < 0.65:
        return data[:pos]
    if k < 0.8:
        return data + rng.choice([b" x", b",", b" 1", b"]", b"}", b"\x00", b"\n\x0c", b"//c"])
    return rng.choice([b"\xef\xbb\xbf", b"\x0c", b"\xc2\xa0", b"+", b"'"]) + data


FIXED_CASES = [
    b"", b" ", b"\n", b"nul", b"True", b"None", b"nan", b"NAN", b"inf", b"Inf", b"-Inf", b"-NaN",
    b"infinity", b"+1", b"01", b"-01", b"00", b"1.", b".5", b"-", b"1e", b"1e+", b"1E-", b"0x10",
    b"1_000", b"--1", b"- 1", b"1 2", b"[1,]", b"[,1]", b"{,}", b'{"a":1,}', b'{"a"}', b'{"a":}',
    b"{'a':1}", b'{"a" 1}', b'{1:2}', b'["a" "b"]', b"[1 2]", b'"abc', b'"\\x41"', b'"\\a"',
    b'"\\u12"', b'"\\u12G4"', b'"\\ud800"', b'"\\udc00"', b'"\\ud800\\u0041"', b'"\\ud800\\ud800"',
    b'"\\udbff\\udfff"', b'"\\ud800\\udc00"', b'"\\uD834\\uDD1E"', b'"\\u0000"', b'"\x00"',
    b'"\x1f"', b'"\t"', b'"\x7f"', b'"\xc3\xa9"', b'"\xe9"', b'"\xed\xa0\x80"', b'"\xf0\x9f\x98"',
    b'"\xf4\x90\x80\x80"', b'"\xc0\xaf"', b'"\xe0\x80\xaf"', b"\xef\xbb\xbf{}", b"[1]x",
    b"[1] ", b" \t\r\n[1]\r\n", b"[1]\x0c", b"/*c*/1", b"1//c", b"[", b"]", b"{", b"}",
    b'{"a":1,"a":2,"b":3,"a":4}', b'{"b":1,"a":2,"b":3}', b"-0", b"-0.0", b"0.0", b"-0e0",
    b"1e400", b"-1e400", b"1e-400", b"1" + b"0" * 400 + b".0", b"0." + b"0" * 400 + b"1",
    b"9" * 4300, b"9" * 4301, b"-" + b"9" * 4300, b"-" + b"9" * 4301,
    b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
    b'{"a":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH,
    b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1),
    b"[" * 5000, b"[" * 5000 + b"]" * 5000,
    b'{"\xee\x80\x80":1,"\xf0\x9f\x98\x80":2,"\xef\xbf\xbf":3,"":4}',
    b'"\\/\\"\\\\\\b\\f\\n\\r\\t"', b'"\xe2\x80\xa8\xe2\x80\xa9"', b"NaN", b"Infinity",
    b"-Infinity", b"[NaN,Infinity,-Infinity]", b"-Infinityx", b"Infinit", b"truex", b"tru",
]


# ----------------------------------------------------------------------------- floats


def float_cases(rng):
    xs = []
    # all exponents: powers of ten and their neighbours, repr's notation boundaries
    for e in range(-325, 310):
        try:
            p = float(f"1e{e}")
        except OverflowError:
            continue
        xs += [p, math.nextafter(p, 0.0), math.nextafter(p, math.inf), 5 * p, 1.5 * p]
    xs += [1e16, 1e-4, 1e-5, 9999999999999998.0, 9999999999999999.0, 0.00009999999999999999,
           0.0001, 0.00001, 1e15, 999999999999999.9, 5e-324, 1e-323, 2.2250738585072014e-308,
           2.225073858507201e-308, 1.7976931348623157e308, 0.0, -0.0, math.inf, -math.inf,
           math.nan, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.5, 1.5, 2.5, 0.00025, 0.00015, 0.00035,
           1.00005, 2.00005, 0.12345, 0.99995, 0.99994999, 123.45675, 1e300 * 1e8]
    # random bit patterns (all exponents, subnormals)
    while len(xs) < N_FLOATS * 0.55:
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if not math.isnan(x):
            xs.append(x)
    # short decimals at every scale
    while len(xs) < N_FLOATS * 0.8:
        xs.append(float(f"{rng.randint(1, 9999)}e{rng.randint(-327, 305)}") *
                  rng.choice([1, -1]))
    # ties and near-ties for round(x, 4) and round(x, n)
    while len(xs) < N_FLOATS:
        n = rng.randint(0, 8)
        k = rng.randint(0, 10**6)
        x = (k + 0.5) / 10**n
        xs.append(rng.choice([x, -x, math.nextafter(x, 0), math.nextafter(x, math.inf),
                              k / 2**rng.randint(1, 12), rng.uniform(0, 1)]))
    lines = []
    for x in xs:
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        nd = rng.choice([0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 17, 20, 300, 323, 324, 400, -1, -2,
                         -3, -5, -10, -20, -300, -308, -309, -400, rng.randint(-30, 30)])
        try:
            r_nd = repr(round(x, nd))
        except OverflowError:
            nd = 4
            r_nd = repr(round(x, 4))
        lines.append(f"{bits:016x}\t{x!r}\t{round(x, 4)!r}\t{nd}\t{r_nd}\n")
    return lines


# ----------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join("tests", "data", "render_corpus"))
    args = ap.parse_args()
    if sys.version_info[:2] != (3, 11):
        print(f"warning: expected CPython 3.11, running {sys.version.split()[0]}",
              file=sys.stderr)
    rng = random.Random(SEED)
    gen = Gen(rng)

    texts = [c for c in FIXED_CASES]
    valid = [gen.document().encode("utf-8", "surrogatepass") for _ in range(N_VALID)]
    texts += valid
    texts += [mutate(rng, rng.choice(valid)) for _ in range(N_MUTATED)]

    os.makedirs(args.out, exist_ok=True)
    counts = {"ok": 0, "err": 0, "clef-err": 0}
    with open(os.path.join(args.out, "render_cases.txt"), "wb") as f:
        f.write(f"# clef render corpus: CPython {sys.version.split()[0]}, seed {SEED}; "
                "see scripts/gen_render_corpus.py\n".encode())
        for data in texts:
            v, out = verdict(data)
            counts[v] += 1
            f.write(f"{v} {len(data)} {len(out)}\n".encode() + data + b"\n" + out + b"\n")
    with open(os.path.join(args.out, "floats.tsv"), "w", encoding="ascii") as f:
        f.writelines(float_cases(rng))
    print(f"render_cases.txt: {len(texts)} cases {counts}; floats.tsv: {N_FLOATS} floats")


if __name__ == "__main__":
    main()
