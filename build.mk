# The build proper (called from Makefile after set-up). Probes what the machine
# has: OpenBLAS and sentencepiece are optional, nvcc switches the CUDA side on.
BUILD ?= build
SANITIZE ?= 0
COVERAGE ?= 0
NO_CUDA ?= 0
WERROR ?= 0

CXX := $(shell command -v mpicxx >/dev/null 2>&1 && echo mpicxx || echo g++)
NVCC := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifeq ($(NO_CUDA),1)
  NVCC :=
endif

CXXFLAGS := -std=c++17 -O2 -g -Wall -Wextra -I. -MMD -MP -pthread -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX
LDFLAGS := -pthread
# -lrt: POSIX aio (zero.offload_*.device nvme); part of libc since glibc 2.34.
LDLIBS := $(shell pkg-config --libs yaml-cpp 2>/dev/null || echo -lyaml-cpp) -lz -lrt
CXXFLAGS += $(shell pkg-config --cflags yaml-cpp 2>/dev/null)
ifeq ($(WERROR),1)
  CXXFLAGS += -Werror
endif
ifeq ($(SANITIZE),1)
  CXXFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -O1
  LDFLAGS += -fsanitize=address,undefined
endif
# gcov counters for `make coverage` (one .gcda per object, merged across ranks).
ifeq ($(COVERAGE),1)
  CXXFLAGS += --coverage -O0
  LDFLAGS += --coverage
endif

ifneq ($(shell pkg-config --exists openblas 2>/dev/null && echo yes),)
  CXXFLAGS += -DZT_HAVE_BLAS $(shell pkg-config --cflags openblas)
  LDLIBS += $(shell pkg-config --libs openblas)
endif
ifneq ($(wildcard /usr/include/sentencepiece_trainer.h),)
  CXXFLAGS += -DZT_HAVE_SENTENCEPIECE
  LDLIBS += -lsentencepiece -lsentencepiece_train
endif

# PCRE2 runs GPT-2's pre-tokenizer regex; without it GPT-2 text only decodes.
ifneq ($(shell pkg-config --exists libpcre2-8 2>/dev/null && echo yes),)
  CXXFLAGS += -DZT_HAVE_PCRE2 $(shell pkg-config --cflags libpcre2-8)
  LDLIBS += $(shell pkg-config --libs libpcre2-8)
endif

# Catch2: v2 ships one header, v3 a library (the GPU machine has v3).
ifneq ($(wildcard /usr/include/catch2/catch_all.hpp /usr/local/include/catch2/catch_all.hpp),)
  TEST_LIBS := $(shell pkg-config --libs catch2 2>/dev/null || echo -lCatch2)
endif

# Every source below the top-level folders, found recursively.
SRC := $(shell find model data zero train -name '*.cpp' | sort)
MAIN_SRC := train/cli/main.cpp
TEST_SRC := $(shell find tests -name '*.cpp' | sort)

ifneq ($(NVCC),)
  CUDA_HOME := $(patsubst %/bin/nvcc,%,$(NVCC))
  CU_SRC := $(shell find model zero -name '*.cu' | sort)
  CXXFLAGS += -DZT_HAVE_CUDA -I$(CUDA_HOME)/include
  NVCCFLAGS := -std=c++17 -O3 -I. -MMD -MP --expt-relaxed-constexpr -lineinfo \
    -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90a,code=sm_90a \
    -Xcompiler -Wall,-Wextra $(shell pkg-config --cflags-only-I ompi 2>/dev/null)
  ifeq ($(WERROR),1)
    NVCCFLAGS += -Werror all-warnings
  endif
  LDLIBS += -L$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lnccl -Wl,-rpath,$(CUDA_HOME)/lib64
else
  CU_SRC :=
endif
SRC := $(filter-out $(MAIN_SRC),$(SRC))

OBJ := $(SRC:%.cpp=$(BUILD)/obj/%.o) $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
MAIN_OBJ := $(MAIN_SRC:%.cpp=$(BUILD)/obj/%.o)
TEST_OBJ := $(TEST_SRC:%.cpp=$(BUILD)/obj/%.o)

$(BUILD)/zerotrain: $(OBJ) $(MAIN_OBJ)
	$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests: $(OBJ) $(TEST_OBJ)
	$(CXX) $(LDFLAGS) -o $@ $^ $(TEST_LIBS) $(LDLIBS)

$(BUILD)/obj/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# The host AdamW: vector sqrt needs -fno-math-errno, and no FMA contraction
# keeps its results bit-identical to cpu::adamw's.
$(BUILD)/obj/zero/optim/host_adamw.o: CXXFLAGS += -O3 -fno-math-errno -ffp-contract=off

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

-include $(OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
