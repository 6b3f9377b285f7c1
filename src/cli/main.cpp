// `clef`: command-line entry point. The subcommands are the table of commands.cpp; each lives in
// its *_command.cpp beside this file.
#include <csignal>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/openmp_wait.hpp"
#include "util/error.hpp"

int main(int argc, char** argv) {
  // A peer that closes its socket while a client writes (an https port asked over http) must be
  // a write error, not a silent death of `clef batch` / `clef pull` (the server sends with
  // MSG_NOSIGNAL already).
  std::signal(SIGPIPE, SIG_IGN);
  clef::cli::use_passive_openmp_wait(argv);
  CLI::App app{"clef: typed decisions with the clef-flash model (one prefill, no generation)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("clef ") + clef::cli::kClefVersion);
  clef::cli::ExitCode exit_code;
  for (const clef::cli::Command& command : clef::cli::commands()) {
    command.add(*app.add_subcommand(command.name, command.summary), exit_code);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a usage error exits 2 like every other refusal (not CLI11's
    // own 105..114).
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const clef::Error& e) {
    std::cerr << "clef: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clef: " << e.what() << "\n";
    return 1;
  }
  return exit_code.value;
}
