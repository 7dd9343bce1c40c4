"""The package as pip installs it (python/tests/check.sh sets SPLADE_INSTALLED): the library it
bundles loads without $SPLADE_LIB."""
import os
import subprocess
import sys

import pytest


def test_bundled_library_found_without_env():
    pkg = os.environ.get("SPLADE_INSTALLED")
    if not pkg:
        pytest.skip("not run from an installed package (python/tests/check.sh sets SPLADE_INSTALLED)")
    env = {k: v for k, v in os.environ.items() if k != "SPLADE_LIB"}
    env["PYTHONPATH"] = os.pathsep.join([pkg] + [p for p in sys.path if "python-deps" in p])
    out = subprocess.run([sys.executable, "-c", "import splade_index as s; print(s.library_path); print(s.version())"],
                         capture_output=True, text=True, env=env, cwd="/", check=True).stdout.split()
    assert out[0] == os.path.join(pkg, "splade_index", "libsplade.so.0") and out[1] == "0.1.0"
