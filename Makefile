# splade-index build. `make` builds the library (build/libsplade.so.0, build/libsplade.a) and
# the CLI build/splade-index linked against it (with CUDA when nvcc is found); it never runs apt:
# when a Debian package is missing it names the command that installs it. `make deps` installs
# what is missing; `make test` (which runs `make deps` first) runs every test, `make bench` the
# CPU benchmarks, `make lab` the kernel lab (tools/kernel_lab/, nvcc only), `make install
# PREFIX=/usr/local DESTDIR=` installs headers, libraries, the CLI and splade.pc (pkg-config).
#
# Knobs: NO_CUDA=1 forces a CPU-only build; CUDA_ARCH overrides the GPU targets;
# SAN=1 builds with AddressSanitizer + UBSan into build-san/; TSAN=1 with ThreadSanitizer into
# build-tsan/ (CPU only; `make test` runs the threaded tests there, TSAN_TESTS / TSAN_CLI).
# CFLAGS, CPPFLAGS, LDFLAGS and NVCCFLAGS are the user's (`make CFLAGS=-O3`): the flags the build
# needs are added to them.
#
# CUDA build: every .cu file goes into build/libsplade-cuda.so (with the CUDA runtime; cuBLAS and
# cuBLASLt are dlopen'ed on their first call: src/gpu/cublas_lazy.c), which libsplade.so loads only
# when a GPU path runs (src/gpu/cuda_loader.c); keep it next to libsplade.so.0. libsplade.so,
# libsplade.a and the CLI link no CUDA library. The GPU tests and benches (*gpu* names) link the
# CUDA objects directly.

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

VERSION  := $(shell sed -n 's/^\#define SPLADE_VERSION "\(.*\)"/\1/p' include/splade.h)
SONAME   := libsplade.so.$(firstword $(subst ., ,$(VERSION)))

# Libraries with a pkg-config file on Debian (`pkg-config --list-all`); libstreamvbyte ships none.
# Without pkg-config or those .pc files (the GPU machine builds against a carried sysroot whose
# paths bench/gpu.sh passes in CC and LDFLAGS), Debian's own names and paths.
PKGS     := openblas jansson libutf8proc libcurl zlib
ifeq ($(shell pkg-config --exists $(PKGS) 2>/dev/null && echo yes),yes)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
CLI_LIBS := $(shell pkg-config --libs jansson) -lm   # cmd_query prints JSON itself
else
PKG_CFLAGS := -I/usr/include/x86_64-linux-gnu/openblas-pthread
PKG_LIBS := -lopenblas -ljansson -lutf8proc -lcurl -lz
CLI_LIBS := -ljansson -lm
endif
CPU_LIBS := $(PKG_LIBS) -lstreamvbyte -lm

# User flags last, so that they override ours; ours are never dropped. Every object is -fPIC (one
# set of objects for libsplade.so and libsplade.a) and hidden unless declared SPLADE_API (splade.h).
CFLAGS   ?= -O2 -g
SPLADE_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Isrc $(PKG_CFLAGS) -pthread -MMD -MP \
                 -fPIC -fvisibility=hidden $(SANFLAGS)
SPLADE_LDFLAGS := -pthread $(SANFLAGS)
# oneDNN (libdnnl-dev) runs the CPU's opt-in bf16 GEMMs (src/encoder/gemm_dnnl.c); a tree without
# it (NO_DNNL=1, or the GPU image's sysroot) still builds, and `--precision bf16` on the CPU then
# says so.
ifeq ($(NO_DNNL)$(wildcard /usr/include/oneapi/dnnl/dnnl.h),/usr/include/oneapi/dnnl/dnnl.h)
SPLADE_CFLAGS += -DSPLADE_HAVE_DNNL
CPU_LIBS += -ldnnl -lgomp
DNNL_LIBS := -ldnnl -lgomp
endif
LIBS     := $(CPU_LIBS)

# (the CUDA build's loader, the CPU-only stand-in and bench-lmhead's CUDA half are chosen below)
CUDA_HOST_SRC := src/gpu/cuda_loader.c src/gpu/no_cuda.c src/lmhead_fused/lmhead_bench.c src/gpu/cublas_lazy.c
LIB_C_SRC := $(filter-out src/cli/% $(CUDA_HOST_SRC),$(wildcard src/*/*.c))
CLI_SRC  := $(filter-out $(CUDA_HOST_SRC),$(wildcard src/cli/*.c))
CU_SRC   := $(wildcard src/*/*.cu)

ifneq ($(NVCC),)
CUDA_ARCH ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_80,code=compute_80
NVCCFLAGS ?= -O3 -lineinfo
SPLADE_NVCCFLAGS := -std=c++17 -DSPLADE_IN_CUDA_SO -Iinclude -Isrc $(CUDA_ARCH) -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra -MMD -MP
SPLADE_CFLAGS += -DSPLADE_HAVE_CUDA -I$(CUDA_HOME)/include
# no -lcublas/-lcublasLt: the RUNPATH is where cublas_lazy.c's dlopen looks first
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
LIBS     += -ldl
# Programs export their SPLADE_API splade_* functions (those of a static libsplade.a; the CLI's
# own) for libsplade-cuda.so to bind to; with libsplade.so, its exports serve.
HOST_EXPORTS := -Wl,--dynamic-list=src/gpu/host_exports.list
LIB_C_SRC += src/gpu/cuda_loader.c
CU_OBJ   := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
LAZY_OBJ := $(BUILD)/obj/src/gpu/cublas_lazy.o
CUDA_SO  := $(BUILD)/libsplade-cuda.so
CUDA_SO_OBJ := $(CU_OBJ) $(LAZY_OBJ) $(BUILD)/obj/src/lmhead_fused/lmhead_bench.o
else
LIB_C_SRC += src/gpu/no_cuda.c
HOST_EXPORTS :=
CU_OBJ   :=
LAZY_OBJ :=
CUDA_SO  :=
CUDA_SO_OBJ :=
endif
ALL_CFLAGS = $(SPLADE_CFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SPLADE_LDFLAGS) $(LDFLAGS)

LIB_OBJ  := $(LIB_C_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
LIB      := $(BUILD)/libsplade.a
SO       := $(BUILD)/$(SONAME)
SO_REAL  := $(BUILD)/libsplade.so.$(VERSION)
BIN      := $(BUILD)/splade-index
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_REPLAY := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# tests and benches that call kernels or the CUDA runtime themselves (a name with "gpu", or a
# "_backends" test: one case table run on the CPU and the GPU): linked with the CUDA objects
GPU_PROGS := $(foreach p,$(TEST_BIN) $(BENCH_BIN),$(if $(or $(findstring gpu,$(notdir $(p))),$(findstring _backends,$(notdir $(p)))),$(p)))

DEB_PKGS := gcc make pkg-config python3 python3-pip libutf8proc-dev libcmocka-dev libjansson-dev \
            libopenblas-dev libcurl4-openssl-dev libstreamvbyte-dev zlib1g-dev libdnnl-dev

.PHONY: all deps check test tsan-check python-check bench lab models demo fuzz install uninstall clean
all: $(BUILD)/.deps-ok $(LIB) $(SO) $(BUILD)/libsplade.so $(BIN) $(CUDA_SO)

# Dpkg's view of what is missing (nothing on a system without dpkg: the compiler will say).
MISSING_DEBS = command -v dpkg >/dev/null && for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done

# A build only checks; `make deps` (run by `make test` and `make demo`) installs what is missing.
# (bench/gpu.sh creates the mark itself when the headers are there without the Debian packages.)
$(BUILD)/.deps-ok:
	@missing=$$($(MISSING_DEBS)); if [ -n "$$missing" ]; then \
	  echo "splade-index: missing Debian packages:" $$missing; \
	  echo "install them (as root) with:  apt-get update && apt-get install -y" $$missing "   (or: make deps)"; \
	  exit 1; fi
	@mkdir -p $(BUILD) && touch $@

deps:
	@missing=$$($(MISSING_DEBS)); if [ -n "$$missing" ]; then echo "installing:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
	@mkdir -p $(BUILD) && touch $(BUILD)/.deps-ok

# Objects depend on a stamp named after the compile flags: a build folder made with other flags
# (before -fPIC, another CFLAGS) is recompiled instead of linked into a broken library.
FLAGS_STAMP := $(BUILD)/.flags-$(shell printf '%s' "$(CC) $(ALL_CFLAGS) $(NVCC) $(SPLADE_NVCCFLAGS) $(NVCCFLAGS)" | cksum | cut -d' ' -f1)
$(FLAGS_STAMP): | $(BUILD)/.deps-ok
	@rm -f $(BUILD)/.flags-* && touch $@

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP) | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cu $(FLAGS_STAMP) | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(NVCC) $(SPLADE_NVCCFLAGS) $(NVCCFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Only SPLADE_API functions are exported; --exclude-libs keeps any static library linked in hidden.
$(SO_REAL): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--no-undefined -Wl,--exclude-libs,ALL $(ALL_LDFLAGS) \
	  $^ -o $@ $(LIBS)

$(SO): $(SO_REAL)
	ln -sf $(notdir $<) $@

$(BUILD)/libsplade.so: $(SO)
	ln -sf $(notdir $<) $@

# -Bsymbolic: the .so's calls to its own entry points stay inside it (libsplade.so or the program
# has the loader's forwarders of the same names); host symbols (splade_fail) resolve to theirs,
# hence no --no-undefined. --exclude-libs: the static CUDA runtime's names stay hidden, so that
# only the SPLADE_API entry points the loader looks up are exported.
$(CUDA_SO): $(CUDA_SO_OBJ)
	$(CC) -shared -Wl,-Bsymbolic -Wl,--exclude-libs,ALL $(ALL_LDFLAGS) $^ -o $@ $(CLI_LIBS) $(CUDA_LIBS)

# The GPU programs get the CUDA objects ahead of the library (so the loader is not pulled in)
# and the CUDA libraries; the others find $(CUDA_SO) at run time.
$(GPU_PROGS): $(CU_OBJ) $(LAZY_OBJ)
$(GPU_PROGS): DIRECT_CUDA = $(CU_OBJ) $(LAZY_OBJ)
$(GPU_PROGS): DIRECT_CUDA_LIBS = $(CUDA_LIBS)
$(TEST_BIN) $(BENCH_BIN) $(FUZZ_REPLAY): | $(CUDA_SO)

# The CLI is the library's first client: it links libsplade.so.0 (found next to the binary, or in
# ../lib once installed) and calls only what the library exports; no CUDA library.
$(BIN): $(CLI_OBJ) $(SO)
	$(CC) $(ALL_LDFLAGS) $^ -o $@ -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib' $(CLI_LIBS) $(HOST_EXPORTS)

# Tests, fuzz replays and benchmarks link the static library: they call internal functions too.
$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(DIRECT_CUDA) $(LIB) -o $@ $(ALL_LDFLAGS) -lcmocka $(LIBS) $(HOST_EXPORTS) $(DIRECT_CUDA_LIBS)

# Fuzz targets linked with a plain replay driver: `make test` runs every seed and regression.
$(BUILD)/fuzz/%: fuzz/%.c fuzz/driver.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< fuzz/driver.c $(LIB) -o $@ $(ALL_LDFLAGS) $(LIBS) $(HOST_EXPORTS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(DIRECT_CUDA) $(LIB) -o $@ $(ALL_LDFLAGS) $(LIBS) $(HOST_EXPORTS) $(DIRECT_CUDA_LIBS)

PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
LIBDIR   ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
LDCONFIG ?= ldconfig   # run by a root install without DESTDIR, so that ld.so finds the new library
# splade.pc, written by install (so it names the PREFIX given there); Requires.private and
# Libs.private are what a static link against libsplade.a needs (CUDA build: -ldl for the loader,
# and -rdynamic so that libsplade-cuda.so finds splade_fail & co. in the program).
SPLADE_PC := 'prefix=$(PREFIX)' 'libdir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))' \
  'includedir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))' '' 'Name: splade' \
  'Description: SPLADE learned sparse retrieval: tokenizer, encoder, inverted index, exact top-k' \
  'Version: $(VERSION)' 'Requires.private: $(PKGS)' 'Cflags: -I$${includedir}' \
  'Libs: -L$${libdir} -lsplade' 'Libs.private: -lstreamvbyte -lm $(DNNL_LIBS) -pthread $(if $(NVCC),-ldl -rdynamic)'

# libsplade-cuda.so goes beside libsplade.so.0, where the loader looks first.
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(INCLUDEDIR)/splade
	install -m 644 include/splade.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/splade/*.h $(DESTDIR)$(INCLUDEDIR)/splade/
	install -m 755 $(SO_REAL) $(CUDA_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SO_REAL)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsplade.so
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/
	printf '%s\n' $(SPLADE_PC) > $(DESTDIR)$(PKGCONFIGDIR)/splade.pc
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then $(LDCONFIG); fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/splade-index $(DESTDIR)$(LIBDIR)/libsplade.* $(DESTDIR)$(LIBDIR)/libsplade-cuda.so \
	  $(DESTDIR)$(PKGCONFIGDIR)/splade.pc
	rm -rf $(DESTDIR)$(INCLUDEDIR)/splade $(DESTDIR)$(INCLUDEDIR)/splade.h

# The real test model (splade-tiny) into cache/; tests skip visibly without it.
models:
	-@python3 tools/fetch_splade_tiny.py --quiet
	-@python3 tools/make_model_goldens.py --models-only

# `make test` = the suite on the normal build, the kernel lab's compile (`make lab`: skipped, and
# saying so, without nvcc), the Python package, the suite again under ASan+UBSan (CPU-only build in
# $(BUILD)-san), then the threaded tests under TSan, then one closing line over all of them.
# `make check` runs the first part alone.
check: all $(TEST_BIN) $(FUZZ_REPLAY) models
	@BUILD=$(BUILD) sh tests/run.sh

# The tests that run threads (the CPU team, the encoder, the CPU LM head, parallel inversion, batch
# queries), under ThreadSanitizer: `make test`'s third part. TSan slows them ~5-15x, hence a subset of
# the suite (and the LM head's small cases only).
TSAN_TESTS := test_cpu_team test_encoder_cpu test_index test_model test_lmhead_backends test_multi_gpu test_ingest_pipeline \
              test_corpus_batch
TSAN_CLI   := test_threads_deterministic test_index_vectors
tsan-check: all $(TSAN_TESTS:%=$(BUILD)/tests/%) models
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp $(TSAN_OPTIONS)" \
	  SPLADE_TEST_SKIP="test_tiny_*" SPLADE_LMHEAD_TEST_SMALL=1 BUILD=$(BUILD) \
	  CLI_TESTS="$(TSAN_CLI:%=tests/cli/%.sh)" sh tests/run.sh

# The Python package (python/) against this build's library and CLI: pytest, after installing numpy,
# scipy and pytest into $(BUILD)/python-deps where missing (python/tests/check.sh).
python-check: all models
	@BUILD=$(BUILD) sh python/tests/check.sh

# `make deps` first (CI runs `make test` on a fresh machine), then a new make that sees what it installed.
ifneq ($(filter 1,$(SAN) $(TSAN)),)
test: deps
	@$(MAKE) --no-print-directory check
else
test: deps
	@$(MAKE) --no-print-directory check
	@echo "== the kernel lab compiles (make lab; skipped without nvcc)"
	@$(MAKE) --no-print-directory lab
	@echo "== the Python package (python/tests)"
	@$(MAKE) --no-print-directory python-check
	@echo "== the same suite under AddressSanitizer + UndefinedBehaviorSanitizer"
	@$(MAKE) --no-print-directory SAN=1 NO_CUDA=1 BUILD=$(BUILD)-san check
	@echo "== the threaded tests under ThreadSanitizer"
	@$(MAKE) --no-print-directory TSAN=1 NO_CUDA=1 BUILD=$(BUILD)-tsan tsan-check
	@cat $(BUILD)/test-counts $(BUILD)/python-counts $(BUILD)-san/test-counts $(BUILD)-tsan/test-counts | \
	  awk '{p+=$$1; f+=$$2; s+=$$3} END {printf "all: %d passed, %d failed, %d skipped\n", p, f, s}'
endif

bench: all $(BENCH_BIN) models
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done

# The kernel lab (tools/kernel_lab/, llm.c's dev/cuda pattern): one self-contained program per
# experiment (CPU reference, numbered variants, checker, timing), built with nvcc alone (no library,
# no Debian packages) into $(BUILD)/lab/; bench/gpu.sh runs them. Without nvcc: a no-op that says so.
LAB_SRC  := $(wildcard tools/kernel_lab/*.cu)
LAB_BIN  := $(LAB_SRC:tools/kernel_lab/%.cu=$(BUILD)/lab/%)
LAB_LIBS_layer_gemm := -lcublasLt # variant 1 is cuBLASLt, the library's GEMM
ifneq ($(NVCC),)
lab: $(LAB_BIN)
$(BUILD)/lab/%: tools/kernel_lab/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 -Iinclude -Isrc $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-pthread -MMD -MP $(NVCCFLAGS) $< -o $@ $(LAB_LIBS_$*)
else
lab:
	@echo "make lab: skipped: no nvcc (the kernel lab in tools/kernel_lab/ needs the CUDA toolkit)"
endif

demo: deps
	@$(MAKE) --no-print-directory all models
	BUILD=$(BUILD) sh tools/demo.sh

# libFuzzer (clang, CPU-only sources, ASan+UBSan): each target for FUZZ_SECONDS; new
# inputs go to build-fuzz/corpus/<target>, crashes to build-fuzz/<target>-crash-*.
FUZZ_SECONDS ?= 60
FUZZ_LIB_SRC := $(filter-out src/cli/% src/gpu/cuda_loader.c src/gpu/cublas_lazy.c src/lmhead_fused/lmhead_bench.c,$(wildcard src/*/*.c))
fuzz: $(BUILD)/.deps-ok
	@mkdir -p build-fuzz
	@for f in $(FUZZ_SRC); do t=$$(basename $$f .c); n=$${t#fuzz_}; \
	  echo "== $$t ($(FUZZ_SECONDS) s)"; \
	  clang -g -O1 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc $(PKG_CFLAGS) -pthread \
	    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $$f $(FUZZ_LIB_SRC) -o build-fuzz/$$t \
	    $(CPU_LIBS) || exit 1; \
	  mkdir -p build-fuzz/corpus/$$n; \
	  build-fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build-fuzz/$$t- \
	    build-fuzz/corpus/$$n fuzz/corpus/$$n 2>&1 | grep -E "^#[0-9]+ *DONE|ERROR|SUMMARY|Done" ; \
	done

clean:
	rm -rf build build-san build-tsan build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(CU_OBJ:.o=.d) $(CUDA_SO_OBJ:.o=.d) $(TEST_BIN:=.d) $(BENCH_BIN:=.d) \
  $(LAB_BIN:=.d)
