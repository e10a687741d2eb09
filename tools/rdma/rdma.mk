# SPDX-License-Identifier: GPL-2.0
# RDMA testbed: the stand-in verbs provider (built twice: with .symtab for the symbol and
# offset tests, and stripped like Debian's libmlx5 for the ops-table test) and the test
# application, which links the stand-in in place of libibverbs.

# fragments are read before the Makefile's `all:` rule: keep `all` the default goal
ifeq ($(.DEFAULT_GOAL),)
.DEFAULT_GOAL := all
endif

RDMA_TOOL_DIR := $(BUILD)/rdma
RDMA_SI_FULL := $(RDMA_TOOL_DIR)/libttstandin.full.so
RDMA_SI := $(RDMA_TOOL_DIR)/libttstandin.so
RDMA_APP := $(RDMA_TOOL_DIR)/rdma_app
TOOL_BINS += $(RDMA_SI_FULL) $(RDMA_SI) $(RDMA_APP)

$(RDMA_TOOL_DIR):
	$(Q)mkdir -p $@

$(RDMA_SI_FULL): tools/rdma/standin.c tools/rdma/standin.h tools/rdma/standin.map | $(RDMA_TOOL_DIR)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) -Itools/rdma -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=tools/rdma/standin.map -Wl,-soname,libttstandin.so \
		$< -lpthread -o $@

# strip --strip-all drops .symtab but keeps .dynsym: what a distribution ships
$(RDMA_SI): $(RDMA_SI_FULL)
	@echo "  STRIP    $@"
	$(Q)strip --strip-all -o $@ $<

$(RDMA_APP): tools/rdma/rdma_app.c tools/rdma/standin.h $(RDMA_SI) | $(RDMA_TOOL_DIR)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) -Itools/rdma $< -L$(RDMA_TOOL_DIR) -l:libttstandin.so \
		-Wl,-rpath,'$$ORIGIN' -lpthread -o $@
