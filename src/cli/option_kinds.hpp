#pragma once
// The kinds of command-line option clef's commands share: a size in bytes (every memory and body
// limit), a number in a range with its default shown (every count and limit).

#include <CLI/CLI.hpp>

#include <string>

namespace clef::cli {

/// A size as given on the command line, checked before CLI11 reads it: whole decimal digits and
/// an optional unit of letters ("16MiB", "512 KB", "0"), leading zeros dropped (CLI11 would read
/// "077" as octal), at most 2^64 - 1. Returns "" with `text` rewritten for CLI::AsSizeValue, or
/// why it is refused ("a size of 0 or more is needed, got -1b").
std::string plain_size(std::string& text);

/// Adds option `name` to `cmd`, read into `bytes`: a number of bytes, or one with a suffix
/// (KiB/MiB/GiB, or KB/MB/GB, each 1024: CLI::AsSizeValue(false)), the text first checked by
/// plain_size (a negative, hexadecimal, octal-looking or over-64-bit size is refused naming the
/// value). Returns the option, for a range check or a default shown in --help.
template <typename Bytes>
CLI::Option* add_size_option(CLI::App& cmd, const std::string& name, Bytes& bytes,
                             const std::string& description) {
  // CLI11 runs each transform added before those added earlier: plain_size sees the text given.
  return cmd.add_option(name, bytes, description)
      ->transform(CLI::AsSizeValue(false))
      ->transform(CLI::Validator(plain_size, "SIZE"));
}

/// Adds option `name` to `cmd`, read into `value`, its default shown in --help and values
/// outside [lo, hi] refused naming the flag (CLI::Range). Returns the option.
template <typename T, typename Bound>
CLI::Option* add_range_option(CLI::App& cmd, const std::string& name, T& value,
                              const std::string& description, Bound lo, Bound hi) {
  return cmd.add_option(name, value, description)->capture_default_str()->check(CLI::Range(lo, hi));
}

}  // namespace clef::cli
