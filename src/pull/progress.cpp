#include "pull/progress.hpp"

#include <cstdio>

namespace clef::pull {

namespace {

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(std::ostream& out, std::string name, std::uint64_t total)
    : out_(out), name_(std::move(name)), total_(total) {}

void ProgressBar::update(std::uint64_t done) {
  const auto now = std::chrono::steady_clock::now();
  if (!started_) {
    started_ = true;
    start_done_ = done;
    t0_ = now;
    last_ = now;
    done_ = done;
    draw("");
    return;
  }
  done_ = done;
  if (now - last_ >= std::chrono::milliseconds(100)) {
    last_ = now;
    draw("");
  }
}

void ProgressBar::finish(const std::string& note) {
  if (finished_) return;
  finished_ = true;
  if (!started_) {
    t0_ = std::chrono::steady_clock::now();
    start_done_ = done_ = total_;
  }
  draw(note);
  out_ << "\n" << std::flush;
}

void ProgressBar::draw(const std::string& note) {
  constexpr int kWidth = 24;
  const double frac = total_ == 0 ? 1.0 : static_cast<double>(done_) / static_cast<double>(total_);
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  char rate[32] = "";
  if (secs > 0.05 && done_ > start_done_) {
    std::snprintf(rate, sizeof rate, "  %.1f MiB/s",
                  static_cast<double>(done_ - start_done_) / (1024.0 * 1024.0) / secs);
  }
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(frac * 100.0));
  out_ << "\r" << name_ << "  [" << bar << "] " << pct << "  " << mib(done_) << "/" << mib(total_)
       << " MiB" << rate << (note.empty() ? "" : "  " + note) << std::flush;
}

}  // namespace clef::pull
