# axc — one Makefile for the compiler, the runtime, the tests and the demo.
# Build outputs go under build/ (same layout as an install: bin/ include/ lib/).

CC      ?= cc
ifeq ($(origin CC),default)
CC      := cc
endif
PYTHON  ?= /usr/bin/python3
PREFIX  ?= /usr/local
B       := build
SAN     ?=

# The compiler's folders, bottom layer first (make layers checks the order).
AXC_DIRS := base ir grammar frontend io passes codegen compiler

WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter
CFLAGS_AXC := -std=c11 -O2 -g $(WARN) $(SAN) -D_GNU_SOURCE \
              $(AXC_DIRS:%=-I%) -Iruntime -Iruntime/gpu -I$(B)/gen
CFLAGS_RT  := -std=c99 -O2 -g -fPIC -Wall -Wextra -Wpedantic $(SAN) -Iruntime
LDLIBS_AXC := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c) -ldl -lm

# The LLVM back end (--target=llvm, axc run --jit) is built when llvm-config
# is found (Debian: llvm-dev), and left out with a message otherwise.  axc
# then links the whole runtime and exports its symbols (-rdynamic), so the
# JIT resolves the kernels from axc itself.
LLVM_CONFIG ?= llvm-config
HAVE_LLVM := $(shell $(LLVM_CONFIG) --version >/dev/null 2>&1 && echo yes)
CXX_AXC :=
ifeq ($(HAVE_LLVM),yes)
LLVM_INC    := -isystem $(shell $(LLVM_CONFIG) --includedir)
CFLAGS_AXC  += -DAXC_HAVE_LLVM
LDLIBS_AXC  += $(shell $(LLVM_CONFIG) --ldflags --libs core orcjit native all-targets passes) -lstdc++
AXC_LINK    := -rdynamic
RT_LINK     = -Wl,--whole-archive $(LIBAXRT) -Wl,--no-whole-archive
CXX_AXC     := $(B)/obj/codegen/cg_llvm_tm.o
else
$(info axc: llvm-config not found: building without the LLVM back end (--target=llvm, axc run --jit); install llvm-dev for it)
AXC_LINK    :=
RT_LINK     = $(LIBAXRT)
endif
CXX     ?= g++
# The ONNX front end (frontend/onnx_*.c) needs protobuf-c and onnx.proto; the
# C reader is generated into $(B)/gen.  Without them it is left out (axc then
# says so for a .onnx input) and everything else builds.
PROTOC_C   := $(shell command -v protoc-c 2>/dev/null)
ONNX_PROTO := $(firstword $(wildcard /usr/include/onnx/onnx.proto /usr/lib/python3/dist-packages/onnx/onnx.proto))
HAVE_ONNX  := $(if $(and $(PROTOC_C),$(ONNX_PROTO),$(shell pkg-config --exists libprotobuf-c && echo y)),y,)
ifeq ($(HAVE_ONNX),y)
CFLAGS_AXC += -DAXC_ONNX
LDLIBS_AXC += $(shell pkg-config --libs libprotobuf-c)
ONNX_GEN_OBJ := $(B)/obj/gen/onnx.pb-c.o
else
$(info axc: ONNX front end left out (needs protoc-c, libprotobuf-c-dev and onnx.proto: sh scripts/deps.sh))
ONNX_GEN_OBJ :=
endif

# The TFLite front end (frontend/tflite_*.c) reads the flatbuffer through the
# C++ reader flatc generates from frontend/tflite_schema.fbs into $(B)/gen,
# behind frontend/tflite_reader.cpp (a C interface).  Without flatc and
# flatbuffers' headers it is left out (axc then says so for a .tflite input).
FLATC       := $(shell command -v flatc 2>/dev/null)
HAVE_TFLITE := $(if $(and $(FLATC),$(wildcard /usr/include/flatbuffers/flatbuffers.h)),y,)
ifeq ($(HAVE_TFLITE),y)
CFLAGS_AXC += -DAXC_TFLITE
LDLIBS_AXC += -lstdc++
TFLITE_OBJ := $(B)/obj/frontend/tflite_reader.o
else
$(info axc: TFLite front end left out (needs flatc and libflatbuffers-dev: sh scripts/deps.sh))
TFLITE_OBJ :=
endif

GRAMMAR_C := $(B)/gen/axc.tab.c $(B)/gen/axc.lex.c
GRAMMAR_H := $(B)/gen/axc.tab.h $(B)/gen/axc.lex.h
AXC_SRC   := $(foreach d,$(AXC_DIRS),$(wildcard $(d)/*.c))
AXC_OBJ   := $(patsubst %.c,$(B)/obj/%.o,$(AXC_SRC)) $(B)/obj/gen/axc.tab.o $(B)/obj/gen/axc.lex.o \
             $(ONNX_GEN_OBJ)
LIB_OBJ   := $(filter-out $(B)/obj/compiler/main.o,$(AXC_OBJ)) $(CXX_AXC) $(TFLITE_OBJ)
RT_SRC    := $(wildcard runtime/*.c)
RT_OBJ    := $(patsubst %.c,$(B)/obj/%.o,$(RT_SRC))
HEADERS   := $(foreach d,$(AXC_DIRS),$(wildcard $(d)/*.h $(d)/*.def)) $(wildcard runtime/*.h runtime/gpu/*.h)

AXC    := $(B)/bin/axc
LIBAXRT := $(B)/lib/libaxrt.a
# The runtime's optional GPU part (--target=cuda|hip): its own library, not
# the freestanding core; it opens the driver and NVRTC/hiprtc with dlopen.
LIBAXRT_GPU := $(B)/lib/libaxrt_gpu.a

# The runtime's optional MPI part (docs/distributed.md): libaxrt_mpi.so, built
# when mpicc and mpi.h are found (Debian: libopenmpi-dev); `axc train` opens it
# with dlopen under mpirun, so axc itself does not link MPI.
MPICC    ?= mpicc
HAVE_MPI := $(shell printf '\043include <mpi.h>\nint main(void){return 0;}\n' | $(MPICC) -x c -E - >/dev/null 2>&1 && echo yes)
ifeq ($(HAVE_MPI),yes)
LIBAXRT_MPI := $(B)/lib/libaxrt_mpi.so $(B)/include/axrt_mpi.h
else
$(info axc: mpicc/mpi.h not found: libaxrt_mpi (mpirun -np N axc train) left out; install libopenmpi-dev for it)
LIBAXRT_MPI :=
endif

.PHONY: all deps demo test test-unit install firmware size mem-report clean layers check-size
all: $(AXC) $(LIBAXRT) $(B)/include/axrt.h $(LIBAXRT_GPU) $(B)/include/axrt_gpu.h $(LIBAXRT_MPI)

# Fails when an #include points upward between the compiler's layers
# (scripts/layers.sh has the table), or when files inside a folder form a
# circle (scripts/layers_cycles.py, from the objects); part of make test.
layers: $(LIB_OBJ) $(RT_OBJ)
	@AXC_BUILD=$(B) sh scripts/layers.sh

# Fails when a source file passes 1,500 lines or a function 60, other than
# the known exceptions in scripts/size_exceptions.txt, which may only shrink
# (scripts/check_size.py; the layers suite of make test runs it too).
check-size:
	@$(PYTHON) scripts/check_size.py

# Installs missing Debian packages (idempotent; does nothing when all are present).
deps:
	@sh scripts/deps.sh

$(B)/gen/axc.tab.c $(B)/gen/axc.tab.h &: grammar/axc.y
	@mkdir -p $(B)/gen
	bison -Wall -Werror -d -o $(B)/gen/axc.tab.c $<

# The lexer includes the parser header, hence the order.
$(B)/gen/axc.lex.c $(B)/gen/axc.lex.h &: grammar/axc.l $(B)/gen/axc.tab.h
	@mkdir -p $(B)/gen
	flex --header-file=$(B)/gen/axc.lex.h -o $(B)/gen/axc.lex.c $<

$(B)/gen/onnx.pb-c.c $(B)/gen/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(B)/gen
	cp $< $(B)/gen/onnx.proto
	cd $(B)/gen && $(PROTOC_C) --c_out=. onnx.proto

$(B)/obj/gen/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c $(B)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_AXC) -w -c $< -o $@

ifeq ($(HAVE_ONNX),y)
$(patsubst %.c,$(B)/obj/%.o,$(wildcard frontend/onnx_*.c)): $(B)/gen/onnx.pb-c.h
endif

$(B)/gen/tflite_schema_generated.h: frontend/tflite_schema.fbs
	@mkdir -p $(B)/gen
	$(FLATC) --cpp -o $(B)/gen $<

$(B)/obj/frontend/tflite_reader.o: frontend/tflite_reader.cpp frontend/tflite_reader.h $(B)/gen/tflite_schema_generated.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -fno-exceptions $(SAN) -Ifrontend -I$(B)/gen -c $< -o $@

$(B)/obj/gen/%.o: $(B)/gen/%.c $(GRAMMAR_H) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_AXC) -Wno-shadow -Wno-sign-compare -c $< -o $@

$(B)/obj/runtime/%.o: runtime/%.c $(wildcard runtime/*.h runtime/*.inc)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_RT) -c $< -o $@
# The optimizer loops vectorise only when sqrt need not set errno (axrt_adam.c, axrt_optim.c).
$(B)/obj/runtime/axrt_adam.o $(B)/obj/runtime/axrt_optim.o: CFLAGS_RT += -fno-math-errno

$(B)/obj/%.o: %.c $(HEADERS) $(GRAMMAR_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_AXC) -c $< -o $@

$(B)/obj/codegen/cg_llvm%.o: CFLAGS_AXC += $(LLVM_INC)

$(B)/obj/codegen/cg_llvm_tm.o: codegen/cg_llvm_tm.cpp codegen/cg_llvm_tm.h
	@mkdir -p $(dir $@)
	$(CXX) $(shell $(LLVM_CONFIG) --cxxflags) -O2 -g -Wall -Wextra -Wno-unused-parameter $(SAN) -c $< -o $@

$(B)/lib/libaxcc.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The compiler shares the runtime's dtype table and scratch-size helpers.
$(AXC): $(B)/obj/compiler/main.o $(B)/lib/libaxcc.a $(LIBAXRT) $(LIBAXRT_GPU)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(AXC_LINK) -o $@ $(B)/obj/compiler/main.o $(B)/lib/libaxcc.a $(RT_LINK) $(LIBAXRT_GPU) $(LDLIBS_AXC)

$(B)/obj/runtime/gpu/axrt_gpu.o: runtime/gpu/axrt_gpu.c runtime/gpu/axrt_gpu.h runtime/axrt.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_RT) -Iruntime/gpu -c $< -o $@

$(LIBAXRT_GPU): $(B)/obj/runtime/gpu/axrt_gpu.o
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/include/axrt_gpu.h: runtime/gpu/axrt_gpu.h
	@mkdir -p $(dir $@)
	cp $< $@

$(B)/lib/libaxrt_mpi.so: runtime/mpi/axrt_mpi.c runtime/mpi/axrt_mpi.h runtime/axrt.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_RT) -Werror -Iruntime/mpi -shared -o $@ $<

$(B)/include/axrt_mpi.h: runtime/mpi/axrt_mpi.h
	@mkdir -p $(dir $@)
	cp $< $@

$(LIBAXRT): $(RT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/include/axrt.h: runtime/axrt.h
	@mkdir -p $(dir $@)
	cp $< $@

include tests/tests.mk
include tests/fuzz/fuzz.mk

demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all
	@sh examples/demo.sh $(B)

# docs/firmware.md: the compiler, the runtime library, header and pkg-config
# file, axc.mk and the runtime core's sources (for cross builds via axc.mk);
# also the PyTorch helper python/axc_torch.py (share/axc/python/) and the
# Cortex-M4 example with its default model (share/axc/examples/firmware, mlp.ax).
RT_SHARE := $(wildcard runtime/*.c runtime/*.h runtime/*.inc)
FW_SHARE := $(addprefix examples/firmware/,Makefile main.c startup.c mps2_an386.ld map_sizes.awk)
install: all
	install -d $(PREFIX)/bin $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PREFIX)/share/axc/runtime \
	    $(PREFIX)/share/axc/python $(PREFIX)/share/axc/examples/firmware
	install -m 755 $(AXC) $(PREFIX)/bin/axc
	install -m 644 runtime/axrt.h $(PREFIX)/include/axrt.h
	install -m 644 $(LIBAXRT) $(PREFIX)/lib/libaxrt.a
	install -m 644 runtime/gpu/axrt_gpu.h $(PREFIX)/include/axrt_gpu.h
	install -m 644 $(LIBAXRT_GPU) $(PREFIX)/lib/libaxrt_gpu.a
	install -m 644 $(RT_SHARE) $(PREFIX)/share/axc/runtime/
	install -m 644 runtime/axc.mk $(PREFIX)/share/axc/axc.mk
	install -m 644 python/axc_torch.py $(PREFIX)/share/axc/python/axc_torch.py
	install -m 644 $(FW_SHARE) $(PREFIX)/share/axc/examples/firmware/
	install -m 644 examples/mlp.ax $(PREFIX)/share/axc/examples/mlp.ax
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|g' runtime/axrt.pc.in > $(PREFIX)/lib/pkgconfig/axrt.pc
ifeq ($(HAVE_MPI),yes)
	install -m 644 runtime/mpi/axrt_mpi.h $(PREFIX)/include/axrt_mpi.h
	install -m 755 $(B)/lib/libaxrt_mpi.so $(PREFIX)/lib/libaxrt_mpi.so
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|g' -e 's|@MPI_CFLAGS@|$(shell $(MPICC) --showme:compile 2>/dev/null)|' \
	    -e 's|@MPI_LIBS@|$(shell $(MPICC) --showme:link 2>/dev/null)|' runtime/mpi/axrt_mpi.pc.in > $(PREFIX)/lib/pkgconfig/axrt_mpi.pc
endif

# The Cortex-M4 example (examples/firmware), built against a staged install in
# $(B)/stage: `make firmware` runs it under QEMU, `make size` prints its sizes.
FW_STAGE := $(abspath $(B))/stage
firmware size: all
	@$(MAKE) --no-print-directory install PREFIX=$(FW_STAGE) >/dev/null
	@mkdir -p $(B)/firmware
	@$(MAKE) --no-print-directory -C $(B)/firmware -f $(CURDIR)/examples/firmware/Makefile \
	    AXC_PREFIX=$(FW_STAGE) AXC_SEED=1 $(if $(filter firmware,$@),run,size)

# MLPerf Tiny's four reference models (examples/mlperf_tiny), float32 and int8,
# on the same board: trained briefly (synthetic data), run under QEMU and
# checked against the host, then the table of docs/firmware.md#mlperf-tiny
# (flash, arena, stack, instructions per inference) printed.
.PHONY: mlperf-tiny
mlperf-tiny: all
	@$(MAKE) --no-print-directory install PREFIX=$(FW_STAGE) >/dev/null
	@mkdir -p $(B)/mlperf_tiny
	@$(MAKE) --no-print-directory -C $(B)/mlperf_tiny -f $(CURDIR)/examples/mlperf_tiny/Makefile \
	    AXC_PREFIX=$(FW_STAGE) PYTHON=$(PYTHON) table

clean:
	rm -rf $(B)

# The benchmark (bench/bench.py; docs/performance.md): rows R1-R7
# (examples/r1..r7) and the whole models M1-M5 (bench/gen_models.py), compiled
# by axc as installed by `make install` into $(BENCH_STAGE) and built the way
# docs/cli.md tells users (pkg-config, -O3), timed against PyTorch, C +
# OpenBLAS, oneDNN and, from a bench-local venv (bench/venv.sh), ONNX Runtime,
# OpenVINO and XLA, interleaved, at 1 and 2 threads.  BENCH_FLAGS passes
# options to bench/bench.py, e.g. `--rounds 5`, `--rows R1,M2`, `--threads 1`,
# or `--record` to rewrite bench/last-run.md and bench/last-run.svg.
BENCH_STAGE := $(abspath $(B))/bench/stage
.PHONY: bench
bench:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory install PREFIX=$(BENCH_STAGE) >/dev/null
	@sh bench/venv.sh $(B)/bench/venv
	@$(PYTHON) bench/bench.py --build-dir $(B)/bench --stage $(BENCH_STAGE) \
	    --venv-python $(B)/bench/venv/bin/python --cc "$(CC)" $(BENCH_FLAGS)

# libaxrt's GEMM-like kernels on the shapes of rows R2, R3, R4 and ResNet-18,
# one thread, as a share of the measured FMA peak (bench/kernel_rates.c: the
# best wall time of each); AXRT_ISA=avx2 rates the AVX2 kernels
# against AVX2's peak on any machine.  BENCH_FLAGS: seconds a shape (1), then
# optionally a name filter, e.g. BENCH_FLAGS='1 stem'.
.PHONY: bench-kernels
bench-kernels: $(B)/lib/libaxrt.a
	@mkdir -p $(B)/bench
	$(CC) -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -Iruntime -Ibench bench/kernel_rates.c bench/limits.c \
	    $(B)/lib/libaxrt.a -lm -lpthread -o $(B)/bench/kernel_rates
	$(B)/bench/kernel_rates $(BENCH_FLAGS)

# The grouped-conv models (RegNet-Y-400MF, ResNeXt-50 32x4d) on one thread:
# axc against PyTorch eager and ONNX Runtime (bench/grouped_models.py).
# BENCH_FLAGS: e.g. `--rounds 5 --runs 20`.
.PHONY: bench-grouped
bench-grouped: all
	@sh bench/venv.sh $(B)/bench/venv
	@$(PYTHON) bench/grouped_models.py --axc $(B)/bin/axc --venv-python $(B)/bench/venv/bin/python \
	    --dir $(B)/bench/grouped $(BENCH_FLAGS)

# Attention with and without the [lq, lk] scores (MiniLM and BERT shapes,
# seq 128, 512, 2048) and R6's softmax against a copy of its bytes, one
# thread (bench/attention_rates.c).  BENCH_FLAGS: seconds a shape (1).
.PHONY: bench-attention
bench-attention: $(B)/lib/libaxrt.a
	@mkdir -p $(B)/bench
	$(CC) -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -Iruntime bench/attention_rates.c \
	    $(B)/lib/libaxrt.a -lm -lpthread -o $(B)/bench/attention_rates
	$(B)/bench/attention_rates $(BENCH_FLAGS)

# Training steps per second of axc --train's MLP step against PyTorch eager
# (bench/train.py), built against the installed library like `make bench`.
.PHONY: bench-train
bench-train:
	@$(MAKE) --no-print-directory install PREFIX=$(BENCH_STAGE) >/dev/null
	@$(PYTHON) bench/train.py --stage $(BENCH_STAGE) --cc "$(CC)" $(BENCH_FLAGS)

# Data-parallel training steps per second, 1 and 2 ranks on one machine,
# MLP and CNN, with the scaling ratio and the share of the exchange the
# buckets hide (bench/ddp.py; docs/distributed.md).  BENCH_FLAGS: e.g. `--steps 500`.
.PHONY: bench-ddp
bench-ddp: all
	@$(PYTHON) bench/ddp.py --build $(B) $(BENCH_FLAGS)

# The GPU proof (tests/cuda/gpu_check.sh): every example and op-corpus model
# on the device against the C target (Float32, Float16, BFloat16, the BF16
# mma path), the kernel cache, a forward that allocates nothing, the GPU
# bench rows; one report, $(GPU_REPORT).  Without a GPU: SKIP, exit 0.
# gpu-bundle: the same cases generated here into $(B)/gpu-bundle, for a
# device machine that cannot build axc (there: bash DIR/gpu_check.sh --run DIR).
GPU_REPORT ?= $(B)/gpu-check.md
.PHONY: gpu-check gpu-bundle
gpu-check: all
	@bash tests/cuda/gpu_check.sh $(B) $(GPU_REPORT)
gpu-bundle: all
	@bash tests/cuda/gpu_check.sh --bundle $(B)/gpu-bundle $(B)

# Float16/BFloat16 against Float32 on rows R2 and R3, one thread
# (bench/precision.py; docs/precision.md).  BENCH_FLAGS: e.g. `--runs 50`.
.PHONY: bench-precision
bench-precision: all
	@$(PYTHON) bench/precision.py --axc $(B)/bin/axc $(BENCH_FLAGS)

# docs/performance.md's memory-plan and -O0/-O2 timing tables (scripts/mem_report.sh).
# Then the --ram trade-off table and its plot (scripts/remat_report.py;
# docs/performance.md shows docs/remat.svg, a copy of $(B)/remat.svg).
REMAT_MODELS = examples/resmlp50.ax examples/mlp.ax examples/lenet5.ax examples/gpt_block.ax \
	examples/mobilenet_v2.ax tests/ir/cases/conv_tile.ax tests/ir/cases/unet_remat.ax tests/ir/cases/skip_remat.ax
mem-report: all
	bash scripts/mem_report.sh $(B)/bin/axc --bench 20
	$(PYTHON) scripts/remat_report.py $(B)/bin/axc $(B)/remat.svg mobilenet_v2 $(REMAT_MODELS) --train
