#!/usr/bin/env bash
# The run command (README.md): installs the Debian packages, builds, and runs
# memsweep on the default sweep, jobs/examples/quickstart.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh
bash ci/build.sh
# Until the sweep runner lands (issue: the sweep over MPI), the default job
# stops at the plan: the trials the sweep will run.
"${MEMSWEEP_BUILD_DIR:-build}/memsweep" plan jobs/examples/quickstart.toml
