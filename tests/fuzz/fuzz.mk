# Fuzzing rules, included by the top-level Makefile.
#
# Every compiler source, the runtime and one harness per input format are
# built with clang under libFuzzer + ASan + UBSan into $(B)/fuzz/:
#   make fuzz               runs each harness for FUZZ_TIME seconds (default 60)
#   make fuzz-ci            the same for 30 s each (what CI runs)
# A harness that finds a crash, a leak, undefined behaviour or an internal
# error exits non-zero and leaves the input as $(B)/fuzz/crash-HARNESS-*;
# the make target then fails.  New interesting inputs accumulate in
# $(B)/fuzz/corpus_HARNESS/ (the seeds in tests/fuzz/corpus_HARNESS/ stay
# untouched).

FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_DIR   := $(B)/fuzz
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link -D_GNU_SOURCE \
               $(AXC_DIRS:%=-I%) -Iruntime -Iruntime/gpu -I$(B)/gen $(if $(HAVE_ONNX),-DAXC_ONNX) \
               $(if $(HAVE_TFLITE),-DAXC_TFLITE)
FUZZ_CXX   ?= clang++
FUZZ_HARNESSES := frontend safetensors npy train_data $(if $(HAVE_ONNX),onnx) $(if $(HAVE_TFLITE),tflite)
FUZZ_SRC   := $(filter-out compiler/main.c,$(AXC_SRC)) $(RT_SRC) $(wildcard runtime/gpu/*.c)
FUZZ_OBJ   := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(FUZZ_SRC)) \
              $(FUZZ_DIR)/obj/gen/axc.tab.o $(FUZZ_DIR)/obj/gen/axc.lex.o \
              $(if $(HAVE_ONNX),$(FUZZ_DIR)/obj/gen/onnx.pb-c.o) \
              $(if $(HAVE_TFLITE),$(FUZZ_DIR)/obj/frontend/tflite_reader.o)
FUZZ_BIN   := $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_HARNESSES))

.PHONY: fuzz fuzz-ci fuzz-build
.SECONDARY: $(FUZZ_OBJ)

ifeq ($(HAVE_ONNX),y)
$(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(wildcard frontend/onnx_*.c)): $(B)/gen/onnx.pb-c.h
endif

# the TFLite reader: flatc's generated C++ and its Verifier, instrumented alike
$(FUZZ_DIR)/obj/frontend/tflite_reader.o: frontend/tflite_reader.cpp frontend/tflite_reader.h $(B)/gen/tflite_schema_generated.h
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) -std=c++17 $(FUZZ_CFLAGS) -fno-exceptions -c $< -o $@

$(FUZZ_DIR)/obj/gen/%.o: $(B)/gen/%.c $(GRAMMAR_H) $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 $(FUZZ_CFLAGS) -w -c $< -o $@

$(FUZZ_DIR)/obj/runtime/%.o: runtime/%.c $(wildcard runtime/*.h runtime/*.inc)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c99 $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/obj/%.o: %.c $(HEADERS) $(GRAMMAR_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 $(FUZZ_CFLAGS) $(WARN) -c $< -o $@

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) -std=c11 $(FUZZ_CFLAGS) $(WARN) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LDLIBS_AXC)

fuzz-build: $(FUZZ_BIN)

# One run per harness; -dict only where a dictionary exists.  The shell
# loop stops at the first harness that reports a finding.
fuzz: fuzz-build
	@set -e; for h in $(FUZZ_HARNESSES); do \
	    mkdir -p $(FUZZ_DIR)/corpus_$$h; \
	    dict=; [ -f tests/fuzz/$$h.dict ] && dict=-dict=tests/fuzz/$$h.dict; \
	    echo "fuzz_$$h: $(FUZZ_TIME) s"; \
	    $(FUZZ_DIR)/fuzz_$$h -max_total_time=$(FUZZ_TIME) -max_len=4096 -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_DIR)/crash-$$h- $$dict \
	        $(FUZZ_DIR)/corpus_$$h tests/fuzz/corpus_$$h 2>$(FUZZ_DIR)/fuzz_$$h.log \
	    || { tail -60 $(FUZZ_DIR)/fuzz_$$h.log; echo "fuzz_$$h: FINDING (log $(FUZZ_DIR)/fuzz_$$h.log)"; exit 1; }; \
	    grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' $(FUZZ_DIR)/fuzz_$$h.log | sed 's/^/  /'; \
	done

fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZ_TIME=30

# The test suites with axc, the unit tests and libaxrt built under ASan +
# UBSan in build-asan/.  `axc run` builds each model's generated code with
# $CC and dlopens it into the instrumented axc: CC must carry the same
# -fsanitize flags (the .so then resolves the sanitizer runtimes from the
# axc process; gcc's are shared libraries, so no preload is needed).  The
# install suite is left out: it links the instrumented libaxrt.a with a
# plain `cc`, which cannot work and says nothing about memory safety.
# AXC_TEST_SANITIZED=1 tells the suites to skip the steps in which only
# uninstrumented tools run on inputs make test gives them alike (the compile
# suite's gcc/clang/g++ compiles, test_codegen's clang and g++ ones, the
# firmware suite's cross-compiles of the runtime and every example, the
# train suite's Cortex-M4 builds and QEMU runs): make test, which .ci/run
# runs next, has them.
ASAN_B   := build-asan
ASAN_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer
.PHONY: test-asan
test-asan:
	@$(MAKE) --no-print-directory B=$(ASAN_B) SAN="$(ASAN_SAN)" all test-unit
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 AXC_TEST_SANITIZED=1 \
	    CC="cc $(ASAN_SAN)" bash tests/run.sh $(ASAN_B) unit cli ir torch compile firmware errors train
