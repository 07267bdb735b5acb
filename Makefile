# zerotrain: `make` builds build/zerotrain and the default corpus, `make run`
# trains the tiny default, `make test` runs every test. The first call installs
# missing packages through scripts/install_deps.sh (DEPS=skip to skip that step).
# The real build lives in build.mk; this file only sequences set-up before it,
# so that build.mk's package probes see what set-up installed.

BUILD ?= build
DEPS ?= auto
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SUBMAKE = $(MAKE) --no-print-directory -f build.mk BUILD=$(BUILD) -j$(JOBS)

.PHONY: all deps build corpus run test test-asan bench format clean

all: build corpus

deps:
ifneq ($(DEPS),skip)
	@scripts/install_deps.sh
endif

build: deps
	@$(SUBMAKE) $(BUILD)/zerotrain

corpus: build
	@scripts/prepare_default_corpus.sh $(BUILD)

run: all
	$(BUILD)/zerotrain train configs/tiny.yaml --run-dir $(BUILD)/runs/tiny

test: all
	@$(SUBMAKE) $(BUILD)/tests
	@BUILD=$(BUILD) tests/run_all.sh

# CPU-only build with AddressSanitizer and UBSan, into build-asan/.
test-asan: deps
	@$(MAKE) --no-print-directory -f build.mk BUILD=build-asan SANITIZE=1 NO_CUDA=1 -j$(JOBS) build-asan/zerotrain build-asan/tests
	@scripts/prepare_default_corpus.sh build-asan
	@BUILD=build-asan tests/run_all.sh

bench: build
	@scripts/bench.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')

clean:
	rm -rf build build-asan
