/* SPDX-License-Identifier: MIT */
/*
 * eBPF telemetry: see telemetry.h and docs/telemetry.md.
 *
 * Two skeletons: cuda (uprobes on libcuda, counting in the probes into the
 * `procs` map, slow syncs into a ring buffer) and sched (tp_btf run-queue
 * delay into `rq`). Both filter on a pid map that mirrors the table of
 * tracked pids kept here, unless [telemetry] all_processes = yes.
 *
 * Probes on the sync, allocation, copy and graph-launch functions are
 * attached for every process (they filter in the program). Launch probes
 * are the expensive ones (one trap per kernel launch): with launch_probes =
 * tracked they are attached per process, only for pids that ask for them,
 * so the kernel puts the breakpoint in those address spaces only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../../bpf/telemetry.h"
#include "cuda.skel.h"
#include "sched.skel.h"

#include "ldcache.h"
#include "../log.h"
#include "../pidfd.h"
#include "../policy/policy.h"
#include "../server.h"
#include "telemetry.h"

#define TM_SCAN_NS (2000000000ull)    /* look for libraries and exited processes this often */
#define TM_NLAUNCH 4                  /* launch symbols probed per library */
#define TM_MAX_GLOBAL 48              /* global links per library */
#define TM_MAPS_LINE 4096
#define TM_SCANS_PER_TICK 64          /* /proc/PID/maps read per scan, at most */
#define TM_MAPS_LINES 20000           /* lines of one maps file read, at most */
#define TM_MAX_SCANS 30               /* scans of a pid without libcuda before giving up (a minute) */
#define TM_REFUSED 64                 /* files remembered as not to be probed */

_Static_assert(OOO_TM_HIST == OOO_TM_BUCKETS, "histogram sizes of bpf/telemetry.h and proto.h differ");
_Static_assert(OOO_TM_COMM == 16, "comm size");

static const char *const launch_syms[TM_NLAUNCH] = {
	"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
};

enum tm_prog {
	P_STREAM_IN, P_STREAM_OUT, P_CTX_IN, P_CTX_OUT, P_EVENT_IN, P_EVENT_OUT,
	P_ALLOC_IN, P_ALLOC_OUT, P_FREE, P_COPY, P_GRAPH,
};

static const struct probe_def {
	const char *sym;
	enum tm_prog prog;
	bool ret;
} global_probes[] = {
	{ "cuStreamSynchronize", P_STREAM_IN, false }, { "cuStreamSynchronize", P_STREAM_OUT, true },
	{ "cuStreamSynchronize_ptsz", P_STREAM_IN, false }, { "cuStreamSynchronize_ptsz", P_STREAM_OUT, true },
	{ "cuCtxSynchronize", P_CTX_IN, false }, { "cuCtxSynchronize", P_CTX_OUT, true },
	{ "cuCtxSynchronize_v2", P_CTX_IN, false }, { "cuCtxSynchronize_v2", P_CTX_OUT, true },
	{ "cuEventSynchronize", P_EVENT_IN, false }, { "cuEventSynchronize", P_EVENT_OUT, true },
	{ "cuMemAlloc_v2", P_ALLOC_IN, false }, { "cuMemAlloc_v2", P_ALLOC_OUT, true },
	{ "cuMemFree_v2", P_FREE, false },
	{ "cuMemcpy", P_COPY, false }, { "cuMemcpy_ptds", P_COPY, false },
	{ "cuMemcpyAsync", P_COPY, false }, { "cuMemcpyAsync_ptsz", P_COPY, false },
	{ "cuMemcpyHtoD_v2", P_COPY, false }, { "cuMemcpyHtoD_v2_ptds", P_COPY, false },
	{ "cuMemcpyDtoH_v2", P_COPY, false }, { "cuMemcpyDtoH_v2_ptds", P_COPY, false },
	{ "cuMemcpyHtoDAsync_v2", P_COPY, false }, { "cuMemcpyHtoDAsync_v2_ptsz", P_COPY, false },
	{ "cuMemcpyDtoHAsync_v2", P_COPY, false }, { "cuMemcpyDtoHAsync_v2_ptsz", P_COPY, false },
	{ "cuGraphLaunch", P_GRAPH, false }, { "cuGraphLaunch_ptsz", P_GRAPH, false },
};
#define NGLOBAL (sizeof(global_probes) / sizeof(global_probes[0]))
_Static_assert(NGLOBAL + TM_NLAUNCH <= TM_MAX_GLOBAL, "TM_MAX_GLOBAL");

struct tm_lib {
	char path[OOO_PATH_MAX]; /* where it was found, for the operator (sanitised) */
	int fd;                  /* the verified file, kept open: probes attach through /proc/self/fd/N */
	char fdpath[32];
	dev_t dev;
	ino_t ino;
	uint64_t off[NGLOBAL];            /* 0: not exported */
	uint64_t launch_off[TM_NLAUNCH];
	struct bpf_link *links[TM_MAX_GLOBAL];
	uint32_t nlinks;
	uint32_t missing;
};

struct tm_pid {
	pid_t pid;
	int pidfd;
	uint32_t sessions; /* references of OOO_TRACK_SESSION */
	uint32_t executors;
	uint32_t leases;   /* references of OOO_TRACK_LEASE */
	bool operator_;
	bool operator_launches; /* the operator's reference holds one of launch_refs */
	uint32_t launch_refs;
	bool scanned; /* its maps were looked at for libraries */
	bool found;   /* ... and had a libcuda mapping: not looked at again */
	uint8_t nscans; /* scans without finding one; stops at TM_MAX_SCANS */
	uid_t uid;      /* owner of /proc/PID when it was added */
	struct bpf_link *launch[OOO_TM_LIBS][TM_NLAUNCH];
};

struct telemetry {
	uint32_t op; /* of the ring buffer poll (server_add_op) */
	int state; /* enum ooo_tm_state */
	char reason[OOO_ERRMSG_MAX];
	struct policy_telemetry cfg; /* what the running probes were started with */
	struct cuda_bpf *cuda;
	struct sched_bpf *sched;
	struct ring_buffer *rb;
	uint32_t poll_gen;
	bool poll_armed;
	struct tm_lib libs[OOO_TM_LIBS];
	uint32_t nlibs;
	bool libs_full_logged;
	struct tm_pid *pids;
	uint32_t npids, cap_pids;
	uint64_t next_scan_ns;
	uint32_t scan_cursor;
	struct {
		dev_t dev;
		ino_t ino;
	} refused[TM_REFUSED];
	uint32_t nrefused;
	uint64_t events, aged_out, launch_links;
	struct ooo_tm_slow_rec recent[OOO_TM_RECENT];
	uint64_t recent_end_ns[OOO_TM_RECENT];
	uint32_t recent_head, nrecent;
};

/* ---- libbpf's messages into our log -------------------------------------- */

/*
 * While the programs load, libbpf's warnings are held here: a load refused
 * for want of privilege is one line of ours, not libbpf's three; any other
 * failure shows them (flush_held_log).
 */
static bool hold_log;
static char held_log[4096];
static size_t held_len;

static void flush_held_log(bool show)
{
	char *line = held_log, *nl;

	held_log[held_len < sizeof(held_log) ? held_len : sizeof(held_log) - 1] = '\0';
	while (show && *line && (nl = strchr(line, '\n'))) {
		*nl = '\0';
		log_msg(LOG_WARNING, "libbpf", "%s", line);
		line = nl + 1;
	}
	held_len = 0;
	hold_log = false;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	const char *s = line;
	size_t n;
	int prio = level == LIBBPF_WARN ? LOG_WARNING : LOG_DEBUG;

	/* libbpf's own debug output (every section and relocation) only helps libbpf's developers */
	if (level == LIBBPF_DEBUG || (prio == LOG_DEBUG && log_get_level() < LOG_DEBUG))
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (!strncmp(s, "libbpf: ", 8))
		s += 8;
	if (hold_log && prio == LOG_WARNING) {
		int k = snprintf(held_log + held_len, sizeof(held_log) - held_len, "%s\n", s);

		if (k > 0 && held_len + (size_t)k < sizeof(held_log))
			held_len += (size_t)k;
		return 0;
	}
	log_msg(prio, "libbpf", "%s", s);
	return 0;
}

/* ---- state --------------------------------------------------------------- */

static int telemetry_new(struct telemetry **out)
{
	struct telemetry *tm = calloc(1, sizeof(*tm));

	if (!tm)
		return -ENOMEM;
	tm->state = OOO_TM_DISABLED;
	snprintf(tm->reason, sizeof(tm->reason), "not started");
	*out = tm;
	return 0;
}

static void pid_unlink(struct telemetry *tm, struct tm_pid *p)
{
	for (uint32_t l = 0; l < OOO_TM_LIBS; l++) {
		for (int k = 0; k < TM_NLAUNCH; k++) {
			if (p->launch[l][k]) {
				bpf_link__destroy(p->launch[l][k]);
				p->launch[l][k] = NULL;
				tm->launch_links--;
			}
		}
	}
}

static void probes_stop(struct telemetry *tm)
{
	for (uint32_t i = 0; i < tm->npids; i++)
		pid_unlink(tm, &tm->pids[i]);
	for (uint32_t i = 0; i < tm->nlibs; i++) {
		for (uint32_t k = 0; k < tm->libs[i].nlinks; k++)
			bpf_link__destroy(tm->libs[i].links[k]);
		if (tm->libs[i].fd >= 0)
			close(tm->libs[i].fd);
	}
	memset(tm->libs, 0, sizeof(tm->libs));
	tm->nrefused = 0;
	tm->nlibs = 0;
	tm->libs_full_logged = false;
	ring_buffer__free(tm->rb);
	tm->rb = NULL;
	cuda_bpf__destroy(tm->cuda);
	tm->cuda = NULL;
	sched_bpf__destroy(tm->sched);
	tm->sched = NULL;
	tm->launch_links = 0;
}

static void telemetry_free(struct telemetry *tm)
{
	if (!tm)
		return;
	probes_stop(tm);
	for (uint32_t i = 0; i < tm->npids; i++) {
		if (tm->pids[i].pidfd >= 0)
			close(tm->pids[i].pidfd);
	}
	free(tm->pids);
	free(tm);
}

static uint32_t pid_track_bits(const struct tm_pid *p)
{
	return (p->sessions ? OOO_TRACK_SESSION : 0) | (p->executors ? OOO_TRACK_EXECUTOR : 0) |
	       (p->operator_ ? OOO_TRACK_OPERATOR : 0) | (p->launch_refs ? OOO_TRACK_LAUNCHES : 0) |
	       (p->leases ? OOO_TRACK_LEASE : 0);
}

/* What the BPF filter maps hold for a tracked pid. */
static uint32_t pid_filter(const struct tm_pid *p)
{
	/* executors: run-queue only; their own cuLaunchKernel calls are the data path */
	return (p->sessions || p->leases || p->operator_ ? OOO_TM_TRACK_CUDA : 0) | OOO_TM_TRACK_SCHED;
}

static struct tm_pid *pid_find(struct telemetry *tm, pid_t pid)
{
	for (uint32_t i = 0; i < tm->npids; i++) {
		if (tm->pids[i].pid == pid)
			return &tm->pids[i];
	}
	return NULL;
}

static void filter_update(struct telemetry *tm, const struct tm_pid *p)
{
	__u32 key = (__u32)p->pid, val = pid_filter(p);

	if (tm->cuda)
		bpf_map_update_elem(bpf_map__fd(tm->cuda->maps.pids), &key, &val, BPF_ANY);
	if (tm->sched)
		bpf_map_update_elem(bpf_map__fd(tm->sched->maps.pids), &key, &val, BPF_ANY);
}

static void filter_delete(struct telemetry *tm, pid_t pid)
{
	__u32 key = (__u32)pid;

	if (tm->cuda)
		bpf_map_delete_elem(bpf_map__fd(tm->cuda->maps.pids), &key);
	if (tm->sched)
		bpf_map_delete_elem(bpf_map__fd(tm->sched->maps.pids), &key);
}

/* ---- libraries ----------------------------------------------------------- */

/* File offsets of the named functions (0 where absent), as uprobes want them. */
static int elf_offsets(int fd, const char *const *names, size_t n, uint64_t *offs)
{
	size_t nph = 0;
	Elf_Scn *scn = NULL;
	Elf *e;
	int rc = -ENOEXEC;

	memset(offs, 0, n * sizeof(*offs));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
			    (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
				continue;
			nm = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!nm)
				continue;
			for (size_t k = 0; k < n; k++) {
				if (offs[k] || strcmp(nm, names[k]))
					continue;
				for (size_t p = 0; p < nph; p++) {
					GElf_Phdr ph;

					if (!gelf_getphdr(e, (int)p, &ph) || ph.p_type != PT_LOAD ||
					    !(ph.p_flags & PF_X) || sym.st_value < ph.p_vaddr ||
					    sym.st_value >= ph.p_vaddr + ph.p_memsz)
						continue;
					offs[k] = sym.st_value - ph.p_vaddr + ph.p_offset;
					break;
				}
			}
		}
	}
	rc = 0;
out:
	elf_end(e);
	return rc;
}

static struct bpf_program *prog_of(struct telemetry *tm, enum tm_prog p)
{
	struct cuda_bpf *s = tm->cuda;

	switch (p) {
	case P_STREAM_IN: return s->progs.stream_sync_enter;
	case P_STREAM_OUT: return s->progs.stream_sync_leave;
	case P_CTX_IN: return s->progs.ctx_sync_enter;
	case P_CTX_OUT: return s->progs.ctx_sync_leave;
	case P_EVENT_IN: return s->progs.event_sync_enter;
	case P_EVENT_OUT: return s->progs.event_sync_leave;
	case P_ALLOC_IN: return s->progs.alloc_enter;
	case P_ALLOC_OUT: return s->progs.alloc_leave;
	case P_FREE: return s->progs.mem_free;
	case P_COPY: return s->progs.copy;
	case P_GRAPH: return s->progs.graph_launch;
	}
	return NULL;
}

static struct bpf_link *attach(struct bpf_program *prog, pid_t pid, const char *path, uint64_t off, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret);

	return bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &o);
}

/* Launch probes of one tracked pid in library li. Returns how many failed. */
static int pid_attach_lib(struct telemetry *tm, struct tm_pid *p, uint32_t li)
{
	struct tm_lib *lib = &tm->libs[li];
	int failed = 0;

	for (int k = 0; k < TM_NLAUNCH; k++) {
		if (p->launch[li][k] || !lib->launch_off[k])
			continue;
		p->launch[li][k] = attach(tm->cuda->progs.launch, p->pid, lib->fdpath, lib->launch_off[k], false);
		if (!p->launch[li][k]) {
			failed++;
			continue;
		}
		tm->launch_links++;
	}
	return failed;
}

static bool launches_per_pid(const struct telemetry *tm)
{
	return tm->cuda && tm->cfg.launch_probes == POLICY_LAUNCH_TRACKED;
}

static int pid_attach_all(struct telemetry *tm, struct tm_pid *p)
{
	int failed = 0;

	if (!launches_per_pid(tm) || !p->launch_refs)
		return 0;
	for (uint32_t li = 0; li < tm->nlibs; li++)
		failed += pid_attach_lib(tm, p, li);
	return failed;
}

static uint32_t pid_libs(const struct telemetry *tm, const struct tm_pid *p)
{
	uint32_t n = 0;

	for (uint32_t li = 0; li < tm->nlibs; li++) {
		for (int k = 0; k < TM_NLAUNCH; k++) {
			if (p->launch[li][k] || (tm->cfg.launch_probes == POLICY_LAUNCH_ALL && tm->libs[li].launch_off[k])) {
				n++;
				break;
			}
		}
	}
	return n;
}

/* A copy of a path for the log and the operator: control bytes and non-ASCII become '?'. */
static void clean_path(char *dst, size_t cap, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < cap; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || (unsigned char)src[i] >= 0x7f ? '?' : src[i];
	dst[i] = '\0';
}

static bool refused(const struct telemetry *tm, dev_t dev, ino_t ino)
{
	for (uint32_t i = 0; i < tm->nrefused; i++)
		if (tm->refused[i].dev == dev && tm->refused[i].ino == ino)
			return true;
	return false;
}

static void refuse(struct telemetry *tm, dev_t dev, ino_t ino)
{
	if (refused(tm, dev, ino))
		return;
	tm->refused[tm->nrefused % TM_REFUSED].dev = dev;
	tm->refused[tm->nrefused % TM_REFUSED].ino = ino;
	if (tm->nrefused < TM_REFUSED)
		tm->nrefused++;
}

/*
 * Probe the library at `path` (once per inode). `want_ino`, when not 0, is
 * the inode a process's maps line names: the file opened must be that one,
 * or a tenant could swap what the path leads to (another mount over it, a
 * FIFO that would block the loop, a device). `untrusted`: found in a
 * tenant's address space, so it must also be a root-owned file nobody else
 * can write, or a tenant could make root parse and probe a file of its own.
 * The file stays open and the probes attach through /proc/self/fd/N, so
 * they always reach the file that was checked. Returns its index, or -errno.
 */
static int lib_add(struct telemetry *tm, const char *path, bool untrusted, unsigned long want_ino)
{
	char shown[OOO_PATH_MAX];
	struct tm_lib *lib;
	struct stat st;
	uint32_t li;
	int fd, r;

	clean_path(shown, sizeof(shown), path);
	/* O_NONBLOCK: a FIFO put at the path must not stall the loop; O_NOCTTY for a tty */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (want_ino && st.st_ino != (ino_t)want_ino)) {
		close(fd);
		return -ENOEXEC;
	}
	for (li = 0; li < tm->nlibs; li++) {
		if (tm->libs[li].dev == st.st_dev && tm->libs[li].ino == st.st_ino) {
			close(fd);
			return (int)li;
		}
	}
	if (refused(tm, st.st_dev, st.st_ino)) {
		close(fd);
		return -EPERM;
	}
	if (untrusted && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		close(fd);
		refuse(tm, st.st_dev, st.st_ino);
		log_peer("telemetry: not probing %s: not a root-owned file that only root can write", shown);
		return -EPERM;
	}
	if (tm->nlibs == OOO_TM_LIBS) {
		close(fd);
		if (!tm->libs_full_logged)
			log_warn("telemetry: already probing %u libcuda files, not probing %s", OOO_TM_LIBS, shown);
		tm->libs_full_logged = true;
		return -ENOSPC;
	}
	lib = &tm->libs[tm->nlibs];
	memset(lib, 0, sizeof(*lib));
	{
		const char *names[NGLOBAL];

		for (size_t i = 0; i < NGLOBAL; i++)
			names[i] = global_probes[i].sym;
		r = elf_offsets(fd, names, NGLOBAL, lib->off);
		if (!r)
			r = elf_offsets(fd, launch_syms, TM_NLAUNCH, lib->launch_off);
	}
	if (!r) {
		bool any = false;

		for (size_t i = 0; i < NGLOBAL; i++)
			any |= lib->off[i] != 0;
		for (int k = 0; k < TM_NLAUNCH; k++)
			any |= lib->launch_off[k] != 0;
		if (!any)
			r = -ENOEXEC; /* not a libcuda: it must not take a slot */
	}
	if (r < 0) {
		close(fd);
		refuse(tm, st.st_dev, st.st_ino);
		log_peer("telemetry: %s exports none of the probed libcuda functions: not probed", shown);
		return r;
	}
	/* two symbols at one address (aliases) would count every call twice: probe it once */
	for (size_t i = 0; i < NGLOBAL; i++)
		for (size_t j = 0; j < i; j++)
			if (lib->off[i] && lib->off[i] == lib->off[j] && global_probes[i].ret == global_probes[j].ret)
				lib->off[i] = 0;
	for (int k = 0; k < TM_NLAUNCH; k++)
		for (int j = 0; j < k; j++)
			if (lib->launch_off[k] && lib->launch_off[k] == lib->launch_off[j])
				lib->launch_off[k] = 0;
	lib->fd = fd;
	snprintf(lib->fdpath, sizeof(lib->fdpath), "/proc/self/fd/%d", fd);
	snprintf(lib->path, sizeof(lib->path), "%s", shown);
	lib->dev = st.st_dev;
	lib->ino = st.st_ino;
	for (size_t i = 0; i < NGLOBAL; i++) {
		struct bpf_link *l;

		if (!lib->off[i]) {
			lib->missing++;
			continue;
		}
		l = attach(prog_of(tm, global_probes[i].prog), -1, lib->fdpath, lib->off[i], global_probes[i].ret);
		if (!l) {
			log_warn("telemetry: uprobe on %s in %s: %s", global_probes[i].sym, shown, strerror(errno));
			continue;
		}
		lib->links[lib->nlinks++] = l;
	}
	for (int k = 0; k < TM_NLAUNCH; k++) {
		struct bpf_link *l;

		if (!lib->launch_off[k]) {
			lib->missing++;
			continue;
		}
		if (tm->cfg.launch_probes != POLICY_LAUNCH_ALL)
			continue;
		l = attach(tm->cuda->progs.launch, -1, lib->fdpath, lib->launch_off[k], false);
		if (!l) {
			log_warn("telemetry: uprobe on %s in %s: %s", launch_syms[k], shown, strerror(errno));
			continue;
		}
		lib->links[lib->nlinks++] = l;
	}
	li = tm->nlibs++;
	if (!strncmp(tm->reason, "no libcuda", 10))
		tm->reason[0] = '\0';
	log_info("telemetry: probing %s (%u uprobes, %u symbols absent)", shown, lib->nlinks, lib->missing);
	for (uint32_t i = 0; i < tm->npids; i++) {
		if (launches_per_pid(tm) && tm->pids[i].launch_refs)
			pid_attach_lib(tm, &tm->pids[i], li);
	}
	return (int)li;
}

/* The library paths oood itself would see: config, ld.so.cache, known places. */
static void libs_discover(struct telemetry *tm)
{
	static const char *const known[] = {
		"/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		"/usr/lib64/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1",
	};
	char found[4][256];
	int n = 0;

	if (!tm->cuda)
		return;
	if (tm->cfg.libcuda[0]) {
		lib_add(tm, tm->cfg.libcuda, false, 0);
		return;
	}
	{
		int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
		struct stat st;

		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= LDCACHE_MAX_FILE) {
			char *buf = malloc((size_t)st.st_size);
			ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;

			if (got > 0)
				n = ldcache_find(buf, (size_t)got, "libcuda.so.1", found, 4);
			free(buf);
		}
		if (fd >= 0)
			close(fd);
	}
	for (int i = 0; i < n; i++)
		lib_add(tm, found[i], false, 0);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (access(known[i], R_OK) == 0)
			lib_add(tm, known[i], false, 0);
	}
}

/*
 * Libraries named libcuda.so* mapped by pid, opened through its root (other
 * mount namespaces). Returns true if pid maps one (probed or refused).
 */
static bool libs_scan_pid(struct telemetry *tm, pid_t pid)
{
	char path[64], line[TM_MAPS_LINE], lib[OOO_PATH_MAX + 32];
	unsigned long last_ino = 0;
	bool seen = false;
	FILE *f;

	if (!tm->cuda)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	for (uint32_t nl = 0; nl < TM_MAPS_LINES && fgets(line, sizeof(line), f); nl++) {
		unsigned long ino;
		char *file, *base;
		int used = 0;

		/* addr perms offset dev inode path */
		if (sscanf(line, "%*s %*s %*s %*s %lu %n", &ino, &used) < 1 || !used || !ino || ino == last_ino)
			continue;
		file = line + used;
		file[strcspn(file, "\n")] = '\0';
		base = strrchr(file, '/');
		if (file[0] != '/' || !base || strncmp(base + 1, "libcuda.so", 10) || strstr(file, " (deleted)"))
			continue;
		last_ino = ino;
		seen = true;
		if ((size_t)snprintf(lib, sizeof(lib), "/proc/%d/root%s", (int)pid, file) >= OOO_PATH_MAX)
			continue;
		lib_add(tm, lib, true, ino);
	}
	fclose(f);
	return seen;
}

/* ---- ring buffer ------------------------------------------------------------ */

static const char *fn_name(uint32_t fn)
{
	switch (fn) {
	case OOO_TM_STREAM_SYNC: return "cuStreamSynchronize";
	case OOO_TM_CTX_SYNC: return "cuCtxSynchronize";
	case OOO_TM_EVENT_SYNC: return "cuEventSynchronize";
	default: return "?";
	}
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct telemetry *tm = ctx;
	const struct ooo_tm_event *ev = data;
	struct ooo_tm_slow_rec *r;
	char comm[OOO_TM_COMM];

	if (len < sizeof(*ev))
		return 0;
	tm->events++;
	r = &tm->recent[tm->recent_head];
	memset(r, 0, sizeof(*r));
	r->pid = ev->pid;
	r->tid = ev->tid;
	r->fn = ev->fn;
	r->dur_ns = ev->dur_ns;
	memcpy(comm, ev->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	for (char *c = comm; *c; c++) {
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	}
	memcpy(r->comm, comm, sizeof(r->comm));
	tm->recent_end_ns[tm->recent_head] = ev->end_ns;
	tm->recent_head = (tm->recent_head + 1) % OOO_TM_RECENT;
	if (tm->nrecent < OOO_TM_RECENT)
		tm->nrecent++;
	log_debug("telemetry: pid %u (%s) tid %u: %s took %" PRIu64 " us", ev->pid, comm, ev->tid, fn_name(ev->fn),
		  (uint64_t)(ev->dur_ns / 1000));
	return 0;
}

static void arm_poll(struct server *srv)
{
	struct telemetry *tm = srv->tm;
	struct io_uring_sqe *sqe;

	if (!tm->rb || tm->poll_armed)
		return;
	sqe = server_get_sqe(srv);
	if (!sqe)
		return; /* the tick tries again */
	io_uring_prep_poll_multishot(sqe, ring_buffer__epoll_fd(tm->rb), POLLIN);
	io_uring_sqe_set_data64(sqe, ud_make((enum op)tm->op, 0, tm->poll_gen));
	tm->poll_armed = true;
}

static void cancel_poll(struct server *srv)
{
	struct telemetry *tm = srv->tm;
	struct io_uring_sqe *sqe;

	if (!tm->poll_armed)
		return;
	sqe = server_get_sqe(srv);
	if (sqe) {
		io_uring_prep_poll_remove(sqe, ud_make((enum op)tm->op, 0, tm->poll_gen));
		io_uring_sqe_set_data64(sqe, ud_make(OP_CANCEL, 0, 0));
	}
	/* completions of the old generation are ignored */
	tm->poll_gen = (tm->poll_gen + 1) & 0xffffffu;
	tm->poll_armed = false;
}

static void telemetry_on_poll(struct server *srv, uint32_t gen, int res, uint32_t flags)
{
	struct telemetry *tm = srv->tm;

	if (gen != tm->poll_gen)
		return;
	if (!(flags & IORING_CQE_F_MORE))
		tm->poll_armed = false;
	if (tm->rb && res >= 0)
		ring_buffer__consume(tm->rb);
	else if (res < 0 && res != -ECANCELED)
		log_warn("telemetry: poll on the ring buffer: %s", strerror(-res));
	if (!tm->poll_armed && res != -ECANCELED)
		arm_poll(srv);
}

/* ---- start / stop ------------------------------------------------------------ */

static void set_unavailable(struct telemetry *tm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_unavailable(struct telemetry *tm, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tm->reason, sizeof(tm->reason), fmt, ap);
	va_end(ap);
	tm->state = OOO_TM_UNAVAILABLE;
}

static const char *load_error(int e)
{
	if (e == EPERM || e == EACCES)
		return "not privileged (needs CAP_BPF and CAP_PERFMON, or root)";
	return strerror(e);
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

static void telemetry_start(struct server *srv)
{
	struct telemetry *tm = srv->tm;
	const struct policy_telemetry *cfg = &srv->policy->telemetry;
	uint32_t maxp, ring;
	int r;

	tm->cfg = *cfg;
	tm->reason[0] = '\0';
	if (!cfg->enabled) {
		tm->state = OOO_TM_DISABLED;
		snprintf(tm->reason, sizeof(tm->reason), "[telemetry] enabled = no");
		log_info("telemetry: disabled by the configuration");
		return;
	}
	libbpf_set_print(libbpf_log);
	maxp = cfg->max_processes;
	ring = pow2_at_least(cfg->ringbuf_kb * 1024u);
	if (ring < (uint32_t)sysconf(_SC_PAGESIZE))
		ring = (uint32_t)sysconf(_SC_PAGESIZE);

	tm->cuda = cuda_bpf__open();
	if (!tm->cuda) {
		set_unavailable(tm, "cannot open the cuda programs: %s", strerror(errno));
		goto fail;
	}
	tm->cuda->rodata->trace_all = cfg->all_processes;
	tm->cuda->rodata->slow_ns = (__u64)cfg->slow_sync_us * 1000ull;
	bpf_map__set_max_entries(tm->cuda->maps.pids, cfg->max_tracked);
	bpf_map__set_max_entries(tm->cuda->maps.procs, maxp);
	bpf_map__set_max_entries(tm->cuda->maps.inflight, maxp * 4 < 16384 ? 16384 : maxp * 4);
	bpf_map__set_max_entries(tm->cuda->maps.events, ring);
	held_len = 0;
	hold_log = true;
	r = cuda_bpf__load(tm->cuda);
	flush_held_log(r && r != -EPERM && r != -EACCES);
	if (r) {
		set_unavailable(tm, "cannot load the cuda programs: %s", load_error(-r));
		goto fail;
	}
	tm->rb = ring_buffer__new(bpf_map__fd(tm->cuda->maps.events), on_event, tm, NULL);
	if (!tm->rb) {
		set_unavailable(tm, "ring buffer: %s", strerror(errno));
		goto fail;
	}

	tm->sched = sched_bpf__open();
	if (tm->sched) {
		tm->sched->rodata->trace_all = cfg->all_processes;
		bpf_map__set_max_entries(tm->sched->maps.pids, cfg->max_tracked);
		bpf_map__set_max_entries(tm->sched->maps.rq, maxp);
		r = sched_bpf__load(tm->sched);
		if (!r)
			r = sched_bpf__attach(tm->sched);
		if (r) {
			/* the cuda probes are still useful without it */
			snprintf(tm->reason, sizeof(tm->reason), "run-queue probes unavailable: %s", load_error(-r));
			log_warn("telemetry: %s", tm->reason);
			sched_bpf__destroy(tm->sched);
			tm->sched = NULL;
		}
	}
	tm->state = OOO_TM_RUNNING;
	for (uint32_t i = 0; i < tm->npids; i++) {
		filter_update(tm, &tm->pids[i]);
		tm->pids[i].scanned = false;
	}
	libs_discover(tm);
	for (uint32_t i = 0; i < tm->npids; i++) {
		tm->pids[i].found = libs_scan_pid(tm, tm->pids[i].pid);
		tm->pids[i].scanned = true;
		pid_attach_all(tm, &tm->pids[i]);
	}
	if (!tm->nlibs && !tm->reason[0])
		snprintf(tm->reason, sizeof(tm->reason), "no libcuda.so.1 found yet (looked again every %llu s)",
			 TM_SCAN_NS / 1000000000ull);
	arm_poll(srv);
	log_info("telemetry: running (%s, %s; launch probes %s; %u libcuda files)",
		 cfg->all_processes ? "all processes" : "tracked processes",
		 tm->sched ? "run-queue probes on" : "run-queue probes off",
		 cfg->launch_probes == POLICY_LAUNCH_ALL ? "for all" :
		 cfg->launch_probes == POLICY_LAUNCH_OFF ? "off" : "per tracked process",
		 tm->nlibs);
	return;
fail:
	log_info("telemetry: off: %s", tm->reason);
	probes_stop(tm);
}

static void telemetry_stop(struct server *srv)
{
	struct telemetry *tm = srv->tm;

	if (!tm)
		return;
	cancel_poll(srv);
	probes_stop(tm);
	if (tm->state == OOO_TM_RUNNING) {
		tm->state = OOO_TM_DISABLED;
		snprintf(tm->reason, sizeof(tm->reason), "stopped");
	}
}

static bool cfg_same(const struct policy_telemetry *a, const struct policy_telemetry *b)
{
	return a->enabled == b->enabled && a->all_processes == b->all_processes &&
	       a->launch_probes == b->launch_probes && !strcmp(a->libcuda, b->libcuda) &&
	       a->slow_sync_us == b->slow_sync_us && a->max_processes == b->max_processes &&
	       a->max_tracked == b->max_tracked && a->ringbuf_kb == b->ringbuf_kb;
}

static void telemetry_reload(struct server *srv)
{
	if (cfg_same(&srv->tm->cfg, &srv->policy->telemetry))
		return;
	log_info("telemetry: [telemetry] changed: restarting the probes (their counters start again)");
	telemetry_stop(srv);
	telemetry_start(srv);
}

/* ---- tracking ------------------------------------------------------------------ */

/* The owner of /proc/PID (the process's uid), or (uid_t)-1 when it is gone. */
static uid_t proc_uid(pid_t pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

int telemetry_track(struct server *srv, pid_t pid, uint32_t why, bool launches, char *msg, size_t cap)
{
	struct telemetry *tm = srv->tm;
	uint32_t limit = srv->policy->telemetry.max_tracked;
	struct tm_pid *p;
	bool fresh = false;

	if (!tm) {
		snprintf(msg, cap, "telemetry is gone");
		return -ESHUTDOWN;
	}
	if (pid <= 0) {
		snprintf(msg, cap, "bad pid %d", (int)pid);
		return -EINVAL;
	}
	p = pid_find(tm, pid);
	if (p && p->pidfd >= 0) {
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

		if (poll(&pf, 1, 0) == 1) {
			/* the pid we knew exited and the number was reused: a new process, a new entry */
			int nfd = sys_pidfd_open(pid);

			if (nfd < 0) {
				snprintf(msg, cap, "pid %d: %s", (int)pid, errno == ESRCH ? "no such process" : strerror(errno));
				return -errno;
			}
			pid_unlink(tm, p);
			close(p->pidfd);
			p->pidfd = nfd;
			p->found = p->scanned = false;
			p->nscans = 0;
			p->uid = proc_uid(pid);
			fresh = true;
		}
	}
	if (!p) {
		uid_t uid;
		int fd;

		if (tm->npids >= limit) {
			snprintf(msg, cap, "already tracking %u processes (max_tracked)", tm->npids);
			return -ENOSPC;
		}
		uid = proc_uid(pid);
		if (why == OOO_TRACK_SESSION) {
			/* one uid's processes take at most a quarter of the set: others keep their telemetry */
			uint32_t mine = 0, share = limit / 4 ? limit / 4 : 1;

			for (uint32_t i = 0; i < tm->npids; i++)
				mine += tm->pids[i].uid == uid && tm->pids[i].sessions;
			if (mine >= share) {
				snprintf(msg, cap, "uid %u already has %u tracked processes (a quarter of max_tracked)",
					 (unsigned)uid, mine);
				return -ENOSPC;
			}
		}
		fd = sys_pidfd_open(pid);
		if (fd < 0) {
			snprintf(msg, cap, "pid %d: %s", (int)pid, errno == ESRCH ? "no such process" : strerror(errno));
			return -errno;
		}
		if (tm->npids == tm->cap_pids) {
			uint32_t nc = tm->cap_pids ? tm->cap_pids * 2 : 16;
			struct tm_pid *np = realloc(tm->pids, nc * sizeof(*np));

			if (!np) {
				close(fd);
				snprintf(msg, cap, "out of memory");
				return -ENOMEM;
			}
			tm->pids = np;
			tm->cap_pids = nc;
		}
		p = &tm->pids[tm->npids++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->pidfd = fd;
		p->uid = uid;
		fresh = true;
	}
	if (why == OOO_TRACK_SESSION)
		p->sessions++;
	else if (why == OOO_TRACK_EXECUTOR)
		p->executors++;
	else if (why == OOO_TRACK_LEASE)
		p->leases++;
	else if (why == OOO_TRACK_OPERATOR) {
		if (p->operator_)
			launches = false; /* already counted */
		else
			p->operator_launches = launches;
		p->operator_ = true;
	}
	if (launches)
		p->launch_refs++;
	filter_update(tm, p);
	if (fresh || !p->scanned || (why == OOO_TRACK_OPERATOR && !p->found)) {
		p->found = libs_scan_pid(tm, pid);
		p->scanned = tm->cuda != NULL;
	}
	pid_attach_all(tm, p);
	snprintf(msg, cap, "pid %d tracked", (int)pid);
	return 0;
}

static void pid_remove(struct telemetry *tm, struct tm_pid *p)
{
	pid_unlink(tm, p);
	filter_delete(tm, p->pid);
	if (p->pidfd >= 0)
		close(p->pidfd);
	*p = tm->pids[--tm->npids];
}

void telemetry_untrack(struct server *srv, pid_t pid, uint32_t why, bool launches)
{
	struct telemetry *tm = srv->tm;
	struct tm_pid *p = tm ? pid_find(tm, pid) : NULL;

	if (!p)
		return;
	if (why == OOO_TRACK_SESSION && p->sessions)
		p->sessions--;
	else if (why == OOO_TRACK_EXECUTOR && p->executors)
		p->executors--;
	else if (why == OOO_TRACK_LEASE && p->leases)
		p->leases--;
	else if (why == OOO_TRACK_OPERATOR) {
		launches = p->operator_ && p->operator_launches;
		p->operator_ = false;
		p->operator_launches = false;
	}
	if (launches && p->launch_refs)
		p->launch_refs--;
	if (!p->sessions && !p->executors && !p->leases && !p->operator_) {
		pid_remove(tm, p);
		return;
	}
	if (!p->launch_refs)
		pid_unlink(tm, p);
	filter_update(tm, p);
}

/* ---- tick: exited processes, new libraries ---------------------------------------- */

static bool pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static void age_map(struct telemetry *tm, int fd, int other_fd)
{
	__u32 key, next, dead[256];
	uint32_t ndead = 0;
	void *prev = NULL;

	if (fd < 0)
		return;
	while (ndead < 256 && bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		/* exited, or (pid filter on) no longer tracked: a live process must not hold a record forever */
		if (!pid_find(tm, (pid_t)key) && (!tm->cfg.all_processes || !pid_alive((pid_t)key)))
			dead[ndead++] = key;
	}
	for (uint32_t i = 0; i < ndead; i++) {
		if (bpf_map_delete_elem(fd, &dead[i]) == 0)
			tm->aged_out++;
		if (other_fd >= 0)
			bpf_map_delete_elem(other_fd, &dead[i]);
	}
}

static void telemetry_tick(struct server *srv, uint64_t now)
{
	struct telemetry *tm = srv->tm;

	if (!tm || tm->state != OOO_TM_RUNNING)
		return;
	arm_poll(srv);
	if (now < tm->next_scan_ns)
		return;
	tm->next_scan_ns = now + TM_SCAN_NS;
	/* tracked pids that exited without being untracked (operator-traced ones) */
	for (uint32_t i = 0; i < tm->npids;) {
		struct pollfd pf = { .fd = tm->pids[i].pidfd, .events = POLLIN };

		if (pf.fd >= 0 && poll(&pf, 1, 0) == 1 && !tm->pids[i].sessions && !tm->pids[i].executors) {
			log_debug("telemetry: traced pid %d exited", (int)tm->pids[i].pid);
			pid_remove(tm, &tm->pids[i]);
			continue;
		}
		i++;
	}
	age_map(tm, tm->cuda ? bpf_map__fd(tm->cuda->maps.procs) : -1,
		tm->sched ? bpf_map__fd(tm->sched->maps.rq) : -1);
	age_map(tm, tm->sched ? bpf_map__fd(tm->sched->maps.rq) : -1, -1);
	/* the library may be installed after oood started, or a process may map a new one */
	libs_discover(tm);
	/* processes that had no libcuda mapped yet (CUDA initialised lazily): a bounded number per scan */
	for (uint32_t k = 0, done = 0; k < tm->npids && done < TM_SCANS_PER_TICK; k++) {
		struct tm_pid *p = &tm->pids[(tm->scan_cursor + k) % tm->npids];

		if (p->found || p->nscans >= TM_MAX_SCANS || (p->executors && !p->sessions && !p->leases && !p->operator_))
			continue;
		p->found = libs_scan_pid(tm, p->pid);
		p->scanned = true;
		p->nscans++;
		done++;
	}
	if (tm->npids)
		tm->scan_cursor = (tm->scan_cursor + TM_SCANS_PER_TICK) % tm->npids;
	/* launch probes that could not be attached before (a library found since, a failure) */
	for (uint32_t i = 0; i < tm->npids; i++)
		pid_attach_all(tm, &tm->pids[i]);
	if (tm->nlibs && !strncmp(tm->reason, "no libcuda", 10))
		tm->reason[0] = '\0';
}

/* ---- admin ----------------------------------------------------------------------------- */

static uint32_t map_count(int fd)
{
	__u32 key, next;
	uint32_t n = 0;
	void *prev = NULL;

	if (fd < 0)
		return 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0 && n < (1u << 21)) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

static ssize_t telemetry_admin_status(struct server *srv, void *buf, size_t cap)
{
	struct telemetry *tm = srv->tm;
	struct ooo_msg_telemetry *t;
	uint64_t now = server_now_ns();

	if (cap < sizeof(*t))
		return -EMSGSIZE;
	t = buf;
	memset(t, 0, sizeof(*t));
	t->state = (uint32_t)tm->state;
	t->cuda = tm->cuda != NULL;
	t->sched = tm->sched != NULL;
	t->all_processes = tm->cfg.all_processes;
	t->launch_probes = (uint32_t)tm->cfg.launch_probes;
	t->nlibs = tm->nlibs;
	t->tracked = tm->npids;
	t->max_tracked = srv->policy->telemetry.max_tracked;
	t->procs = tm->cuda ? map_count(bpf_map__fd(tm->cuda->maps.procs)) : 0;
	t->rq_procs = tm->sched ? map_count(bpf_map__fd(tm->sched->maps.rq)) : 0;
	t->max_procs = tm->cfg.max_processes;
	t->slow_sync_ns = (uint64_t)tm->cfg.slow_sync_us * 1000ull;
	t->events = tm->events;
	t->aged_out = tm->aged_out;
	t->launch_links = tm->launch_links;
	if (tm->cuda || tm->sched) {
		struct ooo_tm_drops d;
		__u32 k = 0;

		if (tm->cuda && !bpf_map_lookup_elem(bpf_map__fd(tm->cuda->maps.drops), &k, &d)) {
			t->ring_full += d.ring_full;
			t->procs_full += d.procs_full;
			t->inflight_lost += d.inflight_lost;
		}
		if (tm->sched && !bpf_map_lookup_elem(bpf_map__fd(tm->sched->maps.drops), &k, &d))
			t->procs_full += d.procs_full;
	}
	snprintf(t->reason, sizeof(t->reason), "%s", tm->reason);
	for (uint32_t i = 0; i < tm->nlibs; i++) {
		snprintf(t->libs[i].path, sizeof(t->libs[i].path), "%s", tm->libs[i].path);
		t->libs[i].dev = (uint64_t)tm->libs[i].dev;
		t->libs[i].ino = (uint64_t)tm->libs[i].ino;
		t->libs[i].probes = tm->libs[i].nlinks;
		t->libs[i].missing = tm->libs[i].missing;
	}
	t->nrecent = tm->nrecent;
	for (uint32_t i = 0; i < tm->nrecent; i++) {
		uint32_t k = (tm->recent_head + OOO_TM_RECENT - 1 - i) % OOO_TM_RECENT;

		t->recent[i] = tm->recent[k];
		/* bpf_ktime_get_ns and CLOCK_MONOTONIC are the same clock */
		t->recent[i].age_ns = now > tm->recent_end_ns[k] ? now - tm->recent_end_ns[k] : 0;
	}
	return sizeof(*t);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Every pid with a record or in the table, sorted, unique. *out is malloc'ed. */
static uint32_t snapshot_pids(struct telemetry *tm, uint32_t **out)
{
	int fds[2] = { tm->cuda ? bpf_map__fd(tm->cuda->maps.procs) : -1,
		       tm->sched ? bpf_map__fd(tm->sched->maps.rq) : -1 };
	uint32_t cap = tm->npids + 2 * tm->cfg.max_processes + 1, n = 0, u = 0;
	uint32_t *v = malloc(cap * sizeof(*v));

	*out = v;
	if (!v)
		return 0;
	for (uint32_t i = 0; i < tm->npids; i++)
		v[n++] = (uint32_t)tm->pids[i].pid;
	for (int m = 0; m < 2; m++) {
		__u32 key, next;
		void *prev = NULL;

		if (fds[m] < 0)
			continue;
		while (n < cap && bpf_map_get_next_key(fds[m], prev, &next) == 0) {
			key = next;
			prev = &key;
			v[n++] = key;
		}
	}
	qsort(v, n, sizeof(*v), cmp_u32);
	for (uint32_t i = 0; i < n; i++) {
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	}
	return u;
}

static void fill_proc(struct telemetry *tm, struct ooo_proc_rec *r, uint32_t pid, uint64_t now)
{
	const struct tm_pid *tp = pid_find(tm, (pid_t)pid);
	struct ooo_tm_proc p;
	struct ooo_tm_rq q;
	char path[32];

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->uid = (uint32_t)proc_uid((pid_t)pid); /* (uid_t)-1 is UINT32_MAX */
	r->track = tp ? pid_track_bits(tp) : 0;
	if (tm->cuda && !bpf_map_lookup_elem(bpf_map__fd(tm->cuda->maps.procs), &pid, &p)) {
		r->have |= 1;
		memcpy(r->comm, p.comm, sizeof(r->comm));
		r->launches = p.launches;
		r->graph_launches = p.graph_launches;
		memcpy(r->syncs, p.syncs, sizeof(r->syncs));
		r->sync_ns = p.sync_ns;
		r->slow_syncs = p.slow_syncs;
		r->allocs = p.allocs;
		r->alloc_failed = p.alloc_failed;
		r->alloc_bytes = p.alloc_bytes;
		r->frees = p.frees;
		r->copies = p.copies;
		r->copy_bytes = p.copy_bytes;
		r->age_ns = p.first_ns && now > p.first_ns ? now - p.first_ns : 0;
		r->idle_ns = p.last_ns && now > p.last_ns ? now - p.last_ns : 0;
		memcpy(r->gap_hist, p.gap_hist, sizeof(r->gap_hist));
		memcpy(r->sync_hist, p.sync_hist, sizeof(r->sync_hist));
	}
	if (tm->sched && !bpf_map_lookup_elem(bpf_map__fd(tm->sched->maps.rq), &pid, &q)) {
		r->have |= 2;
		r->rq_samples = q.samples;
		r->rq_total_ns = q.total_ns;
		r->rq_max_ns = q.max_ns;
		memcpy(r->rq_hist, q.hist, sizeof(r->rq_hist));
	}
	if (!r->comm[0]) {
		/* from /proc: the record was made by a thread we have no name of */
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(r->comm, sizeof(r->comm), f))
				r->comm[strcspn(r->comm, "\n")] = '\0';
			fclose(f);
		}
	}
	r->comm[sizeof(r->comm) - 1] = '\0';
	/* ASCII only: a comm is any 15 bytes the process chose, and must not break a scrape */
	for (char *c = r->comm; *c; c++) {
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	}
}

int telemetry_proc(struct server *srv, pid_t pid, struct ooo_proc_rec *r)
{
	struct telemetry *tm = srv->tm;

	if (!tm || tm->state != OOO_TM_RUNNING || pid <= 0)
		return -ENOENT;
	fill_proc(tm, r, (uint32_t)pid, server_now_ns());
	return r->have ? 0 : -ENOENT;
}

static ssize_t telemetry_admin_procs(struct server *srv, const struct ooo_msg_list_req *req, void *buf, size_t cap)
{
	struct telemetry *tm = srv->tm;
	struct ooo_msg_list hdr = { .rec_size = sizeof(struct ooo_proc_rec) };
	char *out = (char *)buf + sizeof(hdr);
	uint64_t now = server_now_ns();
	uint32_t *pids, n;

	if (cap < sizeof(hdr))
		return -EMSGSIZE;
	n = snapshot_pids(tm, &pids);
	if (!pids)
		return -ENOMEM;
	hdr.total = n;
	hdr.offset = req->offset > n ? n : req->offset;
	for (uint32_t i = hdr.offset; i < n && (hdr.count + 1) * sizeof(struct ooo_proc_rec) <= cap - sizeof(hdr); i++) {
		struct ooo_proc_rec r;

		fill_proc(tm, &r, pids[i], now);
		memcpy(out + hdr.count * sizeof(r), &r, sizeof(r));
		hdr.count++;
	}
	free(pids);
	memcpy(buf, &hdr, sizeof(hdr));
	return (ssize_t)(sizeof(hdr) + hdr.count * sizeof(struct ooo_proc_rec));
}

static int telemetry_admin_trace(struct server *srv, const struct ooo_msg_trace *req, struct ooo_msg_trace_reply *rep)
{
	struct telemetry *tm = srv->tm;
	struct tm_pid *p;
	int r = 0;

	memset(rep, 0, sizeof(*rep));
	rep->pid = req->pid;
	if (tm->state != OOO_TM_RUNNING) {
		snprintf(rep->msg, sizeof(rep->msg), "telemetry is not running: %.200s", tm->reason);
		return -ENOTSUP;
	}
	if (req->op == OOO_TRACE_ADD) {
		r = telemetry_track(srv, (pid_t)req->pid, OOO_TRACK_OPERATOR,
				    tm->cfg.launch_probes != POLICY_LAUNCH_OFF, rep->msg, sizeof(rep->msg));
		if (r < 0)
			return r;
	} else {
		p = pid_find(tm, (pid_t)req->pid);
		if (!p || !p->operator_) {
			snprintf(rep->msg, sizeof(rep->msg), "pid %u is not traced by an operator", req->pid);
			return -ESRCH;
		}
		telemetry_untrack(srv, (pid_t)req->pid, OOO_TRACK_OPERATOR, true);
	}
	p = pid_find(tm, (pid_t)req->pid);
	if (p) {
		rep->track = pid_track_bits(p);
		rep->libs = pid_libs(tm, p);
		snprintf(rep->msg, sizeof(rep->msg), "pid %u tracked; launches probed in %u of %u libcuda files",
			 req->pid, rep->libs, tm->nlibs);
	} else {
		snprintf(rep->msg, sizeof(rep->msg), "pid %u no longer tracked", req->pid);
	}
	return 0;
}

/* ---- the module -------------------------------------------------------------- */

static void on_poll_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	telemetry_on_poll(srv, gen, cqe->res, cqe->flags);
}

static int tm_init(struct server *srv)
{
	int r = telemetry_new(&srv->tm);

	if (r < 0)
		return r;
	r = server_add_op(srv, on_poll_cqe);
	if (r < 0)
		return r;
	srv->tm->op = (uint32_t)r;
	return 0;
}

static int tm_start(struct server *srv)
{
	telemetry_start(srv);
	return 0;
}

static void tm_fini(struct server *srv)
{
	telemetry_free(srv->tm);
	srv->tm = NULL;
}

/* telemetry is best effort: a full pid set does not refuse the session */
static void tm_session_open(struct server *srv, struct session *s)
{
	char msg[OOO_ERRMSG_MAX];
	bool launches = s->tenant->terms.trace_launches;

	if (telemetry_track(srv, (pid_t)s->cred.pid, OOO_TRACK_SESSION, launches, msg, sizeof(msg)) == 0) {
		s->tm_tracked = true;
		s->tm_launches = launches;
	} else {
		log_debug("session %llu: no telemetry: %s", (unsigned long long)s->id, msg);
	}
}

static void tm_session_close(struct server *srv, struct session *s)
{
	if (s->tm_tracked)
		telemetry_untrack(srv, (pid_t)s->cred.pid, OOO_TRACK_SESSION, s->tm_launches);
	s->tm_tracked = false;
}

static ssize_t build_status(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return telemetry_admin_status(srv, buf, cap);
}

static ssize_t build_procs(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return telemetry_admin_procs(srv, payload, buf, cap);
}

static void on_trace(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	const struct peer_cred *cred = server_conn_cred(c);
	struct ooo_msg_trace_reply rep;
	int r = telemetry_admin_trace(srv, payload, &rep);

	if (r < 0) {
		server_reply_error(srv, c, OOO_MSG_TRACE, seq, r, "%s", rep.msg);
		return;
	}
	log_info("oooctl (pid %u uid %u): %s", cred->pid, cred->uid, rep.msg);
	server_reply(srv, c, OOO_MSG_TRACE, seq, &rep, sizeof(rep), -1);
}

static const struct handler tm_handlers[] = {
	{ .type = OOO_MSG_TELEMETRY, .flags = H_ADMIN, .build = build_status },
	{ .type = OOO_MSG_PROCS, .flags = H_ADMIN, .build = build_procs },
	{ .type = OOO_MSG_TRACE, .flags = H_ADMIN, .fn = on_trace },
};

const struct module telemetry_module = {
	.name = "telemetry",
	.init = tm_init,
	.start = tm_start,
	.tick = telemetry_tick,
	.reload = telemetry_reload,
	.session_open = tm_session_open,
	.session_close = tm_session_close,
	.fini = tm_fini,
	.handlers = tm_handlers,
	.nhandlers = sizeof(tm_handlers) / sizeof(tm_handlers[0]),
};
