// The CPython corpus (scripts/gen_render_corpus.py, tests/data/render_corpus): every JSON text
// must be accepted or refused exactly as CPython 3.11 (plus clef's documented refusals), every
// accepted one must render byte for byte as json.dumps(json.loads(text), ensure_ascii=False,
// separators=(",", ":"), sort_keys=True), and every float must repr and round as CPython does.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/pyfloat.hpp"
#include "json/render.hpp"
#include "util/error.hpp"

namespace clef::json {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string verdict;  // "ok", "err" or "clef-err"
  std::string input;
  std::string expected;
};

/// Reads the length-prefixed records; the expected bytes are never decoded as JSON.
std::vector<Case> read_cases(const std::string& path) {
  const std::string data = read_file(path);
  std::vector<Case> cases;
  std::size_t pos = data.find('\n') + 1;  // skip the "# ..." header
  while (pos < data.size()) {
    const std::size_t eol = data.find('\n', pos);
    std::istringstream head(data.substr(pos, eol - pos));
    Case c;
    std::size_t in_len = 0, out_len = 0;
    head >> c.verdict >> in_len >> out_len;
    if (!head || eol + 1 + in_len + 1 + out_len + 1 > data.size()) {
      ADD_FAILURE() << "corrupt corpus record at byte " << pos;
      break;
    }
    pos = eol + 1;
    c.input = data.substr(pos, in_len);
    pos += in_len + 1;
    c.expected = data.substr(pos, out_len);
    pos += out_len + 1;
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(JsonCorpus, ParseAndDumpsMatchCPython) {
  const auto cases = read_cases(std::string(CLEF_TEST_DATA) + "/render_corpus/render_cases.txt");
  ASSERT_GE(cases.size(), 10000u);
  std::size_t ok = 0, refused = 0, differences = 0;
  for (const Case& c : cases) {
    std::string got;
    bool threw = false;
    try {
      got = dumps(parse(c.input));
    } catch (const Error& e) {
      threw = true;
      got = e.what();
    }
    const bool want_error = c.verdict != "ok";
    const bool same = want_error ? threw : (!threw && got == c.expected);
    if (same) {
      (want_error ? refused : ok)++;
      continue;
    }
    if (++differences <= 20) {
      ADD_FAILURE() << "verdict " << c.verdict << "\n  input:    " << c.input.substr(0, 300)
                    << "\n  expected: " << c.expected.substr(0, 300)
                    << "\n  got:      " << got.substr(0, 300);
    }
  }
  std::cout << "[corpus] " << cases.size() << " JSON texts: " << ok << " rendered as CPython, "
            << refused << " refused as expected, " << differences << " differences\n";
  EXPECT_EQ(differences, 0u);
}

double from_bits(const std::string& hex) {
  const std::uint64_t bits = std::stoull(hex, nullptr, 16);
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

TEST(JsonCorpus, FloatReprAndRoundMatchCPython) {
  std::istringstream in(read_file(std::string(CLEF_TEST_DATA) + "/render_corpus/floats.tsv"));
  std::string line;
  std::size_t count = 0, differences = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string bits, repr, round4, nd_text, round_nd;
    std::getline(fields, bits, '\t');
    std::getline(fields, repr, '\t');
    std::getline(fields, round4, '\t');
    std::getline(fields, nd_text, '\t');
    std::getline(fields, round_nd, '\t');
    const double x = from_bits(bits);
    const int nd = std::stoi(nd_text);
    ++count;
    const std::string got_repr = float_repr(x);
    const std::string got_round4 = float_repr(py_round(x, 4));
    const std::string got_round_nd = float_repr(py_round(x, nd));
    bool same = got_repr == repr && got_round4 == round4 && got_round_nd == round_nd;
    // repr round-trips through the parser's float conversion (CPython: float(repr(x)) == x).
    if (std::isfinite(x)) {
      const double back = decimal_to_double(got_repr);
      same = same && std::memcmp(&back, &x, sizeof x) == 0;
    }
    if (!same && ++differences <= 20) {
      ADD_FAILURE() << "x bits " << bits << ": repr " << repr << " got " << got_repr
                    << "; round(x,4) " << round4 << " got " << got_round4 << "; round(x," << nd
                    << ") " << round_nd << " got " << got_round_nd;
    }
  }
  std::cout << "[corpus] " << count << " floats: " << differences << " differences in repr/round\n";
  EXPECT_GE(count, 10000u);
  EXPECT_EQ(differences, 0u);
}

}  // namespace
}  // namespace clef::json
