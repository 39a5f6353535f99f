// memsweep's command line: parse, dispatch to one command, and map errors to
// the documented exit statuses (README.md) at this one boundary.

#include "cli/estimate_command.hpp"
#include "cli/events_command.hpp"
#include "cli/export_command.hpp"
#include "cli/plan_command.hpp"
#include "cli/run_command.hpp"
#include "cli/summary_command.hpp"
#include "cli/watch_command.hpp"
#include "memsweep/error.hpp"
#include "memsweep/training_runner.hpp"
#include "memsweep/version.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <exception>
#include <string_view>

namespace {

// Under mpirun or srun every rank parses the same words before MPI starts:
// a usage error is said once, by the first rank, as every later error is
// (the others exit with the same status, in silence).
bool is_a_later_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return std::string_view(value) != "0";
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace memsweep;
  // A trial process, started by its rank (docs/runner.md): before anything
  // else, so that it pays for no option parsing, and not a command for people.
  if (argc == 3 && std::string_view(argv[1]) == "trial") run_trial_process();
  // The trial guard a rank starts (docs/runner.md, "When the rank dies").
  if (argc == 2 && std::string_view(argv[1]) == "guard") run_trial_guard();
  // The helper that holds a GPU limit (docs/runner.md, "A GPU limit").
  if (argc == 3 && std::string_view(argv[1]) == "gpu-reserve") run_gpu_reserve_process(argv[2]);
  CLI::App app{"memsweep: memory of neural-network training across hyperparameter sweeps", "memsweep"};
  app.set_version_flag("--version", std::string("memsweep ") + kVersion);
  // Checked below rather than by CLI11, whose message for a mistyped
  // command ("A subcommand is required") does not name it.
  app.require_subcommand(0, 1);
  app.allow_extras();
  // CLI11's own usage errors ("Could not convert: --part = 2147483648",
  // "sweep is required") in memsweep's form: one line, the prefix every
  // other error has, and where the options are listed.
  app.failure_message([](const CLI::App* parsed, const CLI::Error& error) -> std::string {
    if (is_a_later_rank()) return "";
    const std::vector<CLI::App*> commands = parsed->get_subcommands();
    const std::string help =
        commands.empty() ? "memsweep --help" : "memsweep " + commands.front()->get_name() + " --help";
    return fmt::format("memsweep: error: {} (see {})\n", error.what(), help);
  });

  cli::RunOptions run;
  cli::add_run_command(app, run);
  run.command_line.assign(argv, argv + argc);
  cli::SummaryOptions summary;
  cli::add_summary_command(app, summary);
  cli::PlanOptions plan;
  cli::add_plan_command(app, plan);
  cli::EventsOptions events;
  cli::add_events_command(app, events);
  cli::EstimateOptions estimate;
  cli::add_estimate_command(app, estimate);
  cli::WatchOptions watch;
  cli::add_watch_command(app, watch);
  cli::ExportOptions export_options;
  cli::add_export_command(app, export_options);
  // The commands inherit allow_extras() from the app, which needs it only
  // to name a mistyped command: `plan --colour` ran as if the option were
  // not there. Within a command, an unknown word is an error.
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) command->allow_extras(false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version are "errors" with status 0; the rest are bad usage.
    const int status = app.exit(error);
    return status == 0 ? exit_status::kOk : exit_status::kBadInput;
  }

  if (app.get_subcommands().empty()) {
    const std::vector<std::string> extras = app.remaining();
    if (extras.empty())
      fmt::print(
          stderr,
          "memsweep: error: a command is required: run, summary, watch, plan, estimate, events, export (see memsweep "
          "--help)\n");
    else
      fmt::print(stderr,
                 "memsweep: error: unknown command \"{}\"; expected one of: run, summary, watch, plan, estimate, "
                 "events, export "
                 "(see memsweep --help)\n",
                 extras.front());
    return exit_status::kBadInput;
  }

  try {
    if (app.got_subcommand("run")) return cli::run_run_command(run);
    if (app.got_subcommand("summary")) return cli::run_summary_command(summary);
    if (app.got_subcommand("plan")) return cli::run_plan_command(plan);
    if (app.got_subcommand("events")) return cli::run_events_command(events);
    if (app.got_subcommand("estimate")) return cli::run_estimate_command(estimate);
    if (app.got_subcommand("watch")) return cli::run_watch_command(watch);
    if (app.got_subcommand("export")) return cli::run_export_command(export_options);
  } catch (const InputError& error) {
    fmt::print(stderr, "memsweep: error: {}\n", error.what());
    return exit_status::kBadInput;
  } catch (const std::exception& error) {
    fmt::print(stderr, "memsweep: internal error: {}\n", error.what());
    return exit_status::kFailure;
  }
  return exit_status::kFailure;
}
