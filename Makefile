# zerotrain: `make` builds build/zerotrain and the default corpora, `make run`
# trains the tiny default, `make test` runs every test. The first call installs
# missing packages through scripts/install_deps.sh (DEPS=skip to skip that step).
# The real build lives in build.mk; this file only sequences set-up before it,
# so that build.mk's package probes see what set-up installed.

BUILD ?= build
DEPS ?= auto
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SUBMAKE = $(MAKE) --no-print-directory -f build.mk BUILD=$(BUILD) -j$(JOBS)

.PHONY: all deps build corpus data-gpt2 run test test-asan coverage fuzz bench format clean deepspeed-drift

all: build corpus

deps:
ifneq ($(DEPS),skip)
	@scripts/install_deps.sh
endif

build: deps
	@$(SUBMAKE) $(BUILD)/zerotrain

# GPT-2's vocabulary (fetched once, not with DEPS=skip) and the KJV as GPT-2 shards.
GPT2_DATA = $(if $(filter skip,$(DEPS)),,scripts/fetch_gpt2_vocab.sh $(BUILD) && )scripts/prepare_gpt2_corpus.sh $(BUILD)

corpus: build
	@scripts/prepare_default_corpus.sh $(BUILD)
	@$(GPT2_DATA)

data-gpt2: build
	@scripts/prepare_default_corpus.sh $(BUILD)
	@$(GPT2_DATA)

run: all
	$(BUILD)/zerotrain train configs/tiny.yaml --run-dir $(BUILD)/runs/tiny

test: all
	@$(SUBMAKE) $(BUILD)/tests
	@BUILD=$(BUILD) tests/run_all.sh

# CPU-only build with AddressSanitizer and UBSan, into build-asan/. Open MPI's
# components stay loaded and stacks are fully unwound so that its own lifetime
# allocations can be named in tests/support/lsan.supp; anything else that leaks fails.
ASAN_ENV = OMPI_MCA_mca_base_component_disable_dlclose=1 ASAN_OPTIONS=fast_unwind_on_malloc=0 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/support/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-asan: deps
	@$(MAKE) --no-print-directory -f build.mk BUILD=build-asan SANITIZE=1 NO_CUDA=1 -j$(JOBS) build-asan/zerotrain build-asan/tests
	@$(ASAN_ENV) scripts/prepare_default_corpus.sh build-asan
	@$(ASAN_ENV) BUILD=build-asan tests/run_all.sh

# CPU-only build with gcov counters (-O0), into build-cov/: the unit tests, the
# [mpi] tests at W = 1..4 and the fast end-to-end scripts, then lcov's report
# (build-cov/coverage/index.html) and lines and functions covered per folder.
coverage: deps
	@command -v lcov >/dev/null && command -v genhtml >/dev/null || \
	  { echo "make coverage: lcov is missing; run: sudo apt-get install -y lcov" >&2; exit 1; }
	@$(MAKE) --no-print-directory -f build.mk BUILD=build-cov COVERAGE=1 NO_CUDA=1 -j$(JOBS) build-cov/zerotrain build-cov/tests
	@scripts/coverage.sh build-cov

# libFuzzer targets, one per parser (fuzz/, built by fuzz.mk with clang into
# build-fuzz/): each runs FUZZ_SECONDS, its corpus kept in build-fuzz/corpus/
# for the next run; a finding fails with its reproducer (docs/testing.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) fuzz/run.sh long build-fuzz

# The GPU throughput rows, then how plan, explain and report scale with W (CPU
# only; not inside bench.sh, whose last lines scripts/gpu_check.sh reads as its table).
bench: build
	@scripts/bench.sh $(BUILD)
	@scripts/bench_plan_scaling.sh $(BUILD)

# The newest DeepSpeed on PyPI (or VERSION=V) traced on CPU ranks and diffed, behaviour by
# behaviour, against the last verified release (docs/deepspeed_releases.md); exit 1 on a change.
deepspeed-drift:
	@/usr/bin/python3 tests/reference/deepspeed/drift.py $(if $(VERSION),--version $(VERSION))

format:
	@clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')

clean:
	rm -rf build build-asan build-cov build-fuzz
