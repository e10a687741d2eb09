# SPDX-License-Identifier: GPL-2.0
# Older kernels in qemu guests (tools/kernels): `make kernels` fetches Debian's cloud kernels
# into the cache, `make kernels-check` runs the harness's own check (guest-check.sh) in each.

# fragments are read before the Makefile's `all:` rule: keep `all` the default goal
ifeq ($(.DEFAULT_GOAL),)
.DEFAULT_GOAL := all
endif

GUEST_KERNELS ?= 5.10 6.1 6.12 newest

.PHONY: kernels kernels-check
kernels: deps
	$(Q)tools/kernels/fetch.sh $(GUEST_KERNELS)

kernels-check: deps $(BUILD)/tailtrace $(BUILD)/loadgen
	$(Q)for k in $(GUEST_KERNELS); do \
		TT_BUILD=$(abspath $(BUILD)) tools/kernels/run-in-guest $$k tools/kernels/guest-check.sh || exit 1; \
	done
