"""memsweep_analysis: tables, statistics and reports of memsweep results files (docs/analysis.md).

    import memsweep_analysis as ma
    results = ma.load("results.h5", "more.h5")
    results.trials            # one row per trial attempt, every file
    results.samples_for(["3f2a9c0d1e4b"])

The dependencies are checked first, so that a python3 without one of them
says which package to install instead of failing somewhere inside.
"""

import sys

from ._deps import DependencyError, require

try:
    require()
except DependencyError as error:
    # `python3 -m memsweep_analysis` imports this package before __main__ can
    # catch anything (sys.argv[0] is "-m" meanwhile): a shell user gets the
    # command line's one-line error and exit status 2, not a traceback.
    if sys.argv[:1] == ["-m"]:
        print(f"memsweep_analysis: error: {error}", file=sys.stderr)
        raise SystemExit(2)
    raise

from .load import MemsweepFileError, Results, load  # noqa: E402

__all__ = ["load", "Results", "MemsweepFileError", "DependencyError"]
