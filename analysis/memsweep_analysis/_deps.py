"""The third-party modules the package needs, checked by name before use.

A cluster's module or a conda environment may lack one of them; an
ImportError deep inside a module would not say which package to install,
so every module asks here first and the message names both the Debian
package and the pip/conda one.
"""

import importlib

# module -> (Debian package, pip/conda package)
PACKAGES = {
    "numpy": ("python3-numpy", "numpy"),
    "pandas": ("python3-pandas", "pandas"),
    "h5py": ("python3-h5py", "h5py"),
    "scipy": ("python3-scipy", "scipy"),
    "matplotlib": ("python3-matplotlib", "matplotlib"),
    "statsmodels": ("python3-statsmodels", "statsmodels"),
}

ALL = tuple(PACKAGES)


class DependencyError(ImportError):
    """A module the package needs is not importable; the message says what to install."""


def require(*modules):
    """Import each module (default: all of ALL); return them as a tuple, or raise DependencyError."""
    imported = []
    for module in modules or ALL:
        try:
            imported.append(importlib.import_module(module))
        except ImportError as error:
            debian, pip = PACKAGES.get(module, (f"python3-{module}", module))
            raise DependencyError(f"memsweep_analysis needs {module} (Debian: {debian}; or pip/conda: {pip})"
                                  + ("" if error.name in (None, module) else f": {error}")) from error
    return tuple(imported)
