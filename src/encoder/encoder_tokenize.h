/* The encoder's tokenizing half on its own, and its encoding half over groups (internal): the pipeline of src/pipeline/ingest_corpus.c
 * tokenizes chunk k+1 on its reading thread while chunk k runs on the GPU, then hands the ids to
 * splade_encoder_encode_ids. splade_encoder_encode(texts) is exactly this followed by encode_ids,
 * so both give the same vectors. */
#ifndef SPLADE_ENCODER_TOKENIZE_H
#define SPLADE_ENCODER_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>

#include "splade/encoder.h"

/* Tokenizes texts[0 .. n) (lens may be NULL) as the encoder does (truncation at max_length, [CLS]
 * ... [SEP] kept), packed: sequence i is (*ids)[(*offsets)[i] .. (*offsets)[i+1]). *ids and
 * *offsets are malloc'd (the caller frees them); *n_truncated counts the texts cut. Thread safe
 * against a concurrent encode on the same encoder (the tokenizer is immutable). On a failure
 * nothing is allocated and the detail names the text ("tokenizing text I: ..."). */
int splade_encoder_tokenize_texts(const splade_encoder *e, const char *const *texts, const size_t *lens, int n,
                                  int32_t **ids, int32_t **offsets, int *n_truncated);

/* splade_encoder_encode_ids over consecutive groups of `group` sequences (0: one group) in one call:
 * each group is sorted by length and cut into batches as a call of its own would be, so the vectors
 * are those of one call per group, but a device list's encoders take batches across the groups, so
 * no GPU idles at a group's end while another finishes its last batch (issue #17: a build on four
 * GPUs lost ~10% there with one call per 256 texts). */
int splade_encoder_encode_ids_grouped(splade_encoder *e, const int32_t *ids, const int32_t *offsets, int n, int group,
                                      splade_sparse *out);

/* Batches this encoder has started over its life, on all its devices (tests count a call's batches). */
int splade_encoder_batches_run(const splade_encoder *e);

#endif
