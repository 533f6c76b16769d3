# axc.mk — make rules for projects that compile axc models (host or firmware).
#
# Installed as PREFIX/share/axc/axc.mk.  A project writes
#
#     include PREFIX/share/axc/axc.mk
#     CPPFLAGS += $(AXRT_CFLAGS)
#     app: main.o mlp.o $(AXRT_OBJS)
#     main.o: mlp.h
#
# and make runs `axc mlp.ax -o mlp.c` (writing mlp.c and mlp.h in one call).
#
# Variables the including project may set (the ?= ones before the include):
#   AXC               the compiler (default: the axc installed beside this file)
#   AXC_FLAGS         options for every model, e.g. --seed=1 or -O3
#   AXC_FLAGS_<stem>  options for one model only (stem: the path without .ax)
#   AXC_WEIGHTS_<stem>  weights file for one model; without it, <stem>.safetensors
#                     is used when it exists (found like the .ax: beside it, or by
#                     the project's vpath).  With no weights file a model that has
#                     parameters is refused (axc --require-weights) unless random
#                     ones were asked for: AXC_SEED=N (axc's deterministic --seed=N
#                     init), or --seed in its flags
#   AXC_SEED          random parameters from this seed for models without weights
#   AXC_SHAPE_<stem>  an ONNX model's input shapes, e.g. input=1x3x224x224 (several
#                     separated by spaces; each becomes --shape NAME=DIMS)
#   AXC_DEPDIR        where axc's dependency files go (default .axc-deps)
#   AXRT_OBJDIR       where the runtime objects go (default axrt-obj)
#   AXRT_OPTFLAGS     optimisation flags added after $(CFLAGS) for the runtime
#                     objects only (default -O2 unless CFLAGS already has -O2,
#                     -O3, -Ofast, -Os or -Oz): the runtime is fast even when
#                     the project builds at -O0 or sets no CFLAGS at all
# Provided: AXRT_CFLAGS (-I for axrt.h), AXRT_OBJS (the runtime core, compiled
# from the installed sources with the project's $(CC) and $(CFLAGS), so a
# cross build needs nothing prebuilt for the host).
#
# Including this file does not change the project's default goal: a plain
# `make` still builds the project's first target, even when the include comes
# first (the dependency files' rules are read with the goal saved).
#
# Rebuilds are exact: every model's dependency file (axc -MD) lists the .ax
# file and its weights, so touching either regenerates that model only.  A
# weights file given by AXC_WEIGHTS_<stem> becomes a prerequisite through the
# dependency file, i.e. from the second build on; if that file is itself made
# by a rule, also write `mlp.c mlp.h: weights.safetensors`.

# Must come before any other include: the prefix is where this file lies.
AXC_HOME := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))../..)
axc_saved_default_goal := $(.DEFAULT_GOAL)

AXC ?= $(AXC_HOME)/bin/axc
AXC_DEPDIR ?= .axc-deps
AXRT_OBJDIR ?= axrt-obj
AXRT_SRCDIR := $(AXC_HOME)/share/axc/runtime
AXRT_CFLAGS := -I$(AXC_HOME)/include
AXRT_OPTFLAGS ?= $(if $(filter -O2 -O3 -Ofast -Os -Oz,$(CFLAGS)),,-O2)
AXRT_OBJS := $(patsubst $(AXRT_SRCDIR)/%.c,$(AXRT_OBJDIR)/%.o,$(wildcard $(AXRT_SRCDIR)/*.c))

# The weights for stem $(1): the per-model variable, else a prerequisite
# named *.safetensors (the first pattern rule below adds <stem>.safetensors),
# else the .safetensors beside the model file $(3) wherever make found it.
axc_weights_for = $(firstword $(AXC_WEIGHTS_$(1)) $(filter %.safetensors,$(2)) \
                      $(wildcard $(basename $(3)).safetensors))

# Whether stem $(1) may get random parameters: AXC_SEED, or --seed in its flags.
axc_random_asked = $(or $(AXC_SEED),$(filter --seed=% --seed,$(AXC_FLAGS) $(AXC_FLAGS_$(1))))

# One dependency file per model, in one directory, so they can be included
# without knowing where the project keeps its models.
axc_depfile_for = $(AXC_DEPDIR)/$(subst /,__,$(subst ../,up__,$(1))).d

# One axc run writes both targets (a multi-target pattern rule is grouped).
# A .ax model with parameters and no weights file fails (--require-weights)
# unless random parameters were asked for: a firmware image must not ship
# them without a word.
define axc_generate
	@mkdir -p $(AXC_DEPDIR)
	$(AXC) $(AXC_FLAGS) $(AXC_FLAGS_$*) $(if $(AXC_SEED),--seed=$(AXC_SEED)) \
	    $(if $(or $(call axc_weights_for,$*,$^,$<),$(call axc_random_asked,$*)),,--require-weights) \
	    $(addprefix --weights=,$(call axc_weights_for,$*,$^,$<)) \
	    -MD -MF $(call axc_depfile_for,$*) -MT '$*.c $*.h' \
	    $< -o $*.c
endef

# An ONNX or TFLite model carries its weights; AXC_SHAPE_<stem> fixes an ONNX
# model's symbolic dimensions.
define axc_generate_onnx
	@mkdir -p $(AXC_DEPDIR)
	$(AXC) $(AXC_FLAGS) $(AXC_FLAGS_$*) $(addprefix --shape ,$(AXC_SHAPE_$*)) \
	    -MD -MF $(call axc_depfile_for,$*) -MT '$*.c $*.h' \
	    $< -o $*.c
endef

# Make takes the first pattern rule whose prerequisites exist or can be made:
# with <stem>.safetensors present it is used (and a prerequisite), else not.
# A new axc regenerates too (when AXC is a path rather than a name on PATH).
%.c %.h: %.ax %.safetensors $(wildcard $(AXC))
	$(axc_generate)

%.c %.h: %.ax $(wildcard $(AXC))
	$(axc_generate)

%.c %.h: %.onnx $(wildcard $(AXC))
	$(axc_generate_onnx)

%.c %.h: %.tflite $(wildcard $(AXC))
	$(axc_generate_onnx)

# Generated sources stay after the build (make would delete them as
# intermediates of %.o: %.c the first time); axc writes them atomically.
.PRECIOUS: %.c %.h

$(AXRT_OBJDIR)/%.o: $(AXRT_SRCDIR)/%.c $(wildcard $(AXRT_SRCDIR)/*.h $(AXRT_SRCDIR)/*.inc)
	@mkdir -p $(AXRT_OBJDIR)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(AXRT_OPTFLAGS) -c $< -o $@

-include $(wildcard $(AXC_DEPDIR)/*.d)

# The dependency files' explicit rules (mlp.c mlp.h: mlp.ax) would otherwise
# become the default goal when this file is included before the first rule.
.DEFAULT_GOAL := $(axc_saved_default_goal)
