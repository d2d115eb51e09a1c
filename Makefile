# ooo — plain GNU make. `make help` lists the targets.
#
# Variables: V=1 (full command lines), BUILD (output dir, default build),
# PREFIX/DESTDIR/SYSCONFDIR (install), CUDA_HOME, CC, CFLAGS, LDFLAGS.

.DELETE_ON_ERROR:
.SUFFIXES:

BUILD      ?= build
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
CUDA_HOME  ?= /usr/local/cuda

CC      ?= cc
FUZZ_CC ?= clang
VERSION := $(shell sed -n 's/^#define OOO_VERSION_STRING "\(.*\)"/\1/p' include/ooo/ooo.h)
GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2)
endif

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wno-unused-parameter -Wformat=2 -Wvla
CFLAGS  ?= -O2 -g
# The build needs no CUDA toolkit: the driver and NVRTC declarations are in
# the tree (daemon/exec/cuda_api.h, nvrtc_api.h); both are dlopen()ed.
BASE_CFLAGS := -std=gnu11 $(WARN) -Iinclude -I$(BUILD)/gen -D_GNU_SOURCE -fPIC \
           -fno-strict-aliasing -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
           -DOOO_SYSCONFDIR='"$(SYSCONFDIR)"' -MMD -MP
ifeq ($(SAN),1)
BASE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -U_FORTIFY_SOURCE
SAN_LDFLAGS := -fsanitize=address,undefined
endif
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SAN_LDFLAGS) $(LDFLAGS) -Wl,-z,relro,-z,now

# Debian libraries linked statically so the binaries run on machines that
# do not have them installed (the GPU machine).
STATIC_LIBS = -Wl,-Bstatic -luring -linih -lnettle -Wl,-Bdynamic
# libbpf and what it needs, for oood (the eBPF telemetry)
BPF_LIBS = -Wl,-Bstatic -lbpf -lelf -lz -Wl,-Bdynamic

OBJ := $(BUILD)/obj

DAEMON_SRCS := daemon/main.c daemon/server.c daemon/server_setup.c daemon/policy/registry.c daemon/policy/policy.c daemon/policy/values.c daemon/policy/cgroup.c daemon/buffers/buffers.c daemon/sessions/dpath.c \
               daemon/log.c daemon/notify.c daemon/peer_cgroup.c daemon/watchdog.c daemon/admin/admin.c daemon/executors/gpu.c daemon/telemetry/telemetry.c daemon/telemetry/ldcache.c daemon/sched/place.c daemon/policy/hangs.c daemon/mps/mps.c daemon/mps/mps_text.c daemon/leases/lease.c daemon/leases/lease_decide.c daemon/policy/admit.c daemon/parts/parts.c daemon/parts/partplan.c \
               daemon/admin/http.c daemon/admin/metrics.c proto/prom.c proto/names.c proto/list_fetch.c \
               daemon/exec/executor.c proto/exec_proto.c daemon/exec/cuda.c daemon/exec/validate.c daemon/exec/memory.c daemon/exec/datapath.c daemon/exec/longwork.c daemon/exec/nvrtc.c \
               daemon/exec/coalesce.c daemon/exec/partition.c daemon/sched/sched.c daemon/sched/fairq.c
PTX_SRCS    := daemon/jit/ptx.c daemon/jit/ptx_util.c daemon/jit/ptx_analyse.c daemon/jit/ptx_print.c
JIT_SRCS    := $(PTX_SRCS) daemon/jit/fuse.c daemon/jit/cache.c daemon/jit/fence.c
JIT_OBJS    := $(JIT_SRCS:%.c=$(OBJ)/%.o)
CLIENT_SRCS := client/libooo.c client/datapath.c client/queues.c client/buffers.c client/modules.c proto/wire.c proto/ring.c proto/fdpass.c client/staging.c
POLICY_OBJS := $(OBJ)/daemon/policy/policy.o $(OBJ)/daemon/policy/values.o $(OBJ)/daemon/policy/cgroup.o $(OBJ)/gen/default_conf.o
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(OBJ)/%.o) $(OBJ)/proto/wire.o $(OBJ)/proto/ring.o $(OBJ)/proto/fdpass.o $(OBJ)/gen/default_conf.o \
               $(OBJ)/gen/copy_ptx.o
CLIENT_OBJS := $(CLIENT_SRCS:%.c=$(OBJ)/%.o)

UNIT_TESTS  := test_wire test_admit test_partplan test_ldcache test_mps test_fence test_place test_hangs test_longwork test_policy test_registry test_cgroup test_ring test_fdpass test_staging test_validate test_nvrtc test_jit test_jit_cache test_sched test_oooctl_sched test_args test_sampler test_http test_k8s
INTEG_TESTS := test_daemon
TEST_BINS   := $(addprefix $(BUILD)/tests/,$(UNIT_TESTS) $(INTEG_TESTS))

BINS := $(BUILD)/oood $(BUILD)/oooctl $(BUILD)/ooo-run $(BUILD)/ooo-bench $(BUILD)/ooo-jit $(BUILD)/ooo-k8s-plugin \
        $(BUILD)/libooo.so $(BUILD)/libooo.a
# helpers of tests/gpu (they need a GPU to do anything; built everywhere)
GPU_TEST_BINS := $(BUILD)/tests/gpu/buf_check $(BUILD)/tests/gpu/dp_check $(BUILD)/tests/gpu/launch_check \
                 $(BUILD)/tests/gpu/green_check $(BUILD)/tests/gpu/bundle_check $(BUILD)/tests/gpu/mps_check \
                 $(BUILD)/tests/gpu/domain_check $(BUILD)/tests/gpu/hostile_check $(BUILD)/tests/gpu/soak_check
GPU_JIT_CHECK := $(BUILD)/tests/gpu/jit_check $(BUILD)/tests/gpu/fence_check
# helpers of the telemetry tests; cuda_calls links against the toolkit's stub
# libcuda and includes its cuda.h, so it is built only where the toolkit is
CUDA_STUBS := $(CUDA_HOME)/lib64/stubs
FAKECUDA := $(BUILD)/tests/fakecuda/libcuda.so.1
FAKENVRTC := $(BUILD)/tests/fakecuda/libnvrtc.so.13
TM_TEST_BINS := $(BUILD)/tests/telemetry/pingpong $(BUILD)/tests/tools/prom_lint \
                $(if $(and $(wildcard $(CUDA_STUBS)/libcuda.so),$(wildcard $(CUDA_HOME)/include/cuda.h)),$(BUILD)/tests/telemetry/cuda_calls)

.PHONY: all run test test-run asan fuzz deps deps-build deps-test deps-fuzz install uninstall clean help
all: $(BINS) $(BUILD)/gen/k8s/deviceplugin.desc $(BUILD)/libooo-sampler.so $(BUILD)/ooo-callcost $(TEST_BINS) $(GPU_TEST_BINS) $(GPU_JIT_CHECK) $(TM_TEST_BINS) \
     $(FAKECUDA) $(FAKENVRTC)

help:
	@echo 'make            build binaries and tests into $(BUILD)/'
	@echo 'make run        install missing Debian packages, build, run oood in the foreground'
	@echo '                (RUN_ARGS="--rundir DIR -c FILE" to pass options)'
	@echo 'make test       install missing Debian packages, build, run the test suite'
	@echo 'make asan       the test suite under AddressSanitizer + UBSan ($(BUILD)/asan)'
	@echo 'make fuzz       libFuzzer targets (clang), each for FUZZ_SECONDS (default 30)'
	@echo 'make deps       install every missing Debian package any target needs (root or sudo)'
	@echo 'make install    PREFIX=$(PREFIX) DESTDIR= SYSCONFDIR=$(SYSCONFDIR)'
	@echo 'make V=1        show full command lines'

# tools/deps.sh installs a set of Debian packages: each target asks for the
# set it needs (build: make run; test: make test, asan; fuzz), make deps for all
deps:
	$(Q)sh tools/deps.sh all
deps-build deps-test deps-fuzz: deps-%:
	$(Q)sh tools/deps.sh $*

# ---- compile ---------------------------------------------------------------
$(OBJ)/%.o: %.c
	$(call msg,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/gen/default_conf.c: daemon/oood.conf tools/embed.sh
	$(call msg,GEN,$@)
	@mkdir -p $(dir $@)
	$(Q)sh tools/embed.sh policy_default_text < $< > $@

# The commit goes into version strings; rewritten only when it changes, so
# a new commit rebuilds just the objects that print it.
$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define OOO_GIT_REV "$(GIT_REV)"' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(OBJ)/daemon/main.o $(OBJ)/daemon/admin/admin.o $(OBJ)/tools/oooctl/main.o $(OBJ)/tools/oooctl/actions.o \
	$(OBJ)/tools/k8s-plugin/main.o $(OBJ)/tools/ooo-run.o $(OBJ)/tools/ooo-jit.o $(OBJ)/tools/ooo-bench.o: $(BUILD)/gen/version.h
.PHONY: FORCE
FORCE:

# The executor's copy kernel (daemon/exec/copy.cu), committed as PTX so that
# no nvcc is needed to build: see copy.cu for how to regenerate it.
$(BUILD)/gen/copy_ptx.c: daemon/exec/copy.ptx tools/embed.sh
	$(call msg,GEN,$@)
	@mkdir -p $(dir $@)
	$(Q)sh tools/embed.sh exec_copy_ptx < $< > $@

$(OBJ)/gen/default_conf.o $(OBJ)/gen/copy_ptx.o: $(OBJ)/gen/%.o: $(BUILD)/gen/%.c
	$(call msg,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

# ---- link ------------------------------------------------------------------
$(BUILD)/oood: $(DAEMON_OBJS) $(BUILD)/libjit.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(STATIC_LIBS) $(BPF_LIBS) -ldl -lpthread

# ---- BPF -------------------------------------------------------------------
# bpf/*.bpf.c -> clang -target bpf -> llvm-strip -g -> bpftool gen skeleton
# -> $(BUILD)/bpf/*.skel.h, included by daemon/telemetry/telemetry.c (the objects are
# embedded in oood). vmlinux.h comes from this kernel's BTF when it has one,
# else from bpf/vmlinux_min.h (CO-RE relocates either at load time).
BPF_CLANG  ?= clang
BPF_STRIP  ?= llvm-strip
BPFTOOL    ?= bpftool
BPF_ARCH   := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
MULTIARCH  := $(shell $(CC) -print-multiarch 2>/dev/null)
BPF_PROGS  := cuda sched
BPF_SKELS  := $(BPF_PROGS:%=$(BUILD)/bpf/%.skel.h)
BTF_VMLINUX ?= /sys/kernel/btf/vmlinux

$(BUILD)/bpf/vmlinux.h: bpf/vmlinux_min.h
	$(call msg,GEN,$@)
	@mkdir -p $(dir $@)
	$(Q)if [ -r $(BTF_VMLINUX) ] && $(BPFTOOL) btf dump file $(BTF_VMLINUX) format c > $@.tmp 2>/dev/null; then \
		mv $@.tmp $@; else rm -f $@.tmp; echo "  note: no kernel BTF: using bpf/vmlinux_min.h" >&2; cp $< $@; fi

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/telemetry.h $(BUILD)/bpf/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
		-I$(BUILD)/bpf -Ibpf $(if $(MULTIARCH),-idirafter /usr/include/$(MULTIARCH)) -c $< -o $@.full
	$(Q)$(BPF_STRIP) -g $@.full -o $@
	@rm -f $@.full

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(OBJ)/daemon/telemetry/telemetry.o: $(BPF_SKELS)
$(OBJ)/daemon/telemetry/telemetry.o: ALL_CFLAGS += -I$(BUILD)/bpf

$(BUILD)/libooo.a: $(CLIENT_OBJS)
	$(call msg,AR,$@)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/libooo.so: $(CLIENT_OBJS) client/libooo.map
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libooo.so.0 -Wl,--version-script=client/libooo.map \
		-o $@ $(CLIENT_OBJS) -lpthread

$(BUILD)/libjit.a: $(JIT_OBJS)
	$(call msg,AR,$@)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/ooo-jit: $(OBJ)/tools/ooo-jit.o $(OBJ)/tools/json.o $(OBJ)/tools/common/args.o $(BUILD)/libjit.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(STATIC_LIBS) -lpthread

$(BUILD)/ooo-run: $(OBJ)/tools/ooo-run.o $(OBJ)/tools/common/args.o $(BUILD)/libooo.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ -lpthread

# oooctl: tools/oooctl/main.c (options, the command table) and a file per group of commands
OOOCTL_OBJS := $(addprefix $(OBJ)/tools/oooctl/,main.o util.o conn.o state.o sched.o sched_calc.o telemetry.o \
                 leases.o actions.o config.o metrics.o cdi.o cdi_spec.o) $(OBJ)/tools/json.o \
                 $(OBJ)/tools/common/args.o $(OBJ)/tools/common/admin_list.o $(OBJ)/proto/list_fetch.o $(OBJ)/proto/names.o $(OBJ)/proto/prom.o
$(BUILD)/oooctl: $(OOOCTL_OBJS) $(POLICY_OBJS) $(BUILD)/libooo.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(STATIC_LIBS) -lpthread

# ooo-k8s-plugin: kubelet's device-plugin API (tools/k8s-plugin/deviceplugin.proto) as gRPC: HTTP/2 from
# libnghttp2, the messages from protobuf-c (protoc-c generates their code, and a descriptor set that
# tests/integration/test_k8s_plugin.sh loads in Python), both linked statically
K8S_GEN := $(BUILD)/gen/k8s
PROTOC_C ?= protoc-c
# the C code is of the messages only: protoc-c would name the C member of the method Register
# "register", a C keyword, and the plugin does its own RPC; so it reads a copy without the services
$(K8S_GEN)/%.pb-c.c $(K8S_GEN)/%.pb-c.h: tools/k8s-plugin/%.proto
	$(call msg,PROTOC,$<)
	@mkdir -p $(K8S_GEN)/msgs
	$(Q)sed '/^service /,/^}/d' $< > $(K8S_GEN)/msgs/$*.proto
	$(Q)$(PROTOC_C) --c_out=$(K8S_GEN) --proto_path=$(K8S_GEN)/msgs $(K8S_GEN)/msgs/$*.proto
$(K8S_GEN)/%.desc: tools/k8s-plugin/%.proto
	$(call msg,PROTOC,$@)
	@mkdir -p $(dir $@)
	$(Q)$(PROTOC_C) --descriptor_set_out=$@ --proto_path=tools/k8s-plugin $<
$(OBJ)/gen/k8s/deviceplugin.pb-c.o: $(K8S_GEN)/deviceplugin.pb-c.c $(K8S_GEN)/deviceplugin.pb-c.h
	$(call msg,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<
$(OBJ)/tools/k8s-plugin/main.o: $(K8S_GEN)/deviceplugin.pb-c.h
$(OBJ)/tools/k8s-plugin/main.o: ALL_CFLAGS += -I$(K8S_GEN)
K8S_OBJS := $(addprefix $(OBJ)/tools/k8s-plugin/,main.o grpc_frame.o slots.o) $(OBJ)/gen/k8s/deviceplugin.pb-c.o \
            $(OBJ)/tools/common/args.o $(OBJ)/tools/common/admin_list.o $(OBJ)/proto/list_fetch.o
K8S_LIBS := -Wl,-Bstatic -lnghttp2 -lprotobuf-c -Wl,-Bdynamic
$(BUILD)/ooo-k8s-plugin: $(K8S_OBJS) $(BUILD)/libooo.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(K8S_LIBS) -lpthread

# ooo-bench: tools/ooo-bench.c (ping) and tools/bench/ (the GPU workloads),
# with the kernels of bench/kernels/ compiled to PTX by nvcc and embedded.
# Without nvcc the PTX is empty and the GPU workloads say so at run time.
BENCH_NVCC    ?= $(CUDA_HOME)/bin/nvcc
BENCH_KERNELS := spin mlp sgemm
BENCH_PTX     := $(BENCH_KERNELS:%=$(BUILD)/gen/bench_%.ptx)
BENCH_PTX_C   := $(BENCH_KERNELS:%=$(BUILD)/gen/bench_%_ptx.c)
BENCH_OBJS    := $(addprefix $(OBJ)/tools/,ooo-bench.o json.o common/args.o) \
                 $(addprefix $(OBJ)/tools/bench/,cli.o driver.o env.o gpu.o hist.o report.o tenant.o util.o workloads.o) \
                 $(OBJ)/daemon/exec/cuda.o $(BENCH_KERNELS:%=$(OBJ)/gen/bench_%_ptx.o)

$(BENCH_PTX): $(BUILD)/gen/bench_%.ptx: bench/kernels/%.cu
	$(call msg,NVCC,$@)
	@mkdir -p $(dir $@)
	$(Q)if [ -x "$(BENCH_NVCC)" ]; then $(BENCH_NVCC) -ptx -arch=sm_90 -o $@ $<; \
	else echo "  warning: $(BENCH_NVCC) not found: ooo-bench gets no GPU kernels" >&2; : > $@; fi
$(BENCH_PTX_C): $(BUILD)/gen/bench_%_ptx.c: $(BUILD)/gen/bench_%.ptx tools/embed.sh
	$(call msg,GEN,$@)
	$(Q)sh tools/embed.sh bench_ptx_$* < $< > $@
$(BENCH_KERNELS:%=$(OBJ)/gen/bench_%_ptx.o): $(OBJ)/gen/%.o: $(BUILD)/gen/%.c
	$(call msg,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<
$(OBJ)/tools/bench/env.o $(OBJ)/tools/bench/cli.o: $(BUILD)/gen/version.h

# a CPU sampling profiler to preload into oood (bench/sampler.c; not installed)
$(BUILD)/libooo-sampler.so: bench/sampler.c
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared -o $@ $< -lpthread

# a stand-in driver for the tests on machines without a GPU (tests/fakecuda; not installed)
$(FAKECUDA): tests/fakecuda/fakecuda.c daemon/exec/cuda.h daemon/exec/cuda_api.h include/ooo/jit.h
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $<

# a stand-in NVRTC for the tests of CUDA C modules (tests/fakecuda/fakenvrtc.c; not installed)
$(FAKENVRTC): tests/fakecuda/fakenvrtc.c daemon/exec/nvrtc_api.h
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libnvrtc.so.13 -o $@ $<

# the host cost of the calls the executor makes (bench/callcost.c; not installed)
$(BUILD)/ooo-callcost: $(OBJ)/bench/callcost.o $(OBJ)/daemon/exec/cuda.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread

$(BUILD)/ooo-bench: $(BENCH_OBJS) $(BUILD)/libooo.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread -lm

# ---- tests -----------------------------------------------------------------
$(BUILD)/tests/test_wire: $(OBJ)/tests/unit/test_wire.o $(BUILD)/libooo.a
$(BUILD)/tests/test_policy: $(OBJ)/tests/unit/test_policy.o $(POLICY_OBJS)
$(BUILD)/tests/test_partplan: $(OBJ)/tests/unit/test_partplan.o $(OBJ)/daemon/parts/partplan.o $(POLICY_OBJS)
$(BUILD)/tests/test_registry: $(OBJ)/tests/unit/test_registry.o $(OBJ)/daemon/policy/registry.o $(POLICY_OBJS) $(OBJ)/proto/wire.o
$(BUILD)/tests/test_cgroup: $(OBJ)/tests/unit/test_cgroup.o $(OBJ)/daemon/policy/cgroup.o
$(BUILD)/tests/test_ring: $(OBJ)/tests/unit/test_ring.o $(OBJ)/proto/ring.o
$(BUILD)/tests/test_fdpass: $(OBJ)/tests/unit/test_fdpass.o $(OBJ)/proto/fdpass.o
$(BUILD)/tests/test_ldcache: $(OBJ)/tests/unit/test_ldcache.o $(OBJ)/daemon/telemetry/ldcache.o
$(BUILD)/tests/test_place: $(OBJ)/tests/unit/test_place.o $(OBJ)/daemon/sched/place.o
$(BUILD)/tests/test_admit: $(OBJ)/tests/unit/test_admit.o $(OBJ)/daemon/policy/admit.o
$(BUILD)/tests/test_hangs: $(OBJ)/tests/unit/test_hangs.o $(OBJ)/daemon/policy/hangs.o
$(BUILD)/tests/test_longwork: $(OBJ)/tests/unit/test_longwork.o $(OBJ)/daemon/exec/longwork.o
$(BUILD)/tests/test_mps: $(OBJ)/tests/unit/test_mps.o $(OBJ)/daemon/mps/mps_text.o $(OBJ)/daemon/leases/lease_decide.o $(POLICY_OBJS)
$(BUILD)/tests/test_staging: $(OBJ)/tests/unit/test_staging.o $(OBJ)/client/staging.o
$(BUILD)/tests/test_validate: $(OBJ)/tests/unit/test_validate.o $(OBJ)/daemon/exec/validate.o
$(BUILD)/tests/test_jit: $(OBJ)/tests/unit/test_jit.o $(BUILD)/libjit.a
# the test binary is also the NVRTC helper it starts (/proc/self/exe); it compiles with the stand-in NVRTC
$(BUILD)/tests/test_nvrtc: $(OBJ)/tests/unit/test_nvrtc.o $(OBJ)/daemon/exec/nvrtc.o | $(FAKENVRTC)
$(BUILD)/tests/test_fence: $(OBJ)/tests/unit/test_fence.o $(BUILD)/libjit.a
$(BUILD)/tests/test_jit_cache: $(OBJ)/tests/unit/test_jit_cache.o $(OBJ)/daemon/jit/cache.o
$(BUILD)/tests/test_oooctl_sched: $(OBJ)/tests/unit/test_oooctl_sched.o $(OBJ)/tools/oooctl/sched_calc.o $(OBJ)/proto/names.o \
                            $(OBJ)/tools/json.o
$(BUILD)/tests/test_args: $(OBJ)/tests/unit/test_args.o $(OBJ)/tools/common/args.o
$(BUILD)/tests/test_k8s: $(OBJ)/tests/unit/test_k8s.o $(OBJ)/tools/k8s-plugin/grpc_frame.o $(OBJ)/tools/k8s-plugin/slots.o \
                        $(OBJ)/tools/oooctl/cdi_spec.o $(OBJ)/tools/json.o
$(BUILD)/tests/test_http: $(OBJ)/tests/unit/test_http.o $(OBJ)/daemon/admin/http.o
$(BUILD)/tests/test_sched: $(OBJ)/tests/unit/test_sched.o $(OBJ)/daemon/sched/sched.o $(OBJ)/daemon/sched/fairq.o
# the sampler's test needs frame pointers in its own code (bench/sampler.c follows them)
$(BUILD)/tests/test_sampler: $(OBJ)/tests/unit/test_sampler.o | $(BUILD)/libooo-sampler.so
$(OBJ)/tests/unit/test_sampler.o: ALL_CFLAGS += -fno-omit-frame-pointer
$(BUILD)/tests/test_daemon: $(OBJ)/tests/integration/test_daemon.o $(OBJ)/proto/wire.o $(BUILD)/libooo.a

$(TEST_BINS):
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(STATIC_LIBS) -lcmocka -lpthread

RUN_ARGS ?=
run: deps-build
	$(Q)$(MAKE) --no-print-directory $(BUILD)/oood $(BUILD)/oooctl
	exec $(BUILD)/oood -f $(RUN_ARGS)

$(BUILD)/tests/gpu/buf_check: $(OBJ)/tests/gpu/buf_check.o $(OBJ)/daemon/exec/cuda.o $(BUILD)/libooo.a
$(BUILD)/tests/gpu/dp_check: $(OBJ)/tests/gpu/dp_check.o $(OBJ)/daemon/exec/cuda.o $(BUILD)/libooo.a
$(BUILD)/tests/gpu/launch_check: $(OBJ)/tests/gpu/launch_check.o $(OBJ)/daemon/exec/cuda.o $(BUILD)/libooo.a
$(BUILD)/tests/gpu/bundle_check: $(OBJ)/tests/gpu/bundle_check.o $(BUILD)/libooo.a
$(BUILD)/tests/gpu/domain_check: $(OBJ)/tests/gpu/domain_check.o $(BUILD)/libooo.a
$(BUILD)/tests/gpu/hostile_check: $(OBJ)/tests/gpu/hostile_check.o $(BUILD)/libooo.a
$(BUILD)/tests/gpu/soak_check: $(OBJ)/tests/gpu/soak_check.o $(BUILD)/libooo.a
$(BUILD)/tests/gpu/mps_check: $(OBJ)/tests/gpu/mps_check.o $(OBJ)/daemon/exec/cuda.o
$(BUILD)/tests/gpu/green_check: $(OBJ)/tests/gpu/green_check.o $(OBJ)/daemon/exec/cuda.o $(OBJ)/daemon/exec/partition.o
$(GPU_TEST_BINS):
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread

$(BUILD)/tests/gpu/jit_check: $(OBJ)/tests/gpu/jit_check.o $(OBJ)/daemon/exec/cuda.o $(BUILD)/libjit.a
$(BUILD)/tests/gpu/fence_check: $(OBJ)/tests/gpu/fence_check.o $(OBJ)/daemon/exec/cuda.o $(BUILD)/libjit.a
$(GPU_JIT_CHECK):
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(STATIC_LIBS) -ldl -lm

# cuda_calls finds libcuda.so.1 next to itself in stubs/ (the toolkit names its stub libcuda.so)
$(OBJ)/tests/telemetry/cuda_calls.o: ALL_CFLAGS += -isystem $(CUDA_HOME)/include
$(BUILD)/tests/telemetry/cuda_calls: $(OBJ)/tests/telemetry/cuda_calls.o
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)/stubs
	$(Q)ln -sf $(abspath $(CUDA_STUBS))/libcuda.so $(dir $@)/stubs/libcuda.so.1
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ -L$(CUDA_STUBS) -lcuda -Wl,-rpath,'$$ORIGIN/stubs'
$(BUILD)/tests/telemetry/pingpong: $(OBJ)/tests/telemetry/pingpong.o
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ -lpthread
$(BUILD)/tests/tools/prom_lint: $(OBJ)/tests/tools/prom_lint.o
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

# tests/unit/test_cuda_abi.sh compares daemon/exec/cuda_api.h with the
# toolkit's headers under CUDA_HOME, and skips where there are none
test: deps-test
	$(Q)$(MAKE) --no-print-directory all
	$(Q)CUDA_HOME='$(CUDA_HOME)' CC='$(CC)' sh tests/run.sh $(BUILD)

test-run: all
	$(Q)CUDA_HOME='$(CUDA_HOME)' CC='$(CC)' sh tests/run.sh $(BUILD)

asan: deps-test
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SAN=1 CFLAGS='-O1 -g' test-run

# ---- fuzz ------------------------------------------------------------------
FUZZ_SECONDS ?= 30
FUZZ_TARGETS := fuzz_wire fuzz_policy fuzz_sqe fuzz_ptx fuzz_ldcache fuzz_mps fuzz_exec fuzz_http fuzz_cgroup fuzz_grpc
FUZZ_CFLAGS = -std=gnu11 -g -O1 -Iinclude -I$(BUILD)/gen -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined
$(BUILD)/fuzz/fuzz_wire: tests/fuzz/fuzz_wire.c proto/wire.c
$(BUILD)/fuzz/fuzz_policy: tests/fuzz/fuzz_policy.c daemon/policy/policy.c daemon/policy/values.c daemon/policy/cgroup.c $(BUILD)/gen/default_conf.c
$(BUILD)/fuzz/fuzz_cgroup: tests/fuzz/fuzz_cgroup.c daemon/policy/cgroup.c
$(BUILD)/fuzz/fuzz_sqe: tests/fuzz/fuzz_sqe.c daemon/exec/validate.c
$(BUILD)/fuzz/fuzz_ptx: tests/fuzz/fuzz_ptx.c $(PTX_SRCS) daemon/jit/fuse.c daemon/jit/fence.c
$(BUILD)/fuzz/fuzz_ldcache: tests/fuzz/fuzz_ldcache.c daemon/telemetry/ldcache.c
$(BUILD)/fuzz/fuzz_mps: tests/fuzz/fuzz_mps.c daemon/mps/mps_text.c
$(BUILD)/fuzz/fuzz_exec: tests/fuzz/fuzz_exec.c proto/exec_proto.c
$(BUILD)/fuzz/fuzz_http: tests/fuzz/fuzz_http.c daemon/admin/http.c
$(BUILD)/fuzz/fuzz_grpc: tests/fuzz/fuzz_grpc.c tools/k8s-plugin/grpc_frame.c tools/k8s-plugin/slots.c
$(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS)):
	$(call msg,FUZZCC,$@)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ $(STATIC_LIBS)

fuzz: deps-fuzz $(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS))
	$(Q)set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$t; \
		echo "fuzz: $$t for $(FUZZ_SECONDS)s"; \
		$(BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			$(BUILD)/fuzz/corpus-$$t tests/fuzz/seeds/$$t 2>$(BUILD)/fuzz/$$t.log \
			|| { tail -50 $(BUILD)/fuzz/$$t.log; exit 1; }; \
		grep -E 'stat::number_of_executed_units|Done' $(BUILD)/fuzz/$$t.log || true; \
	done

# ---- install ---------------------------------------------------------------
# Generated on every make: they hold the install directories of this make's
# command line (PREFIX, SBINDIR, BINDIR...), not of the one that built them first.
$(BUILD)/ooo.pc: client/ooo.pc.in include/ooo/ooo.h FORCE
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

$(BUILD)/oood.service: daemon/oood.service.in FORCE
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' $< > $@

install: $(BINS) $(BUILD)/ooo.pc $(BUILD)/oood.service
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/ooo $(DESTDIR)$(SYSCONFDIR)/ooo $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5
	install -m 0755 $(BUILD)/oood $(DESTDIR)$(SBINDIR)/oood
	install -m 0755 $(BUILD)/ooo-k8s-plugin $(DESTDIR)$(SBINDIR)/ooo-k8s-plugin
	install -m 0755 $(BUILD)/oooctl $(BUILD)/ooo-run $(BUILD)/ooo-bench $(BUILD)/ooo-jit $(DESTDIR)$(BINDIR)/
	install -m 0755 $(BUILD)/libooo.so $(DESTDIR)$(LIBDIR)/libooo.so.$(VERSION)
	ln -sf libooo.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libooo.so.0
	ln -sf libooo.so.0 $(DESTDIR)$(LIBDIR)/libooo.so
	install -m 0644 $(BUILD)/libooo.a $(DESTDIR)$(LIBDIR)/libooo.a
	install -m 0644 include/ooo/ooo.h include/ooo/proto.h include/ooo/shm.h $(DESTDIR)$(INCLUDEDIR)/ooo/
	install -m 0644 $(BUILD)/ooo.pc $(DESTDIR)$(LIBDIR)/pkgconfig/ooo.pc
	install -m 0644 $(BUILD)/oood.service $(DESTDIR)$(UNITDIR)/oood.service
	install -m 0644 docs/man/oood.8 docs/man/oooctl.8 docs/man/ooo-k8s-plugin.8 $(DESTDIR)$(MANDIR)/man8/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	install -m 0644 docs/man/ooo-run.1 docs/man/ooo-bench.1 docs/man/ooo-jit.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 docs/man/libooo.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 docs/man/oood.conf.5 $(DESTDIR)$(MANDIR)/man5/
	test -e $(DESTDIR)$(SYSCONFDIR)/ooo/oood.conf || \
		install -m 0644 daemon/oood.conf $(DESTDIR)$(SYSCONFDIR)/ooo/oood.conf

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/oood $(DESTDIR)$(SBINDIR)/ooo-k8s-plugin $(DESTDIR)$(BINDIR)/oooctl $(DESTDIR)$(BINDIR)/ooo-run $(DESTDIR)$(BINDIR)/ooo-bench $(DESTDIR)$(BINDIR)/ooo-jit \
		$(DESTDIR)$(LIBDIR)/libooo.so* $(DESTDIR)$(LIBDIR)/libooo.a \
		$(DESTDIR)$(LIBDIR)/pkgconfig/ooo.pc $(DESTDIR)$(UNITDIR)/oood.service \
		$(DESTDIR)$(MANDIR)/man8/oood.8 $(DESTDIR)$(MANDIR)/man8/oooctl.8 $(DESTDIR)$(MANDIR)/man8/ooo-k8s-plugin.8 \
		$(DESTDIR)$(MANDIR)/man5/oood.conf.5 $(DESTDIR)$(MANDIR)/man1/ooo-run.1 \
		$(DESTDIR)$(MANDIR)/man1/ooo-bench.1 $(DESTDIR)$(MANDIR)/man1/ooo-jit.1 $(DESTDIR)$(MANDIR)/man3/libooo.3
	rm -rf $(DESTDIR)$(INCLUDEDIR)/ooo

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
