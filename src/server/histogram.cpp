#include "server/histogram.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace clef::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end()) {
    throw std::logic_error("histogram bounds must increase");
  }
}

void Histogram::observe(double value) {
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += value;
}

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, result.ptr);
}

void Histogram::render(std::string& out, std::string_view name) const {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? prometheus_number(bounds_[i]) : "+Inf";
    out.append(name).append("_bucket{le=\"").append(le).append("\"} ");
    out.append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_sum ").append(prometheus_number(sum_)).append("\n");
  out.append(name).append("_count ").append(std::to_string(count_)).append("\n");
}

}  // namespace clef::server
