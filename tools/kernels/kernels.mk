# SPDX-License-Identifier: GPL-2.0
# Older kernels in qemu guests (tools/kernels): `make kernels` fetches Debian's cloud kernels
# into the cache, `make kernels-check` runs the harness's own check (guest-check.sh) in each.

# fragments are read before the Makefile's `all:` rule: keep `all` the default goal
ifeq ($(.DEFAULT_GOAL),)
.DEFAULT_GOAL := all
endif

GUEST_KERNELS ?= 5.10 6.1 6.12 newest

.PHONY: kernels kernels-check test-kernels
kernels: deps
	$(Q)tools/kernels/fetch.sh $(GUEST_KERNELS)

kernels-check: deps $(BUILD)/tailtrace $(BUILD)/loadgen
	$(Q)for k in $(GUEST_KERNELS); do \
		TT_BUILD=$(abspath $(BUILD)) tools/kernels/run-in-guest $$k tools/kernels/guest-check.sh || exit 1; \
	done

# the stage and explain truth tests on every kernel of the matrix, in both feed modes
# (tests/kernels/test_matrix.sh; `make test` runs its smoke)
test-kernels: deps all
	$(Q)TT_TIMEOUT=2700 KERNEL_MATRIX=full TT_ONLY=kernels/ tests/run.sh
