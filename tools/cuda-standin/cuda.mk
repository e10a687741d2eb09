# SPDX-License-Identifier: GPL-2.0
# The libcuda stand-in and its test server (tests/bpf/test_cuda.sh).
CUDA_STANDIN := $(BUILD)/cuda-standin/libcuda.so.1 $(BUILD)/cuda-standin/cudasrv
TOOL_BINS += $(CUDA_STANDIN)

$(BUILD)/cuda-standin/libcuda.so.1: tools/cuda-standin/standin.c
	$(Q)mkdir -p $(dir $@)
	@echo "  CC       $@"
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -fPIC -shared -Wl,-soname,libcuda.so.1 $< -o $@

$(BUILD)/cuda-standin/cudasrv: tools/cuda-standin/cudasrv.c
	$(Q)mkdir -p $(dir $@)
	@echo "  CC       $@"
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror $< -ldl -lpthread -o $@
