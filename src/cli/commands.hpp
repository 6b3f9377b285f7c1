#pragma once
// Subcommands of the `clef` executable. Each add_*_command registers one subcommand on the
// top-level CLI11 app; the callback it installs runs the command and sets the exit code.

#include <CLI/CLI.hpp>

namespace clef::cli {

/// Exit code a command's callback leaves for main(): 0 ok, 1 runtime failure, 2 unusable input.
struct ExitCode {
  int value = 0;
};

void add_make_test_model_command(CLI::App& app, ExitCode& exit_code);  ///< `clef make-test-model`
void add_info_command(CLI::App& app, ExitCode& exit_code);             ///< `clef info`
void add_ask_command(CLI::App& app, ExitCode& exit_code);              ///< `clef ask`
void add_serve_command(CLI::App& app, ExitCode& exit_code);
void add_pull_command(CLI::App& app, ExitCode& exit_code);       ///< `clef pull`
void add_verify_command(CLI::App& app, ExitCode& exit_code);     ///< `clef verify`
void add_calibrate_command(CLI::App& app, ExitCode& exit_code);  ///< `clef calibrate`
void add_batch_command(CLI::App& app, ExitCode& exit_code);      ///< `clef batch`
void add_models_command(CLI::App& app, ExitCode& exit_code);     ///< `clef models`
void add_tune_command(CLI::App& app, ExitCode& exit_code);       ///< `clef tune`

/// The version `clef --version` and reports name.
inline constexpr const char* kClefVersion = "0.1.0";

}  // namespace clef::cli
