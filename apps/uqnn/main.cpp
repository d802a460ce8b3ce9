// uqnn: the command-line interface. Errors in user input exit with code 2 and a message naming
// the file, line and field; other failures exit with 1.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/mpi_session.hpp"
#include "uqnn/core/stop_signal.hpp"

int main(int argc, char** argv) {
  // MPI starts here, in the program, never in the library (one process without mpirun).
  uqnn::MpiSession mpi(argc, argv);
  CLI::App app{"uqnn: uncertainty quantification for neural networks (MAP, MCMC, VI, ensembles, ...)", "uqnn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "uqnn 0.1.0");
  std::vector<std::pair<CLI::App*, uqnn::cli::Command>> commands;
  const auto add = [&](uqnn::cli::Command (*adder)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    auto command = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(command));
  };
  add(&uqnn::cli::add_fit);
  add(&uqnn::cli::add_predict);
  add(&uqnn::cli::add_demo);
  add(&uqnn::cli::add_diagnose);
  add(&uqnn::cli::add_compare);
  add(&uqnn::cli::add_sensitivity);
  add(&uqnn::cli::add_merge);
  add(&uqnn::cli::add_evaluate);
  uqnn::cli::set_command_line(argc, argv);
  // The command first: `uqnn evaluate --help` printed the top-level help and exited 0, and
  // `uqnn evaluate` said only "A subcommand is required".
  std::string names;
  for (const auto& [sub, run] : commands) names += (names.empty() ? "" : ", ") + sub->get_name();
  if (argc < 2) {
    std::cerr << "error: give a command: one of " << names << " (uqnn --help describes them)\n";
    return 2;
  }
  if (const std::string first = argv[1]; !first.empty() && first[0] != '-') {
    bool known = false;
    for (const auto& [sub, run] : commands) known = known || sub->get_name() == first;
    if (!known) {
      std::cerr << "error: '" << first << "' is not a uqnn command: the commands are " << names << " (uqnn --help describes them)\n";
      return 2;
    }
  }
  // "--lr=" is an empty value, as "--lr ''" is (CLI11 said ": 1 required TEXT missing", naming no
  // option); a flag's "--quiet=" stays as it is.
  std::vector<std::string> args;
  CLI::App* command = nullptr;
  for (const auto& [sub, run] : commands)
    if (sub->get_name() == argv[1]) command = sub;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto equals = arg.find('=');
    if (command && i > 1 && arg.rfind("--", 0) == 0 && equals == arg.size() - 1) {
      const CLI::Option* option = command->get_option_no_throw(arg.substr(0, equals));
      if (option && option->get_items_expected_min() > 0) {
        args.push_back(arg.substr(0, equals));
        args.emplace_back();
        continue;
      }
    }
    args.push_back(arg);
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, as any other bad input.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const uqnn::InputError& e) {  // a flag's value of the wrong type (checked while parsing)
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {  // never std::terminate: whatever a parser threw is a usage error
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  }
  // Under mpirun, report_failure prints a failure every rank saw once (rank 0), and ends the whole
  // run (MPI_Abort) after a failure of this rank alone, so that no rank waits for it.
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const uqnn::InputError& e) {
    return uqnn::report_failure(e.what(), 2);
  } catch (const std::invalid_argument& e) {
    return uqnn::report_failure(e.what(), 2);
  } catch (const std::exception& e) {
    // Stopped by a signal before anything could be written: 128 + it, as if it had killed us.
    if (uqnn::stop_signal() != 0) return uqnn::report_failure(e.what(), 128 + uqnn::stop_signal());
    // Training or sampling that diverged to NaN or infinity (e.g. --lr 1e308): no result, as for
    // non-finite draws, exit 3; other failures 1.
    return uqnn::report_failure(e.what(), dynamic_cast<const uqnn::DivergenceError*>(&e) ? 3 : 1);
  }
  return 0;
}
