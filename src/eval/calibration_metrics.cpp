#include "eval/calibration_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace clef::eval {
namespace {

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

CalibrationMetrics measure(const std::vector<ScoredQuestion>& questions) {
  CalibrationMetrics m;
  m.n = questions.size();
  if (m.n == 0) return m;
  for (const ScoredQuestion& q : questions) {
    const auto top = static_cast<std::size_t>(std::max_element(q.probs.begin(), q.probs.end()) -
                                              q.probs.begin());
    const bool right = top == q.gold;
    m.accuracy += right ? 1 : 0;
    m.log_loss -= std::log(std::max(q.probs[q.gold], 1e-12));
    for (std::size_t k = 0; k < q.probs.size(); ++k) {
      const double e = q.probs[k] - (k == q.gold ? 1.0 : 0.0);
      m.brier += e * e;
    }
    const double conf = q.probs[top];
    const auto bin = std::min<std::size_t>(static_cast<std::size_t>(conf * 10), 9);
    m.bins[bin].count += 1;
    m.bins[bin].confidence += conf;
    m.bins[bin].accuracy += right ? 1 : 0;
  }
  const auto n = static_cast<double>(m.n);
  m.accuracy /= n;
  m.log_loss /= n;
  m.brier /= n;
  for (ReliabilityBin& b : m.bins) {
    if (b.count == 0) continue;
    b.confidence /= static_cast<double>(b.count);
    b.accuracy /= static_cast<double>(b.count);
    m.ece += static_cast<double>(b.count) / n * std::fabs(b.accuracy - b.confidence);
  }
  return m;
}

std::string reliability_svg(const std::string& title,
                            const std::vector<std::pair<std::string, CalibrationMetrics>>& series) {
  const char* colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
  constexpr double kLeft = 50, kTop = 40, kSize = 300;
  auto x = [&](double v) { return kLeft + v * kSize; };
  auto y = [&](double v) { return kTop + (1 - v) * kSize; };
  char b[256];
  std::string out =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"420\" height=\"420\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<text x=\"50\" y=\"24\" font-size=\"14\">" + escape_xml(title) + "</text>\n";
  std::snprintf(
      b, sizeof b,
      "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#888\"/>\n", kLeft,
      kTop, kSize, kSize);
  out += b;
  std::snprintf(b, sizeof b,
                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#bbb\" "
                "stroke-dasharray=\"4 3\"/>\n",
                x(0), y(0), x(1), y(1));
  out += b;
  for (int t = 0; t <= 10; t += 2) {
    std::snprintf(b, sizeof b,
                  "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%.1f</text>\n"
                  "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.1f</text>\n",
                  x(t / 10.0), y(0) + 16, t / 10.0, x(0) - 6, y(t / 10.0) + 4, t / 10.0);
    out += b;
  }
  std::snprintf(
      b, sizeof b,
      "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">confidence (top probability)</text>\n"
      "<text x=\"14\" y=\"%g\" transform=\"rotate(-90 14 %g)\" "
      "text-anchor=\"middle\">accuracy</text>\n",
      x(0.5), y(0) + 34, y(0.5), y(0.5));
  out += b;
  for (std::size_t s = 0; s < series.size(); ++s) {
    const char* colour = colours[s % 4];
    std::string points;
    for (const ReliabilityBin& bin : series[s].second.bins) {
      if (bin.count == 0) continue;
      std::snprintf(b, sizeof b, "%s%.1f,%.1f", points.empty() ? "" : " ", x(bin.confidence),
                    y(bin.accuracy));
      points += b;
      std::snprintf(b, sizeof b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                    x(bin.confidence), y(bin.accuracy), colour);
      out += b;
    }
    out += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" points=\"" + points +
           "\"/>\n";
    std::snprintf(b, sizeof b, "<text x=\"%g\" y=\"%g\" fill=\"%s\">%s: ECE %.4f, n %zu</text>\n",
                  x(0.04), y(1) + 16 + 16 * static_cast<double>(s), colour,
                  escape_xml(series[s].first).c_str(), series[s].second.ece, series[s].second.n);
    out += b;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace clef::eval
