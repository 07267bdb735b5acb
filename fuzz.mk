# libFuzzer targets, one per parser (fuzz/targets/*.cpp), built with clang++
# into build-fuzz/ (CPU only, no CUDA). `make fuzz` runs each for FUZZ_SECONDS;
# tests/e2e/fuzz_smoke.sh runs each briefly within `make test`; docs/testing.md
# explains both. The project's sources are compiled with the sanitizers'
# instrumentation but without libFuzzer's main (-fsanitize=fuzzer-no-link) into
# one archive, so each target links only the objects it reaches.
FUZZ_BUILD ?= build-fuzz
FUZZ_CLANG ?= clang++

# Open MPI's and MPICH's wrappers both take the compiler from the environment;
# the parsers' objects need MPI's headers only where they include them.
FUZZ_CXX := OMPI_CXX=$(FUZZ_CLANG) MPICH_CXX=$(FUZZ_CLANG) $(shell command -v mpicxx >/dev/null 2>&1 && echo mpicxx || echo $(FUZZ_CLANG))

FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CXXFLAGS := -std=c++17 -O1 -g -I. -MMD -MP -pthread -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX \
  $(FUZZ_SANITIZE) $(shell pkg-config --cflags yaml-cpp 2>/dev/null)
FUZZ_LDLIBS := $(shell pkg-config --libs yaml-cpp 2>/dev/null || echo -lyaml-cpp) -lz -lrt
# PCRE2 as in build.mk: with it the GPT-2 tokenizer encodes too.
ifneq ($(shell pkg-config --exists libpcre2-8 2>/dev/null && echo yes),)
  FUZZ_CXXFLAGS += -DZT_HAVE_PCRE2 $(shell pkg-config --cflags libpcre2-8)
  FUZZ_LDLIBS += $(shell pkg-config --libs libpcre2-8)
endif

FUZZ_LIB_SRC := $(filter-out train/cli/main.cpp,$(shell find model data zero train -name '*.cpp' | sort))
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.cpp=$(FUZZ_BUILD)/obj/%.o)
FUZZ_SUPPORT_SRC := $(wildcard fuzz/support/*.cpp)
FUZZ_SUPPORT_OBJ := $(FUZZ_SUPPORT_SRC:%.cpp=$(FUZZ_BUILD)/obj/%.o)
FUZZ_TARGET_SRC := $(sort $(wildcard fuzz/targets/*.cpp))
FUZZ_TARGETS := $(FUZZ_TARGET_SRC:fuzz/targets/%.cpp=$(FUZZ_BUILD)/%)
FUZZ_SEEDER := $(FUZZ_BUILD)/make_seeds

.PHONY: fuzz-build fuzz-targets
fuzz-build: $(FUZZ_TARGETS) $(FUZZ_SEEDER)
fuzz-targets:
	@echo $(notdir $(FUZZ_TARGETS))

$(FUZZ_BUILD)/libzt.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_TARGETS): $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/fuzz/targets/%.o $(FUZZ_SUPPORT_OBJ) $(FUZZ_BUILD)/libzt.a
	$(FUZZ_CXX) $(FUZZ_SANITIZE) -fsanitize=fuzzer -pthread -o $@ $^ $(FUZZ_LDLIBS)

# The seed writer has its own main: no libFuzzer runtime.
$(FUZZ_SEEDER): $(FUZZ_BUILD)/obj/fuzz/make_seeds.o $(FUZZ_BUILD)/libzt.a
	$(FUZZ_CXX) $(FUZZ_SANITIZE) -pthread -o $@ $^ $(FUZZ_LDLIBS)

$(FUZZ_BUILD)/obj/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_SUPPORT_OBJ:.o=.d) $(FUZZ_BUILD)/obj/fuzz/make_seeds.d \
  $(FUZZ_TARGET_SRC:fuzz/targets/%.cpp=$(FUZZ_BUILD)/obj/fuzz/targets/%.d)
