"""Standard-library names come from the standard library, whatever `sys.path` says.

A test that puts the agent's directory first (`sys.path.insert(0, "/app")`) and then imports
`statistics` to compute its reference value would get the agent's `statistics.py`. `install`
puts a finder on `sys.meta_path`, just before the path finder, that answers every top-level
name the stdlib directories hold with the module found there. There is no list of names: the
directory is the list, so a name cannot be dodged. Submodules resolve through their package's
`__path__`, so `json.decoder` follows `json`; built-in and frozen modules keep their own
finders, which come first.

Used by the verifier's runner (for the runtime's stdlib, in the test process) and by the
pristine volume's `sitecustomize` (for the image's stdlib, in every image `python3` the tests
start). Standard library only, and nothing runs at import: its source travels inside those
programs, which call `install`.

Left out: code imported from the agent's work runs in the same process and can remove the
finder (see the verifier's "not blocked" list); a stdlib module the directories lack (the
runtime leaves out `tkinter`, `idlelib`, `test`, ...) is looked up as usual; a Python started
with `-S` skips `sitecustomize`; an agent module named like a stdlib module cannot be imported
by that name (no bundled or upstream task has one).
"""

import importlib.machinery
import os
import sys


class StdlibFirst:
    """A meta-path finder that serves top-level names found in `dirs` from there."""

    def __init__(self, dirs):
        self.dirs = [d for d in dirs if os.path.isdir(d)]

    def find_spec(self, name, path=None, target=None):
        if path is not None:  # a submodule: its package's __path__ decides
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, self.dirs)
        if spec is None or spec.loader is None:  # nothing there, or a namespace portion
            return None
        return spec


def install(dirs=None):
    """Put a `StdlibFirst` for `dirs` (default: this interpreter's stdlib and lib-dynload)
    just before the path finder on `sys.meta_path`; returns it."""
    if dirs is None:
        base = getattr(sys, "_stdlib_dir", None) or os.path.dirname(os.__file__)
        dirs = [base, os.path.join(base, "lib-dynload")]
    finder = StdlibFirst(dirs)
    at = next(
        (i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder),
        len(sys.meta_path),
    )
    sys.meta_path.insert(at, finder)
    return finder
