# SPDX-License-Identifier: GPL-2.0
# Connection/process churn generator for the reliability tests (tests/ns/test_soak.sh,
# test_loss_accounting.sh, test_lifecycle.sh and tools/soak.sh).

# fragments are read before the Makefile's `all:` rule: keep `all` the default goal
ifeq ($(.DEFAULT_GOAL),)
.DEFAULT_GOAL := all
endif

TOOL_BINS += $(BUILD)/churn

$(BUILD)/churn: tools/churn/churn.c | $(BUILD)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) tools/churn/churn.c -o $@
