#pragma once
// The kinds of command-line option clef's commands share: a size in bytes (every memory and body
// limit), a number in a range with its default shown (every count and limit).

#include <CLI/CLI.hpp>

#include <string>

namespace clef::cli {

/// Adds option `name` to `cmd`, read into `bytes`: a number of bytes, or one with a suffix
/// (KiB/MiB/GiB, or KB/MB/GB, each 1024: CLI::AsSizeValue(false)); a negative size is refused
/// naming the value ("a size of 0 or more is needed, got -1"). Returns the option, for a range
/// check or a default shown in --help.
template <typename Bytes>
CLI::Option* add_size_option(CLI::App& cmd, const std::string& name, Bytes& bytes,
                             const std::string& description) {
  return cmd.add_option(name, bytes, description)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return !v.empty() && v.front() == '-' ? "a size of 0 or more is needed, got " + v
                                                  : std::string();
          },
          "SIZE"))
      ->transform(CLI::AsSizeValue(false));
}

/// Adds option `name` to `cmd`, read into `value`, its default shown in --help and values
/// outside [lo, hi] refused naming the flag (CLI::Range). Returns the option.
template <typename T, typename Bound>
CLI::Option* add_range_option(CLI::App& cmd, const std::string& name, T& value,
                              const std::string& description, Bound lo, Bound hi) {
  return cmd.add_option(name, value, description)->capture_default_str()->check(CLI::Range(lo, hi));
}

}  // namespace clef::cli
