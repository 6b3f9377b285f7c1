#pragma once
// A one-line download progress bar for stderr: "name  [#####.....]  45%  12.3/27.1 MiB  3.2 MiB/s",
// redrawn with a carriage return at most every 100 ms, and finished with a newline.

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace clef::pull {

class ProgressBar {
 public:
  /// `out` must outlive the bar; `total` is the file's size in bytes.
  ProgressBar(std::ostream& out, std::string name, std::uint64_t total);
  /// Sets the bytes done so far (redraws when 100 ms passed since the last draw).
  void update(std::uint64_t done);
  /// Draws the final state and ends the line. Idempotent.
  void finish(const std::string& note = {});

 private:
  void draw(const std::string& note);

  std::ostream& out_;
  std::string name_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  std::uint64_t start_done_ = 0;
  bool started_ = false;
  bool finished_ = false;
  std::chrono::steady_clock::time_point t0_, last_;
};

}  // namespace clef::pull
