"""A missing third-party module is named with the package that provides it."""

import os
import subprocess
import sys

import pytest

from memsweep_analysis import DependencyError
from memsweep_analysis._deps import require

ANALYSIS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_require_names_the_debian_and_pip_packages():
    with pytest.raises(DependencyError) as error:
        require("numpy", "no_such_module_for_memsweep")
    assert str(error.value) == ("memsweep_analysis needs no_such_module_for_memsweep (Debian: "
                                "python3-no_such_module_for_memsweep; or pip/conda: no_such_module_for_memsweep)")
    assert require("numpy")[0].__name__ == "numpy"


def test_importing_the_package_without_scipy_says_which_package(tmp_path):
    # a None entry in sys.modules makes `import scipy` fail as if it were not installed
    code = "import sys; sys.modules['scipy'] = None; import memsweep_analysis"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ANALYSIS))
    assert done.returncode != 0
    assert ("DependencyError: memsweep_analysis needs scipy (Debian: python3-scipy; or pip/conda: scipy)"
            in done.stderr)


def test_the_command_line_without_scipy_prints_one_line_and_exits_2(tmp_path):
    # a scipy that cannot be imported, ahead of the real one on the path
    (tmp_path / "scipy").mkdir()
    (tmp_path / "scipy" / "__init__.py").write_text("raise ImportError('no scipy here', name='scipy')\n")
    done = subprocess.run([sys.executable, "-m", "memsweep_analysis", "tables", "x.h5"], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ANALYSIS}"))
    assert done.returncode == 2
    assert done.stderr == ("memsweep_analysis: error: memsweep_analysis needs scipy (Debian: python3-scipy; "
                           "or pip/conda: scipy)\n")
