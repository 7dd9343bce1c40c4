"""The ctypes structures mirror include/: a C program compiled against the headers prints every
size and field offset the package relies on."""
import ctypes
import os
import shutil
import subprocess

import pytest

from conftest import REPO

STRUCTS = {  # ctypes class name -> C type name
    "Sparse": "splade_sparse", "EncoderOpts": "splade_encoder_opts", "Config": "splade_config",
    "IndexInfo": "splade_index_info", "IngestOpts": "splade_ingest_opts",
    "QueryEncodeOpts": "splade_query_encode_opts",
    "BuildStats": "splade_build_stats", "Qvec": "splade_qvec", "Hit": "splade_hit",
    "SearchOpts": "splade_search_opts",
    "AddOpts": "splade_add_opts", "AddStats": "splade_add_stats", "DeleteStats": "splade_delete_stats",
    "MergeStats": "splade_merge_stats", "MergeOpts": "splade_merge_opts", "SegmentInfo": "splade_segment_info"}


def test_struct_layouts_match_headers(tmp_path):
    from splade_index import _lib
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("no C compiler")
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "splade.h"', '#include "splade/encoder.h"',
             '#include "splade/index.h"', '#include "splade/query.h"', '#include "splade/corpus.h"',
             '#include "splade/model.h"', '#include "splade/build.h"', '#include "splade/pipeline.h"',
             '#include "splade/segments.h"',
             "int main(void) {"]
    want = []
    for py, c in STRUCTS.items():
        cls = getattr(_lib, py)
        lines.append(f'printf("{py} %zu\\n", sizeof({c}));')
        want.append(f"{py} {ctypes.sizeof(cls)}")
        for name, _ in cls._fields_:
            lines.append(f'printf("{py}.{name} %zu\\n", offsetof({c}, {name}));')
            want.append(f"{py}.{name} {getattr(cls, name).offset}")
    lines.append("return 0; }")
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "abi"
    subprocess.run([cc, "-std=c11", "-I", os.path.join(REPO, "include"), str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    assert got == want


def test_library_version():
    import splade_index
    assert splade_index.version() == splade_index.__version__
