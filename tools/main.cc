// ingot: the command-line tool. Dispatches to one subcommand per file (see cli_common.h).
// Exit codes: 0 ok, 1 error, 2 bad usage. Every failure is one line "ingot: error: ..." on
// stderr; no exception leaves main.
#include <exception>
#include <iostream>
#include <new>

#include "cli_common.h"

namespace {

int real_main(int argc, char** argv) {
  using namespace ingot::cli;
  CLI::App app{"ingot: compile and run ONNX models on CPU (and CUDA)", "ingot"};
  app.set_version_flag("--version", std::string("ingot ") + INGOT_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  std::vector<Command> commands;
#define INGOT_CLI_SETUP(name) commands.push_back(setup_##name(app));
  INGOT_CLI_COMMANDS(INGOT_CLI_SETUP)
#undef INGOT_CLI_SETUP

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    CLI::App* target = &app;
    for (CLI::App* sub : app.get_subcommands()) target = sub;
    std::cout << target->help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty()) {
      std::string names;
      for (const Command& c : commands) names += (names.empty() ? "" : ", ") + c.app->get_name();
      if (argc > 1 && argv[1][0] != '-') {
        return usage_error("unknown subcommand '" + std::string(argv[1]) + "' (expected one of: " + names + ")");
      }
      if (argc <= 1) return usage_error("no subcommand given (expected one of: " + names + "; see ingot --help)");
    }
    return usage_error(std::string(e.what()) + " (see ingot --help)");
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return usage_error("no subcommand given (try: ingot --help)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const CLI::Error& e) {
    return ingot::cli::usage_error(e.what());
  } catch (const std::bad_alloc&) {
    return ingot::cli::error("out of memory");
  } catch (const std::exception& e) {
    return ingot::cli::error(std::string("internal error: ") + e.what());
  } catch (...) {
    return ingot::cli::error("internal error: unknown exception");
  }
}
