"""Copies libsplade.so.0 into the package at install time (pyproject.toml has the metadata).

The library bundled is $SPLADE_LIB when set, else ../build/libsplade.so.0 (what `make` built in this
checkout: pip builds a local folder in place). Without either the package is installed alone and
finds the library at import time ($SPLADE_LIB, then the system: `make install`). docs/PYTHON.md.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def library_to_bundle():
    for path in (os.environ.get("SPLADE_LIB"), os.path.join(HERE, "..", "build", "libsplade.so.0")):
        if path and os.path.isfile(path):
            return os.path.realpath(path)
    return None


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        lib = library_to_bundle()
        if lib:
            dest = os.path.join(self.build_lib, "splade_index", "libsplade.so.0")
            shutil.copyfile(lib, dest)
            print(f"splade_index: bundled {lib}")
        else:
            print("splade_index: no libsplade.so.0 to bundle (set SPLADE_LIB or run make); "
                  "it will be looked for at import time")


class PlatformDistribution(Distribution):
    """A wheel holding a shared library is platform-specific."""

    def has_ext_modules(self):
        return library_to_bundle() is not None


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=PlatformDistribution)
