# SPDX-License-Identifier: GPL-2.0
# RDMA testbed: the stand-in verbs provider (built with .symtab for the symbol and offset
# tests; stripped like Debian's libmlx5 for the ops-table and live-context tests, with its
# debug file as a -dbgsym package ships it, and stripped with MiniDebugInfo as Fedora
# ships it) and the test application, which links the stand-in in place of libibverbs.

# fragments are read before the Makefile's `all:` rule: keep `all` the default goal
ifeq ($(.DEFAULT_GOAL),)
.DEFAULT_GOAL := all
endif

RDMA_TOOL_DIR := $(BUILD)/rdma
RDMA_SI_FULL := $(RDMA_TOOL_DIR)/libttstandin.full.so
RDMA_SI := $(RDMA_TOOL_DIR)/libttstandin.so
RDMA_SI_DEBUG := $(RDMA_TOOL_DIR)/libttstandin.debug
RDMA_SI_MINI := $(RDMA_TOOL_DIR)/libttstandin.minidebug.so
RDMA_SI_CET := $(RDMA_TOOL_DIR)/libttstandin.cet.so
RDMA_APP := $(RDMA_TOOL_DIR)/rdma_app
TOOL_BINS += $(RDMA_SI_FULL) $(RDMA_SI) $(RDMA_SI_DEBUG) $(RDMA_SI_MINI) $(RDMA_APP)
# built as Ubuntu and Fedora build their libraries: on x86-64, -fcf-protection begins every
# function with endbr64, which x86 uprobes single-step (lib/uprobe_entry.h)
ifeq ($(shell uname -m),x86_64)
TOOL_BINS += $(RDMA_SI_CET)
endif

$(RDMA_TOOL_DIR):
	$(Q)mkdir -p $@

$(RDMA_SI_FULL): tools/rdma/standin.c tools/rdma/standin.h tools/rdma/standin.map | $(RDMA_TOOL_DIR)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) -Itools/rdma -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=tools/rdma/standin.map -Wl,-soname,libttstandin.so -Wl,--build-id \
		$< -lpthread -o $@

$(RDMA_SI_CET): tools/rdma/standin.c tools/rdma/standin.h tools/rdma/standin.map | $(RDMA_TOOL_DIR)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) -fcf-protection=full -Itools/rdma -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=tools/rdma/standin.map -Wl,-soname,libttstandin.so -Wl,--build-id \
		$< -lpthread -o $@

# strip --strip-all drops .symtab but keeps .dynsym: what a distribution ships
$(RDMA_SI): $(RDMA_SI_FULL)
	@echo "  STRIP    $@"
	$(Q)strip --strip-all -o $@ $<

# the separate debug file a -dbgsym package installs under /usr/lib/debug/.build-id/
$(RDMA_SI_DEBUG): $(RDMA_SI_FULL)
	@echo "  DEBUG    $@"
	$(Q)objcopy --only-keep-debug $< $@

# MiniDebugInfo as gdb's manual and Fedora's find-debuginfo make it: the function symbols
# .dynsym lacks, kept alone in a debug-only copy, xz-compressed into .gnu_debugdata
$(RDMA_SI_MINI): $(RDMA_SI_FULL) $(RDMA_SI)
	@echo "  MINIDBG  $@"
	$(Q)nm -D --defined-only --format=posix $(RDMA_SI) | cut -d' ' -f1 | sort >$@.dyn
	$(Q)nm --defined-only --format=posix $< | awk '$$2 ~ /^[Tt]$$/ {print $$1}' | sort >$@.fn
	$(Q)comm -13 $@.dyn $@.fn >$@.keep
	$(Q)objcopy --only-keep-debug $< $@.mini
	$(Q)objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$@.keep $@.mini
	$(Q)xz -f $@.mini
	$(Q)objcopy --add-section .gnu_debugdata=$@.mini.xz $(RDMA_SI) $@
	$(Q)rm -f $@.dyn $@.fn $@.keep $@.mini.xz

$(RDMA_APP): tools/rdma/rdma_app.c tools/rdma/standin.h $(RDMA_SI) | $(RDMA_TOOL_DIR)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) -Itools/rdma $< -L$(RDMA_TOOL_DIR) -l:libttstandin.so \
		-Wl,-rpath,'$$ORIGIN' -lpthread -o $@

# the hostile verbs user of test_rdma.sh's trust-model checks (docs/security.md)
RDMA_HOSTILE := $(RDMA_TOOL_DIR)/hostile
TOOL_BINS += $(RDMA_HOSTILE)
$(RDMA_HOSTILE): tools/rdma/hostile.c | $(RDMA_TOOL_DIR)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) $< -ldl -o $@
