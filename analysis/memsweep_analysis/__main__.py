"""`python3 -m memsweep_analysis report|compare|tables ...`: the package from a shell.

Bad input (a file that is missing, not HDF5, not memsweep's, of another schema, or damaged; a trial id not in
the files; a missing Python package) ends with one line on stderr, "memsweep_analysis: error: ...", naming
the file, and exit status 2, like memsweep's own bad-input errors; a bug still shows its traceback. A damaged
file is what h5py raises OSError, RuntimeError, KeyError or ValueError for from inside h5py while load.py reads
it (load.raised_by_h5py); the same exceptions from this package's own code are bugs.
"""

import argparse
import os
import sys

PROG = "memsweep_analysis"
USAGE_ERROR = 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    # argparse prints the whole usage before its message; one line keeps every bad-input error alike.
    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


def _parser():
    parser = _Parser(prog=PROG, description="Tables, statistics, figures and reports of memsweep results files "
                                            "(docs/analysis.md).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    report = commands.add_parser("report", help="write report.md, report.html, figures and calibration.json")
    report.add_argument("files", nargs="+", metavar="FILE", help="results files (HDF5)")
    report.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write the report into")
    report.add_argument("--trials", metavar="ID,...",
                        help="trials to plot RSS over time for (default: the largest footprint per dataset)")
    report.add_argument("--paper-csv", nargs="+", metavar="CSV", default=[],
                        help="the paper's published tables (trial,learning_rate,...,memory_used_mb) to put beside")
    report.add_argument("--train-examples", nargs="+", metavar="DATASET=N", default=[],
                        help="training examples a dataset had when fewer than published (e.g. cifar-10=4000 for a "
                             "subset), for counters per step")

    compare = commands.add_parser("compare", help="the same trials of two results files side by side")
    compare.add_argument("a", metavar="A")
    compare.add_argument("b", metavar="B")
    compare.add_argument("-o", "--output", metavar="OUT.md", help="also write the comparison as Markdown")

    tables = commands.add_parser("tables", help="print the per-dataset tables and statistics")
    tables.add_argument("files", nargs="+", metavar="FILE")
    return parser


def _dataset_counts(items):
    counts = {}
    for item in items:
        dataset, _, number = item.partition("=")
        if not dataset or not number.isdigit() or int(number) <= 0:
            raise UsageError(f"--train-examples: expected DATASET=N with N > 0, got \"{item}\"")
        counts[dataset] = int(number)
    return counts or None


def _check_inputs(paths):
    """Refuse what is plainly not a file before anything is imported or read: the message is then the
    same whichever reader would have stumbled on it first."""
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file")
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory, expected a memsweep results file (HDF5)")


def _run(args):
    if args.command == "report":
        _check_inputs(args.files + args.paper_csv)
        from .report import write_report
        trials = [t for t in (args.trials or "").split(",") if t] or None
        written = write_report(args.files, args.output, trials=trials, paper_csv=args.paper_csv or None,
                               train_examples=_dataset_counts(args.train_examples))
        print(f"{PROG}: wrote {written['markdown']}, {written['html']} and {len(written['figures'])} figures")
    elif args.command == "compare":
        _check_inputs([args.a, args.b])
        from .compare import compare, to_markdown, to_text
        comparison = compare(args.a, args.b)
        print(to_text(comparison))
        if args.output:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(to_markdown(comparison))
    elif args.command == "tables":
        _check_inputs(args.files)
        from .report import tables_text
        print(tables_text(args.files))


def _expected_errors():
    """The package's bad-input errors (OSError: a file named on the command line, or the output folder).

    Importing the package's modules is what finds a missing Python package, so it happens here, where
    that error can be printed like any other."""
    from ._deps import DependencyError
    try:
        from .load import MemsweepFileError
        from .report import InputError
    except DependencyError as error:
        return (), error
    return (UsageError, OSError, DependencyError, MemsweepFileError, InputError), None


def main(argv=None):
    try:
        args = _parser().parse_args(argv)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    errors, missing = _expected_errors()
    if missing is not None:
        print(f"{PROG}: error: {missing}", file=sys.stderr)
        return USAGE_ERROR
    try:
        _run(args)
    except errors as error:
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return USAGE_ERROR
    return 0


def _one_line(error):
    text = str(error)
    if isinstance(error, OSError) and error.filename and str(error.filename) not in str(text):
        text = f"{error.filename}: {error.strerror or text}"
    return " ".join(str(text).split())


if __name__ == "__main__":
    sys.exit(main())
