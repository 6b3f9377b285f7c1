// `clef info DIR|FILES...`: prints what a model is (src/info/model_info.hpp). Unusable files are
// refused with clef::Error model_error, which main() turns into exit code 2.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "info/model_info.hpp"

namespace clef::cli {

void add_info_command(CLI::App& app, ExitCode& exit_code) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "info",
      "print what a model is (backbone, mmproj, joint schema head) and refuse what clef cannot "
      "use");
  cmd->add_option("PATHS", *paths,
                  "a model directory, or backbone / mmproj GGUF and head safetensors / config "
                  "files")
      ->required();
  cmd->callback([paths, &exit_code] {
    std::vector<std::filesystem::path> p(paths->begin(), paths->end());
    std::cout << info::format_report(info::inspect_model(p));
    exit_code.value = 0;
  });
}

}  // namespace clef::cli
