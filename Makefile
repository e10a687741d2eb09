# SPDX-License-Identifier: GPL-2.0
# tailtrace build: BPF objects -> skeletons -> one `tailtrace` binary, plus the tools and
# tests, all out of tree in $(BUILD). `make V=1` shows the commands.

BUILD ?= build
prefix ?= /usr/local
DESTDIR ?=
sbindir ?= $(prefix)/sbin
mandir ?= $(prefix)/share/man
# the service reads its options from /etc whatever the prefix (the unit and the man page
# name that path)
sysconfdir ?= /etc
systemdunitdir ?= $(prefix)/lib/systemd/system
bashcompdir ?= $(prefix)/share/bash-completion/completions
datadir ?= $(prefix)/share/tailtrace
CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

ifeq ($(V),1)
Q =
else
Q = @
endif

CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser -I$(BUILD)
LDLIBS := -lbpf -lelf -llzma -lz -lpthread -lm
BPF_CFLAGS := -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf

BPF_SRCS := $(wildcard bpf/*.bpf.c)
# tailtrace.bpf.c is also built without kfuncs, for kernels before 6.2 (the collector picks
# one at run time: docs/kernel-support.md)
COMPAT_OBJS := $(BUILD)/tailtrace_compat.bpf.o
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS)) $(COMPAT_OBJS)
SKELS := $(patsubst %.bpf.o,%.skel.h,$(BPF_OBJS))
# user/ has one folder per pipeline step (docs/design.md): lib, core, collect, attr,
# record, export, rdma, cmd. Every module except cmd/main.c goes into a library: unit
# tests link against it and the linker takes only the modules a test needs
USER_HDRS := $(wildcard user/*/*.h)
LIB_SRCS := $(filter-out user/cmd/main.c,$(wildcard user/*/*.c))
LIB_OBJS := $(patsubst user/%.c,$(BUILD)/user/%.o,$(LIB_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
# root tests that drive BPF programs directly (BPF_PROG_TEST_RUN); they print TAP lines
BPFTEST_SRCS := $(wildcard tests/bpf/test_*.c)
BPFTEST_BINS := $(patsubst tests/bpf/%.c,$(BUILD)/tests/bpf/%,$(BPFTEST_SRCS))
LOADGEN_SRCS := $(wildcard tools/loadgen/*.c)
TOOL_BINS := $(if $(LOADGEN_SRCS),$(BUILD)/loadgen)

# tools that need more than one rule bring their own fragment (e.g. tools/rdma/rdma.mk);
# a fragment appends its outputs to TOOL_BINS
-include $(wildcard tools/*/*.mk)

# keep the BPF objects and skeletons: they are inputs of every user object
.SECONDARY: $(BPF_OBJS) $(SKELS)
.DELETE_ON_ERROR:
.PHONY: all deps demo test unit install clean format lint deb-check bench soak fuzz judge judge-rxe man deb image

all: $(BUILD)/tailtrace $(TOOL_BINS) $(UNIT_BINS) $(BPFTEST_BINS)

deps:
	$(Q)tools/deps.sh

$(BUILD) $(BUILD)/tests/unit $(BUILD)/tests/bpf:
	$(Q)mkdir -p $@

# vmlinux.h comes from the running kernel's BTF: CO-RE relocates field offsets at load
# time, so the header only has to name types, not match the target kernel exactly.
$(BUILD)/vmlinux.h: | $(BUILD)
	@echo "  GEN      $@"
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h $(wildcard bpf/*.h) | $(BUILD)
	@echo "  BPF      $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%_compat.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h $(wildcard bpf/*.h) | $(BUILD)
	@echo "  BPF      $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -DTT_NO_KFUNCS -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	@echo "  SKEL     $@"
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

$(BUILD)/user/%.o: user/%.c $(USER_HDRS) $(wildcard bpf/*.h) $(SKELS)
	@echo "  CC       $@"
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) -c $< -o $@

# what `tailtrace --version` prints, in a header rewritten only when the commit (or the
# tree's dirtiness) changes: main.o follows the commit, and nothing else is rebuilt for it
$(BUILD)/version.h: FORCE | $(BUILD)
	$(Q)v='#define TT_VERSION "$(VERSION)"'; \
	[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
$(BUILD)/user/cmd/main.o: $(BUILD)/version.h
FORCE:

$(BUILD)/libtt.a: $(LIB_OBJS)
	@echo "  AR       $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/tailtrace: $(BUILD)/user/cmd/main.o $(BUILD)/libtt.a
	@echo "  LINK     $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -rdynamic $^ $(LDLIBS) -o $@

$(BUILD)/loadgen: $(LOADGEN_SRCS) $(wildcard tools/loadgen/*.h) | $(BUILD)
	@echo "  CC       $@"
	$(Q)$(CC) $(CFLAGS) -Itools/loadgen $(LOADGEN_SRCS) -lpthread -lm -o $@

$(BUILD)/tests/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(BUILD)/libtt.a | $(BUILD)/tests/unit
	@echo "  TEST     $@"
	$(Q)$(CC) $(CFLAGS) $< $(BUILD)/libtt.a -lcmocka $(LDLIBS) -o $@

$(BUILD)/tests/bpf/%: tests/bpf/%.c $(SKELS) $(BUILD)/libtt.a | $(BUILD)/tests/bpf
	@echo "  TEST     $@"
	$(Q)$(CC) $(CFLAGS) $< $(BUILD)/libtt.a $(LDLIBS) -o $@

demo: deps all
	$(Q)tools/demo.sh

test: deps all
	$(Q)tests/run.sh

unit: all
	$(Q)TT_ONLY=unit tests/run.sh

# bounded fuzzing of the record reader (FUZZ_SECONDS, default 60); crashes are kept in
# tests/fuzz/corpus-regress and replayed by the unit tests
fuzz: deps
	$(Q)tools/fuzz.sh

# overhead benchmark, side by side with and without tailtrace (docs/performance.md)
bench: deps all
	$(Q)tools/bench/run

# the judgement of explain: every scenario (loadgen: unary/stream; nginx + h2load:
# pingpong/pipelined) x IPv4/IPv6, 10 runs each (docs/attribution-results.md), then the
# token streams (SSE, gRPC over h2c, a grpcio client), 10 runs, then tailtrace rdma on
# soft-RoCE in a qemu guest (judge-rxe)
judge: deps all
	$(Q)tools/judge-explain.sh
	$(Q)tools/judge-streams.sh
	$(Q)tools/judge-rxe.sh

# tailtrace rdma on soft-RoCE in a qemu guest (Debian's generic kernel, perftest) against
# perftest's own figures (docs/rdma.md, "Soft-RoCE in a guest"); the last part of `make judge`
judge-rxe: deps all
	$(Q)tools/judge-rxe.sh

# connection and process churn against tailtrace (SOAK_SECONDS, default 600): RSS and map
# occupancy must stay flat (docs/reliability.md)
soak: deps all
	$(Q)tools/soak.sh

# the man pages in man/ are written from the --help texts; after changing one, run
# `make man` and commit both (tests/ns/test_dist.sh fails while they differ)
man: $(BUILD)/tailtrace
	$(Q)tools/gen-man.py $(BUILD)/tailtrace man

# the binary, man pages, bash completion, the record service and its options file (an
# existing options file is left as it is), the Prometheus rules and Grafana dashboard, the
# seccomp profile for containers
install: $(BUILD)/tailtrace
	install -D -m 0755 $(BUILD)/tailtrace $(DESTDIR)$(sbindir)/tailtrace
	install -d $(DESTDIR)$(mandir)/man8
	install -m 0644 man/*.8 $(DESTDIR)$(mandir)/man8/
	install -D -m 0644 dist/bash-completion/tailtrace $(DESTDIR)$(bashcompdir)/tailtrace
	install -d $(DESTDIR)$(systemdunitdir)
	sed -e 's|@SBINDIR@|$(sbindir)|g' -e 's|@SYSCONFDIR@|$(sysconfdir)|g' \
		dist/systemd/tailtrace-record.service > $(DESTDIR)$(systemdunitdir)/tailtrace-record.service
	chmod 0644 $(DESTDIR)$(systemdunitdir)/tailtrace-record.service
	[ -e $(DESTDIR)$(sysconfdir)/tailtrace/record.conf ] || \
		install -D -m 0644 dist/systemd/record.conf $(DESTDIR)$(sysconfdir)/tailtrace/record.conf
	install -D -m 0644 dist/prometheus/tailtrace.rules.yml \
		$(DESTDIR)$(datadir)/prometheus/tailtrace.rules.yml
	install -D -m 0644 dist/grafana/tailtrace-dashboard.json \
		$(DESTDIR)$(datadir)/grafana/tailtrace-dashboard.json
	install -D -m 0644 dist/seccomp/tailtrace.json $(DESTDIR)$(datadir)/seccomp/tailtrace.json

# a Debian package with debhelper (debian/): build/tailtrace_VERSION_ARCH.deb
deb:
	$(Q)rm -rf debian/out && debian/rules clean && debian/rules binary
	$(Q)mkdir -p $(BUILD) && mv debian/out/*.deb $(BUILD)/ && ls $(BUILD)/*.deb

# the OCI image (dist/container/Containerfile, docs/deploy.md): this build's binary and the
# libraries it loads, FROM scratch, with podman and offline; tagged IMAGE and IMAGE_LATEST
IMAGE ?= localhost/tailtrace:$(VERSION)
IMAGE_LATEST ?= localhost/tailtrace:latest
image: $(BUILD)/tailtrace
	$(Q)tools/image.sh $(BUILD)/tailtrace $(IMAGE) $(IMAGE_LATEST)

# builds the package, runs lintian, installs it, runs its service's command and purges it
# on this machine (root, about a minute; also part of `make test`)
deb-check:
	$(Q)tests/ns/test_deb.sh

# every C file as .clang-format writes it, and clang's warnings on user/ (run by `make test`)
lint: all
	$(Q)tools/lint.sh

format:
	clang-format -i bpf/*.c bpf/*.h user/*/*.c user/*/*.h tests/unit/*.c tests/unit/*.h \
		tests/bpf/*.c tests/fuzz/*.c tests/ns/*.c tools/*/*.c tools/*/*.h

clean:
	rm -rf $(BUILD)
