# splade-index build. `make` builds build/splade-index (with CUDA when nvcc is found),
# `make test` runs every test, `make bench` the CPU benchmarks, `make deps` installs
# the Debian packages the build needs (only those missing).
#
# Knobs: NO_CUDA=1 forces a CPU-only build; CUDA_ARCH overrides the GPU targets;
# SAN=1 builds with AddressSanitizer + UBSan into build-san/; TSAN=1 with ThreadSanitizer into
# build-tsan/ (CPU only; `make test` runs the threaded tests there, TSAN_TESTS / TSAN_CLI).
#
# CUDA build: every .cu file goes into build/libsplade-cuda.so (with cuBLAS, cuBLASLt and the
# CUDA runtime), which the binary loads only when a GPU path runs (src/gpu/cuda_loader.c); keep
# the .so next to the binary. The GPU tests and benches (*gpu* names) link the CUDA objects directly.

CC       ?= gcc
CUDA_HOME ?= /usr/local/cuda
NVCC     ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
ifeq ($(NO_CUDA),1)
NVCC :=
endif
ifeq ($(TSAN),1)
BUILD    ?= build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
endif
ifeq ($(SAN),1)
BUILD    ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD    ?= build
endif

OPENBLAS_INC := /usr/include/x86_64-linux-gnu/openblas-pthread
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Isrc -I$(OPENBLAS_INC) -pthread -MMD -MP $(SANFLAGS)
LDFLAGS  += -pthread $(SANFLAGS)
LDLIBS   := -lutf8proc -ljansson -lopenblas -lcurl -lstreamvbyte -lz -lm

# (the CUDA build's loader, the CPU-only stand-in and bench-lmhead's CUDA half are chosen below)
CUDA_HOST_SRC := src/gpu/cuda_loader.c src/gpu/no_cuda.c src/cli/bench_lmhead_cuda.c
C_SRC    := $(filter-out src/cli/main.c $(CUDA_HOST_SRC),$(wildcard src/*/*.c))
CU_SRC   := $(wildcard src/*/*.cu)

ifneq ($(NVCC),)
CUDA_ARCH ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_80,code=compute_80
NVCCFLAGS ?= -O3 -lineinfo
NVCCFLAGS += -std=c++17 -Iinclude -Isrc $(CUDA_ARCH) -Xcompiler -fPIC,-Wall,-Wextra -MMD -MP
CFLAGS   += -DSPLADE_HAVE_CUDA -I$(CUDA_HOME)/include
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart_static -ldl -lrt -lstdc++
# programs export splade_* for the .so to bind to (in LDLIBS: gpu.sh overrides LDFLAGS)
LDLIBS   += -ldl -Wl,--dynamic-list=src/gpu/host_exports.list
C_SRC    += src/gpu/cuda_loader.c
CU_OBJ   := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
CUDA_SO  := $(BUILD)/libsplade-cuda.so
CUDA_SO_OBJ := $(CU_OBJ) $(BUILD)/obj-pic/src/cli/bench_lmhead_cuda.o
else
C_SRC    += src/gpu/no_cuda.c
CU_OBJ   :=
CUDA_SO  :=
CUDA_SO_OBJ :=
endif

C_OBJ    := $(C_SRC:%.c=$(BUILD)/obj/%.o)
LIB      := $(BUILD)/libsplade.a
BIN      := $(BUILD)/splade-index
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_REPLAY := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# tests and benches that call kernels or the CUDA runtime themselves: linked with the CUDA objects
GPU_PROGS := $(foreach p,$(TEST_BIN) $(BENCH_BIN),$(if $(findstring gpu,$(notdir $(p))),$(p)))

DEB_PKGS := gcc make pkg-config python3 python3-pip libutf8proc-dev libcmocka-dev libjansson-dev \
            libopenblas-dev libcurl4-openssl-dev libstreamvbyte-dev zlib1g-dev

.PHONY: all deps check test tsan-check bench models demo fuzz clean
all: $(BUILD)/.deps-ok $(BIN) $(CUDA_SO)

# Installs only what is missing, so repeated builds never touch apt.
deps $(BUILD)/.deps-ok:
	@missing=$$(for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
	@mkdir -p $(BUILD) && touch $(BUILD)/.deps-ok

$(BUILD)/obj/%.o: %.c | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cu | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# position-independent objects for the .so (the CUDA objects are built -fPIC already)
$(BUILD)/obj-pic/%.o: %.c | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(LIB): $(C_OBJ)
	@rm -f $@
	ar rcs $@ $^

# -Bsymbolic: the .so's calls to its own entry points stay inside it (the program exports the
# loader's forwarders of the same names); host symbols (splade_fail) resolve to the program's.
$(CUDA_SO): $(CUDA_SO_OBJ)
	$(CC) -shared -Wl,-Bsymbolic $(LDFLAGS) $^ -o $@ -ljansson $(CUDA_LIBS)

# The GPU programs get the CUDA objects ahead of the library (so the loader is not pulled in)
# and the CUDA libraries; the others find $(CUDA_SO) at run time.
$(GPU_PROGS): $(CU_OBJ)
$(GPU_PROGS): DIRECT_CUDA = $(CU_OBJ)
$(GPU_PROGS): DIRECT_CUDA_LIBS = $(CUDA_LIBS)
$(TEST_BIN) $(BENCH_BIN) $(FUZZ_REPLAY): | $(CUDA_SO)

$(BIN): $(BUILD)/obj/src/cli/main.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(DIRECT_CUDA) $(LIB) -o $@ $(LDFLAGS) -lcmocka $(LDLIBS) $(DIRECT_CUDA_LIBS)

# Fuzz targets linked with a plain replay driver: `make test` runs every seed and regression.
$(BUILD)/fuzz/%: fuzz/%.c fuzz/driver.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< fuzz/driver.c $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(DIRECT_CUDA) $(LIB) -o $@ $(LDFLAGS) $(LDLIBS) $(DIRECT_CUDA_LIBS)

# The real test model (splade-tiny) into cache/; tests skip visibly without it.
models:
	-@python3 tools/fetch_splade_tiny.py --quiet

# `make test` = the suite on the normal build, then again under ASan+UBSan (CPU-only build in
# $(BUILD)-san), then one closing line over both. `make check` runs the first part alone.
check: all $(TEST_BIN) $(FUZZ_REPLAY) models
	@BUILD=$(BUILD) sh tests/run.sh

# The tests that run threads (the CPU team, the encoder, parallel inversion, batch queries), under
# ThreadSanitizer: `make test`'s third part. TSan slows them ~5-15x, hence a subset of the suite.
TSAN_TESTS := test_cpu_team test_encoder_cpu test_index test_model
TSAN_CLI   := test_threads_deterministic test_index_vectors
tsan-check: all $(TSAN_TESTS:%=$(BUILD)/tests/%) models
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp $(TSAN_OPTIONS)" \
	  SPLADE_TEST_SKIP="test_tiny_*" BUILD=$(BUILD) CLI_TESTS="$(TSAN_CLI:%=tests/cli/%.sh)" sh tests/run.sh

ifneq ($(filter 1,$(SAN) $(TSAN)),)
test: check
else
test: check
	@echo "== the same suite under AddressSanitizer + UndefinedBehaviorSanitizer"
	@$(MAKE) --no-print-directory SAN=1 NO_CUDA=1 BUILD=$(BUILD)-san check
	@echo "== the threaded tests under ThreadSanitizer"
	@$(MAKE) --no-print-directory TSAN=1 NO_CUDA=1 BUILD=$(BUILD)-tsan tsan-check
	@cat $(BUILD)/test-counts $(BUILD)-san/test-counts $(BUILD)-tsan/test-counts | \
	  awk '{p+=$$1; f+=$$2; s+=$$3} END {printf "all: %d passed, %d failed, %d skipped\n", p, f, s}'
endif

bench: all $(BENCH_BIN) models
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done

demo: all models
	sh tools/demo.sh

# libFuzzer (clang, CPU-only sources, ASan+UBSan): each target for FUZZ_SECONDS; new
# inputs go to build-fuzz/corpus/<target>, crashes to build-fuzz/<target>-crash-*.
FUZZ_SECONDS ?= 60
FUZZ_LIB_SRC := $(filter-out src/cli/main.c src/gpu/cuda_loader.c src/cli/bench_lmhead_cuda.c,$(wildcard src/*/*.c))
fuzz: $(BUILD)/.deps-ok
	@mkdir -p build-fuzz
	@for f in $(FUZZ_SRC); do t=$$(basename $$f .c); n=$${t#fuzz_}; \
	  echo "== $$t ($(FUZZ_SECONDS) s)"; \
	  clang -g -O1 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -I$(OPENBLAS_INC) -pthread \
	    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $$f $(FUZZ_LIB_SRC) -o build-fuzz/$$t \
	    -lutf8proc -ljansson -lopenblas -lcurl -lstreamvbyte -lz -lm || exit 1; \
	  mkdir -p build-fuzz/corpus/$$n; \
	  build-fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build-fuzz/$$t- \
	    build-fuzz/corpus/$$n fuzz/corpus/$$n 2>&1 | grep -E "^#[0-9]+ *DONE|ERROR|SUMMARY|Done" ; \
	done

clean:
	rm -rf build build-san build-tsan build-fuzz

-include $(C_OBJ:.o=.d) $(CU_OBJ:.o=.d) $(CUDA_SO_OBJ:.o=.d) $(BUILD)/obj/src/cli/main.d $(TEST_BIN:=.d) $(BENCH_BIN:=.d)
