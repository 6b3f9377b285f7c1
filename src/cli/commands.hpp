#pragma once
// The subcommands of the `clef` executable, in one table: each one's name, its summary (`clef
// --help`) and the function, in its *_command.cpp, that adds its options to the subcommand made
// for it and the callback that runs it and sets the exit code. Adding a command is a row here.

#include <CLI/CLI.hpp>

#include <span>

namespace clef::cli {

/// Exit code a command's callback leaves for main(): 0 ok, 1 runtime failure, 2 unusable input.
struct ExitCode {
  int value = 0;
};

/// Adds a command's options and callback to `cmd` (its subcommand, made from the table's row).
using AddCommand = void (*)(CLI::App& cmd, ExitCode& exit_code);

/// One subcommand of `clef`.
struct Command {
  const char* name;     ///< e.g. "serve"
  const char* summary;  ///< its line in `clef --help`
  AddCommand add;
};

/// Every subcommand, in the order `clef --help` lists them.
std::span<const Command> commands();

void add_make_test_model_command(CLI::App& cmd, ExitCode& exit_code);  ///< `clef make-test-model`
void add_info_command(CLI::App& cmd, ExitCode& exit_code);             ///< `clef info`
void add_ask_command(CLI::App& cmd, ExitCode& exit_code);              ///< `clef ask`
void add_verify_command(CLI::App& cmd, ExitCode& exit_code);           ///< `clef verify`
void add_calibrate_command(CLI::App& cmd, ExitCode& exit_code);        ///< `clef calibrate`
void add_tune_command(CLI::App& cmd, ExitCode& exit_code);             ///< `clef tune`
void add_batch_command(CLI::App& cmd, ExitCode& exit_code);            ///< `clef batch`
void add_models_command(CLI::App& cmd, ExitCode& exit_code);           ///< `clef models`
void add_serve_command(CLI::App& cmd, ExitCode& exit_code);            ///< `clef serve`
void add_pull_command(CLI::App& cmd, ExitCode& exit_code);             ///< `clef pull`

/// The version `clef --version` and reports name.
inline constexpr const char* kClefVersion = "0.1.0";

}  // namespace clef::cli
