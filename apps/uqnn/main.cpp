// uqnn: the command-line interface. Errors in user input exit with code 2 and a message naming
// the file, line and field; other failures exit with 1.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/mpi_session.hpp"

namespace {

/// A failed command's message and exit code. Under mpirun (more than one rank) a failure that every
/// rank saw (exchange_items) is printed by rank 0 alone; one that only this rank saw ends the whole
/// run (MPI_Abort) after printing, so that no other rank waits for it.
int fail(const std::string& message, int code) {
  const auto world = uqnn::world_communicator();
  if (world->size() > 1 && !uqnn::failure_is_shared())
    world->abort(fmt::format("error (rank {} of {}): {}", world->rank(), world->size(), message), code);
  if (world->is_root()) std::cerr << "error: " << message << '\n';
  return code;
}

}  // namespace

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
  uqnn::cli::set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, as any other bad input.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const uqnn::InputError& e) {  // a flag's value of the wrong type (checked while parsing)
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const uqnn::InputError& e) {
    return fail(e.what(), 2);
  } catch (const std::invalid_argument& e) {
    return fail(e.what(), 2);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
  return 0;
}
