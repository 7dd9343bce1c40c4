# splade-index build. `make` builds the library (build/libsplade.so.0, build/libsplade.a) and
# the CLI build/splade-index linked against it (with CUDA when nvcc is found); it never runs apt:
# when a Debian package is missing it names the command that installs it. `make deps` installs
# what is missing; `make test` (which runs `make deps` first) runs every test, `make bench` the
# CPU benchmarks, `make install PREFIX=/usr/local DESTDIR=` installs headers, libraries, the CLI
# and splade.pc (pkg-config).
#
# Knobs: NO_CUDA=1 forces a CPU-only build; CUDA_ARCH overrides the GPU targets;
# SAN=1 builds with AddressSanitizer + UBSan into build-san/. CFLAGS, CPPFLAGS, LDFLAGS and
# NVCCFLAGS are the user's (`make CFLAGS=-O3`): the flags the build needs are added to them.

CC       ?= gcc
CUDA_HOME ?= /usr/local/cuda
NVCC     ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
ifeq ($(NO_CUDA),1)
NVCC :=
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
PKGS     := openblas jansson libutf8proc libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CPU_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lstreamvbyte -lm
CLI_LIBS := $(shell pkg-config --libs jansson 2>/dev/null) -lm   # cmd_query prints JSON itself

# User flags last, so that they override ours; ours are never dropped. Every object is -fPIC (one
# set of objects for libsplade.so and libsplade.a) and hidden unless declared SPLADE_API (splade.h).
CFLAGS   ?= -O2 -g
SPLADE_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Isrc $(PKG_CFLAGS) -pthread -MMD -MP \
                 -fPIC -fvisibility=hidden $(SANFLAGS)
SPLADE_LDFLAGS := -pthread $(SANFLAGS)
LIBS     := $(CPU_LIBS)

LIB_C_SRC := $(filter-out src/cli/% src/gpu/no_cuda.c,$(wildcard src/*/*.c))
CLI_SRC  := $(wildcard src/cli/*.c)
CU_SRC   := $(wildcard src/*/*.cu)

ifneq ($(NVCC),)
CUDA_ARCH ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_80,code=compute_80
NVCCFLAGS ?= -O3 -lineinfo
SPLADE_NVCCFLAGS := -std=c++17 -Iinclude -Isrc $(CUDA_ARCH) -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra -MMD -MP
SPLADE_CFLAGS += -DSPLADE_HAVE_CUDA -I$(CUDA_HOME)/include
# The shared CUDA runtime: one copy in the process, used by libsplade.so and by the CLI's
# bench-lmhead, which calls CUDA and cuBLAS itself (two static copies would not share state).
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lstdc++
LIBS     += $(CUDA_LIBS)
CU_OBJ   := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
else
LIB_C_SRC += src/gpu/no_cuda.c
CU_OBJ   :=
endif
ALL_CFLAGS = $(SPLADE_CFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SPLADE_LDFLAGS) $(LDFLAGS)

LIB_OBJ  := $(LIB_C_SRC:%.c=$(BUILD)/obj/%.o) $(CU_OBJ)
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

DEB_PKGS := gcc make pkg-config python3 python3-pip libutf8proc-dev libcmocka-dev libjansson-dev \
            libopenblas-dev libcurl4-openssl-dev libstreamvbyte-dev

.PHONY: all deps check test python-check bench models demo fuzz install uninstall clean
all: $(BUILD)/.deps-ok $(LIB) $(SO) $(BUILD)/libsplade.so $(BIN)

# Dpkg's view of what is missing (nothing on a system without dpkg: the compiler will say).
MISSING_DEBS = command -v dpkg >/dev/null && for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done

# A build only checks; `make deps` (run by `make test` and `make demo`) installs what is missing.
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

$(BUILD)/obj/%.o: %.c | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cu | $(BUILD)/.deps-ok
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

# The CLI is the library's first client: it links libsplade.so.0 (found next to the binary, or in
# ../lib once installed) and calls only what the library exports.
$(BIN): $(CLI_OBJ) $(SO)
	$(CC) $(ALL_LDFLAGS) $^ -o $@ -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib' $(CLI_LIBS) \
	  $(if $(NVCC),$(CUDA_LIBS))

# Tests, fuzz replays and benchmarks link the static library: they call internal functions too.
$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(LIB) -o $@ $(ALL_LDFLAGS) -lcmocka $(LIBS)

# Fuzz targets linked with a plain replay driver: `make test` runs every seed and regression.
$(BUILD)/fuzz/%: fuzz/%.c fuzz/driver.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< fuzz/driver.c $(LIB) -o $@ $(ALL_LDFLAGS) $(LIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(LIB) -o $@ $(ALL_LDFLAGS) $(LIBS)

PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
LIBDIR   ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
LDCONFIG ?= ldconfig   # run by a root install without DESTDIR, so that ld.so finds the new library
# splade.pc, written by install (so it names the PREFIX given there); Requires.private and
# Libs.private are what a static link against libsplade.a needs.
SPLADE_PC := 'prefix=$(PREFIX)' 'libdir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))' \
  'includedir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))' '' 'Name: splade' \
  'Description: SPLADE learned sparse retrieval: tokenizer, encoder, inverted index, exact top-k' \
  'Version: $(VERSION)' 'Requires.private: $(PKGS)' 'Cflags: -I$${includedir}' \
  'Libs: -L$${libdir} -lsplade' 'Libs.private: -lstreamvbyte -lm -pthread $(if $(NVCC),$(CUDA_LIBS))'

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(INCLUDEDIR)/splade
	install -m 644 include/splade.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/splade/*.h $(DESTDIR)$(INCLUDEDIR)/splade/
	install -m 755 $(SO_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SO_REAL)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsplade.so
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/
	printf '%s\n' $(SPLADE_PC) > $(DESTDIR)$(PKGCONFIGDIR)/splade.pc
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then $(LDCONFIG); fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/splade-index $(DESTDIR)$(LIBDIR)/libsplade.* $(DESTDIR)$(PKGCONFIGDIR)/splade.pc
	rm -rf $(DESTDIR)$(INCLUDEDIR)/splade $(DESTDIR)$(INCLUDEDIR)/splade.h

# The real test model (splade-tiny) into cache/; tests skip visibly without it.
models:
	-@python3 tools/fetch_splade_tiny.py --quiet

# `make test` = the suite on the normal build, then again under ASan+UBSan (CPU-only build in
# $(BUILD)-san), then one closing line over both. `make check` runs the first part alone.
check: all $(TEST_BIN) $(FUZZ_REPLAY) models
	@BUILD=$(BUILD) sh tests/run.sh

# The Python package (python/) against this build's library and CLI: pytest, after installing numpy,
# scipy and pytest into $(BUILD)/python-deps where missing (python/tests/check.sh).
python-check: all models
	@BUILD=$(BUILD) sh python/tests/check.sh

# `make deps` first (CI runs `make test` on a fresh machine), then a new make that sees what it installed.
ifeq ($(SAN),1)
test: deps
	@$(MAKE) --no-print-directory check
else
test: deps
	@$(MAKE) --no-print-directory check
	@echo "== the Python package (python/tests)"
	@$(MAKE) --no-print-directory python-check
	@echo "== the same suite under AddressSanitizer + UndefinedBehaviorSanitizer"
	@$(MAKE) --no-print-directory SAN=1 NO_CUDA=1 BUILD=$(BUILD)-san check
	@cat $(BUILD)/test-counts $(BUILD)/python-counts $(BUILD)-san/test-counts | \
	  awk '{p+=$$1; f+=$$2; s+=$$3} END {printf "all: %d passed, %d failed, %d skipped\n", p, f, s}'
endif

bench: all $(BENCH_BIN) models
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done

demo: deps
	@$(MAKE) --no-print-directory all models
	BUILD=$(BUILD) sh tools/demo.sh

# libFuzzer (clang, CPU-only sources, ASan+UBSan): each target for FUZZ_SECONDS; new
# inputs go to build-fuzz/corpus/<target>, crashes to build-fuzz/<target>-crash-*.
FUZZ_SECONDS ?= 60
FUZZ_LIB_SRC := $(filter-out src/cli/%,$(wildcard src/*/*.c))
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
	rm -rf build build-san build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(BENCH_BIN:=.d)
