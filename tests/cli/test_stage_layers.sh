#!/bin/sh
# The stages hand over through documented formats (PISA's layering): src/index/ (vectors -> index
# file) and src/query/ (index file + query vectors -> hits) know no encoder, model, tokenizer, LM head
# or GPU code; the glue that joins them to the encoder lives in src/pipeline/ (include/splade/pipeline.h).
# This test fails naming every include that crosses that line, in the sources and in the headers
# those stages use.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
upstream='splade/(encoder|model|tokenizer|lmhead|gpu|pipeline)\.h|(encoder|lmhead_fused|gpu|pipeline)/'
bad=$(grep -nE "#include \"($upstream)" src/index/* src/query/*)
stage_headers='include/splade/index.h include/splade/build.h include/splade/query.h include/splade/query_input.h
               include/splade/vectors.h include/splade/eval.h'
# shellcheck disable=SC2086
bad_h=$(grep -nE "#include \"($upstream)" $stage_headers)
if [ -n "$bad$bad_h" ]; then
    echo "FAIL: the index and query stages include upstream code (move the glue to src/pipeline/):"
    printf "%s\n" "$bad" "$bad_h" | grep -v '^$'
    exit 1
fi
[ -n "$(ls src/pipeline/*.c 2>/dev/null)" ] || { echo "FAIL: no src/pipeline/"; exit 1; }
echo "ok: src/index and src/query (and their headers) include no encoder, model, head or GPU code"
