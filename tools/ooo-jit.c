/* SPDX-License-Identifier: MIT */
/*
 * ooo-jit: the JIT coalescer from the command line.
 *   ooo-jit inspect [--json] FILE.ptx...
 *   ooo-jit fuse [--check] [--arch SM] [--json] [-o OUT.ptx] MEMBER...
 *   ooo-jit print FILE.ptx
 *   ooo-jit fence FILE.ptx KERNEL
 *   ooo-jit fence-check FILE.ptx
 *   ooo-jit bench [--iters N] [--cache DIR] MEMBER...
 * MEMBER is FILE.ptx:KERNEL[*N][@GX[,GY[,GZ]]].
 * Exit: 0 done, 1 not fusible / ptxas refused / check failed, 2 usage, I/O or parse error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../daemon/jit/cache.h"
#include "../daemon/jit/jit.h"
#include "common/args.h"
#include "version.h" /* build/gen: OOO_GIT_REV */
#include "json.h"

#define RC_OK 0
#define RC_FAIL 1
#define RC_USAGE 2
#define MAX_MEMBERS 4096
#define MAX_FILES 256

extern char **environ;

static const char usage_text[] =
	"Usage: ooo-jit COMMAND [OPTIONS] ARGS\n"
	"\n"
	"  inspect [--json] FILE.ptx...\n"
	"      list each kernel: parameters, shared memory, launch bounds, and whether it\n"
	"      can be fused (or the reason it cannot)\n"
	"  fuse [--check] [--arch SM] [--json] [-o OUT.ptx] MEMBER...\n"
	"      write one fused kernel running the members, in order, and print the\n"
	"      descriptor layout. MEMBER is FILE.ptx:KERNEL[*N][@GX[,GY[,GZ]]]: N copies\n"
	"      (default 1) launched with grid GX x GY x GZ (default 1). Repeated kernels\n"
	"      share one body. --check runs ptxas -arch=SM (default: the fused .target)\n"
	"      on the output; ptxas is $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas\n"
	"      or the one on PATH. Without -o the PTX goes to standard output.\n"
	"  print FILE.ptx\n"
	"      parse and print the module back (comments and debug sections dropped)\n"
	"  fence FILE.ptx KERNEL\n"
	"      print the module with KERNEL_ooo_fenced: KERNEL with every global and\n"
	"      generic memory access confined to the tenant's address window (two more\n"
	"      parameters, ooo_fence_base and ooo_fence_mask; a window of 4 GiB or more)\n"
	"      and a trap before it returns if an address was outside; exit 1 with the\n"
	"      reason when the kernel cannot be fenced completely\n"
	"  fence-all FILE.ptx\n"
	"      print the module with every kernel that can be fenced replaced by its\n"
	"      fenced copy (what a fenced executor loads); on standard error how many\n"
	"      were fenced and why each other one cannot be\n"
	"  fence-check FILE.ptx\n"
	"      prove that every *_ooo_fenced entry reaches memory only through addresses\n"
	"      its guards confined to the window; exit 1 naming the first that does not\n"
	"  bench [--iters N] [--cache DIR] MEMBER...\n"
	"      time parsing, fusing (per member) and a cache hit, memory and disk\n"
	"\n"
	"Options: -h, --help (this text), --version (print the version).\n"
	"\n"
	"Exit status: 0 done; 1 not fusible, not fenceable, or ptxas refused the\n"
	"output; 2 usage error, or a file that cannot be read or parsed.\n";

static void usage(FILE *f) { fputs(usage_text, f); }

/* "ooo-jit: MESSAGE" and "Try 'ooo-jit --help'." on stderr; returns RC_USAGE. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ooo-jit: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'ooo-jit --help'.\n", stderr);
	return RC_USAGE;
}

/* The usage error of getopt_long's '?' (opterr is 0: it printed nothing). */
static int bad_option(char **argv)
{
	return usage_error("bad option '%s' (unknown, or without its argument)", argv[optind - 1]);
}

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > JIT_MAX_PTX_BYTES) {
		if (!errno || S_ISREG(st.st_mode))
			errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

struct file {
	const char *path;
	struct ptx_module *mod;
};

static struct file files[MAX_FILES];
static size_t nfiles;

/* Parse a file once; NULL after printing why. */
static struct ptx_module *load(const char *path)
{
	char err[512];
	size_t len;
	char *text;
	int rc;

	for (size_t i = 0; i < nfiles; i++)
		if (strcmp(files[i].path, path) == 0)
			return files[i].mod;
	if (nfiles == MAX_FILES) {
		fprintf(stderr, "ooo-jit: more than %d files\n", MAX_FILES);
		return NULL;
	}
	if (!(text = slurp(path, &len))) {
		fprintf(stderr, "ooo-jit: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	rc = ptx_parse(text, len, &files[nfiles].mod, err, sizeof(err));
	free(text);
	if (rc < 0) {
		fprintf(stderr, "ooo-jit: %s: %s\n", path, err[0] ? err : strerror(-rc));
		return NULL;
	}
	files[nfiles].path = path;
	return files[nfiles++].mod;
}

static void unload_all(void)
{
	for (size_t i = 0; i < nfiles; i++)
		ptx_module_free(files[i].mod);
	nfiles = 0;
}

/* ---- inspect ---------------------------------------------------------- */

static void inspect_text(const char *path, const struct ptx_module *m)
{
	printf("%s: .version %s, .target %s, %zu kernel%s\n", path, ptx_version(m), ptx_target(m),
	       ptx_kernel_count(m), ptx_kernel_count(m) == 1 ? "" : "s");
	for (size_t i = 0; i < ptx_kernel_count(m); i++) {
		const struct ptx_kernel *k = ptx_kernel_at(m, i);

		if (k->fusible)
			printf("kernel %s: fusible\n", k->name);
		else
			printf("kernel %s: not fusible: %s\n", k->name, k->reason);
		printf("    params %" PRIu32 " (%" PRIu32 " bytes):", k->nparams, k->param_bytes);
		for (uint32_t j = 0; j < k->nparams; j++)
			printf(" %s@%" PRIu32 "/%" PRIu32 "%s", k->params[j].name, k->params[j].offset, k->params[j].size,
			       k->params[j].is_ptr ? "*" : "");
		printf("\n    static shared %" PRIu32 " bytes, dynamic shared %s\n", k->static_smem,
		       k->dynamic_smem ? "yes" : "no");
		if (k->maxntid[0])
			printf("    .maxntid %u, %u, %u\n", k->maxntid[0], k->maxntid[1], k->maxntid[2]);
		if (k->reqntid[0])
			printf("    .reqntid %u, %u, %u\n", k->reqntid[0], k->reqntid[1], k->reqntid[2]);
		if (k->minnctapersm)
			printf("    .minnctapersm %u\n", k->minnctapersm);
		if (k->maxnreg)
			printf("    .maxnreg %u\n", k->maxnreg);
	}
}

static void dims_json(const char *key, const uint32_t d[3])
{
	if (!d[0]) {
		j_null(key);
		return;
	}
	j_arr(key);
	for (int i = 0; i < 3; i++)
		j_u64(NULL, d[i]);
	j_arr_end();
}

static void inspect_json(const char *path, const struct ptx_module *m)
{
	j_obj(NULL);
	j_str("file", path);
	j_str("version", ptx_version(m));
	j_str("target", ptx_target(m));
	j_arr("kernels");
	for (size_t i = 0; i < ptx_kernel_count(m); i++) {
		const struct ptx_kernel *k = ptx_kernel_at(m, i);

		j_obj(NULL);
		j_str("name", k->name);
		j_bool("fusible", k->fusible);
		j_str("reason", k->fusible ? NULL : k->reason);
		j_u64("param_bytes", k->param_bytes);
		j_arr("params");
		for (uint32_t p = 0; p < k->nparams; p++) {
			j_obj(NULL);
			j_str("name", k->params[p].name);
			j_u64("offset", k->params[p].offset);
			j_u64("size", k->params[p].size);
			j_u64("align", k->params[p].align);
			j_bool("pointer", k->params[p].is_ptr);
			j_obj_end();
		}
		j_arr_end();
		j_u64("static_smem", k->static_smem);
		j_bool("dynamic_smem", k->dynamic_smem);
		dims_json("maxntid", k->maxntid);
		dims_json("reqntid", k->reqntid);
		j_u64("minnctapersm", k->minnctapersm);
		j_u64("maxnreg", k->maxnreg);
		j_obj_end();
	}
	j_arr_end();
	j_obj_end();
}

static int cmd_inspect(int argc, char **argv)
{
	bool json = false;
	int rc = RC_OK, c;
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
					      { 0, 0, 0, 0 } };

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h') {
			usage(stdout);
			return RC_OK;
		} else
			return bad_option(argv);
	}
	if (optind >= argc) {
		return usage_error("inspect: no PTX file given");
	}
	if (json)
		j_arr(NULL);
	for (int i = optind; i < argc; i++) {
		struct ptx_module *m = load(argv[i]);

		if (!m) {
			rc = RC_USAGE;
			continue;
		}
		if (json)
			inspect_json(argv[i], m);
		else
			inspect_text(argv[i], m);
	}
	if (json) {
		j_arr_end();
		putchar('\n');
	}
	return rc;
}

/* ---- members ---------------------------------------------------------- */

struct member {
	const struct ptx_module *mod;
	const struct ptx_kernel *k;
	uint32_t count;
	uint32_t grid[3];
	bool grid_given;
	uint32_t body;
};

static int parse_u32(const char *s, char **end, uint32_t *v)
{
	unsigned long x;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -1;
	x = strtoul(s, end, 10);
	if (errno || x == 0 || x > 0x7fffffffu)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int parse_member(char *arg, struct member *mb)
{
	char *at = strrchr(arg, '@'), *star, *colon, *end;

	mb->count = 1;
	mb->grid[0] = mb->grid[1] = mb->grid[2] = 1;
	mb->grid_given = false;
	if (at) {
		char *p = at + 1;

		*at = '\0';
		for (int i = 0; i < 3; i++) {
			if (parse_u32(p, &end, &mb->grid[i]) < 0)
				goto bad;
			if (*end == '\0')
				break;
			if (*end != ',' || i == 2)
				goto bad;
			p = end + 1;
		}
		mb->grid_given = true;
	}
	star = strrchr(arg, '*');
	if (star) {
		*star = '\0';
		if (parse_u32(star + 1, &end, &mb->count) < 0 || *end || mb->count > MAX_MEMBERS)
			goto bad;
	}
	colon = strrchr(arg, ':');
	if (!colon || colon == arg || !colon[1])
		goto bad;
	*colon = '\0';
	if (!(mb->mod = load(arg)))
		return -ENOENT;
	if (!(mb->k = ptx_kernel_find(mb->mod, colon + 1))) {
		fprintf(stderr, "ooo-jit: %s: no kernel %s\n", arg, colon + 1);
		return -ENOENT;
	}
	return 0;
bad:
	fprintf(stderr, "ooo-jit: bad member (want FILE.ptx:KERNEL[*N][@GX[,GY[,GZ]]])\n");
	return -EINVAL;
}

/* Members -> distinct bodies. */
static int collect(int argc, char **argv, struct member *mbs, size_t *nmb, struct jit_body *bodies, size_t *nb)
{
	size_t total = 0;

	*nmb = *nb = 0;
	for (int i = 0; i < argc; i++) {
		struct member *mb = &mbs[*nmb];
		int rc;

		if (*nmb == MAX_MEMBERS) {
			fprintf(stderr, "ooo-jit: more than %d members\n", MAX_MEMBERS);
			return RC_USAGE;
		}
		if ((rc = parse_member(argv[i], mb)) < 0)
			return RC_USAGE;
		total += mb->count;
		if (total > MAX_MEMBERS) {
			fprintf(stderr, "ooo-jit: more than %d member launches\n", MAX_MEMBERS);
			return RC_USAGE;
		}
		if (!mb->k->fusible) {
			fprintf(stderr, "ooo-jit: member %d (%s): not fusible: %s\n", i, mb->k->name, mb->k->reason);
			return RC_FAIL;
		}
		mb->body = UINT32_MAX;
		for (size_t b = 0; b < *nb; b++)
			if (memcmp(ptx_kernel_find(bodies[b].mod, bodies[b].kernel)->hash, mb->k->hash, 32) == 0)
				mb->body = (uint32_t)b;
		if (mb->body == UINT32_MAX) {
			if (*nb == JIT_MAX_BODIES) {
				fprintf(stderr, "ooo-jit: more than %u distinct kernels\n", JIT_MAX_BODIES);
				return RC_USAGE;
			}
			bodies[*nb] = (struct jit_body){ .mod = mb->mod, .kernel = mb->k->name };
			mb->body = (uint32_t)(*nb)++;
		}
		(*nmb)++;
	}
	return RC_OK;
}

/* ---- fuse -------------------------------------------------------------- */

static const char *find_ptxas(char *buf, size_t len)
{
	const char *home = getenv("CUDA_HOME");

	if (home && *home) {
		snprintf(buf, len, "%s/bin/ptxas", home);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
		return "/usr/local/cuda/bin/ptxas";
	return "ptxas"; /* PATH */
}

static int run_ptxas(const char *arch, const char *path)
{
	char pbuf[4096], abuf[64];
	const char *ptxas = find_ptxas(pbuf, sizeof(pbuf));
	char *args[] = { (char *)ptxas, abuf, (char *)path, "-o", "/dev/null", NULL };
	pid_t pid;
	int st, rc;

	snprintf(abuf, sizeof(abuf), "-arch=%s", arch);
	rc = posix_spawnp(&pid, ptxas, NULL, NULL, args, environ);
	if (rc) {
		fprintf(stderr, "ooo-jit: cannot run %s: %s\n", ptxas, strerror(rc));
		return RC_USAGE;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return RC_USAGE;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "ooo-jit: ptxas -arch=%s refused %s\n", arch, path);
		return RC_FAIL;
	}
	return RC_OK;
}

static int write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		done += (size_t)n;
	}
	return close(fd) < 0 ? -errno : 0;
}

static int cmd_fuse(int argc, char **argv)
{
	static struct member mbs[MAX_MEMBERS];
	static struct jit_desc_launch launches[MAX_MEMBERS];
	struct jit_body bodies[JIT_MAX_BODIES];
	const char *outp = NULL, *arch = NULL;
	bool check = false, json = false;
	size_t nmb, nb, nl = 0, need = 0;
	struct jit_fused *fz = NULL;
	char err[512], tmp[64] = "";
	uint8_t *desc = NULL, zeros[32768] = { 0 };
	uint32_t total = 0;
	long dsize;
	int rc, c;
	static const struct option opts[] = { { "check", no_argument, NULL, 'c' },   { "arch", required_argument, NULL, 'a' },
					      { "json", no_argument, NULL, 'j' },    { "output", required_argument, NULL, 'o' },
					      { "help", no_argument, NULL, 'h' },    { 0, 0, 0, 0 } };

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': check = true; break;
		case 'a': arch = optarg; break;
		case 'j': json = true; break;
		case 'o': outp = optarg; break;
		case 'h': usage(stdout); return RC_OK;
		default: return bad_option(argv);
		}
	}
	if (optind >= argc) {
		return usage_error("fuse: no member given");
	}
	if ((rc = collect(argc - optind, argv + optind, mbs, &nmb, bodies, &nb)) != RC_OK)
		return rc;
	rc = jit_fuse(bodies, nb, &fz, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "ooo-jit: %s\n", err[0] ? err : strerror(-rc));
		return rc == -EINVAL ? RC_FAIL : RC_USAGE;
	}
	for (size_t i = 0; i < nmb; i++)
		for (uint32_t j = 0; j < mbs[i].count; j++)
			launches[nl++] = (struct jit_desc_launch){ .body = mbs[i].body,
								   .grid = { mbs[i].grid[0], mbs[i].grid[1], mbs[i].grid[2] },
								   .params = zeros,
								   .param_size = mbs[i].k->param_bytes };
	jit_desc_build(launches, nl, NULL, 0, NULL, &need);
	desc = malloc(need ? need : 1);
	dsize = desc ? jit_desc_build(launches, nl, desc, need, &total, NULL) : -ENOMEM;
	if (dsize < 0) {
		fprintf(stderr, "ooo-jit: descriptor: %s\n", strerror((int)-dsize));
		rc = RC_USAGE;
		goto out;
	}
	if (outp) {
		if ((rc = write_file(outp, fz->ptx, fz->ptx_len)) < 0) {
			fprintf(stderr, "ooo-jit: %s: %s\n", outp, strerror(-rc));
			rc = RC_USAGE;
			goto out;
		}
	} else if (!json) {
		fwrite(fz->ptx, 1, fz->ptx_len, stdout);
	}
	rc = RC_OK;
	if (check) {
		const char *path = outp;
		char target[32] = "sm_90";

		if (!path) {
			int fd;

			snprintf(tmp, sizeof(tmp), "/tmp/ooo-jit-XXXXXX.ptx");
			fd = mkostemps(tmp, 4, O_CLOEXEC);
			if (fd < 0 || write(fd, fz->ptx, fz->ptx_len) != (ssize_t)fz->ptx_len) {
				fprintf(stderr, "ooo-jit: temporary file: %s\n", strerror(errno));
				if (fd >= 0)
					close(fd);
				rc = RC_USAGE;
				goto out;
			}
			close(fd);
			path = tmp;
		}
		if (!arch) {
			const char *t = strstr(fz->ptx, "\n.target ");

			if (t && sscanf(t, "\n.target %31s", target) == 1)
				arch = target;
			else
				arch = "sm_90";
		}
		rc = run_ptxas(arch, path);
	}
	/* the layout goes to stderr when the PTX went to stdout */
	{
		FILE *o = (outp || json) ? stdout : stderr;
		const uint8_t *p = desc;

		if (json) {
			j_obj(NULL);
			j_str("entry", fz->entry);
			j_str("output", outp);
			j_bool("checked", check && rc == RC_OK);
			j_u64("bodies", fz->nbodies);
			j_u64("static_smem", fz->static_smem);
			j_bool("dynamic_smem", fz->dynamic_smem);
			j_bool("chain", fz->chain);
			j_u64("descriptor_bytes", (uint64_t)dsize);
			j_u64("total_blocks", total);
			j_arr("members");
		} else {
			fprintf(o, "fused %s: %u bod%s, %zu member%s, static shared %" PRIu32 " bytes%s\n", fz->entry,
				fz->nbodies, fz->nbodies == 1 ? "y" : "ies", nl, nl == 1 ? "" : "s", fz->static_smem,
				fz->dynamic_smem ? ", dynamic shared: the largest member's" : "");
			fprintf(o, "descriptor: %ld bytes: header %zu, members at %zu (%zu each), launch grid (%" PRIu32
				   ",1,1)%s\n",
				dsize, sizeof(struct ooo_jit_desc_hdr), sizeof(struct ooo_jit_desc_hdr),
				sizeof(struct ooo_jit_desc_member), total,
				fz->chain ? "; members may be chained" : "");
			fprintf(o, "  %-6s %-4s %-12s %-22s %-10s %-10s %s\n", "member", "body", "blocks", "grid",
				"param_off", "param_size", "kernel");
		}
		for (size_t i = 0; i < nl; i++) {
			struct ooo_jit_desc_member d;
			const struct ptx_kernel *k = ptx_kernel_find(bodies[launches[i].body].mod,
								     bodies[launches[i].body].kernel);
			char blocks[32], grid[40];

			memcpy(&d, p + sizeof(struct ooo_jit_desc_hdr) + i * sizeof(d), sizeof(d));
			snprintf(blocks, sizeof(blocks), "%" PRIu32 "..%" PRIu64, d.block_start,
				 (uint64_t)d.block_start + (uint64_t)d.grid_x * d.grid_y * d.grid_z - 1);
			snprintf(grid, sizeof(grid), "%" PRIu32 ",%" PRIu32 ",%" PRIu32, d.grid_x, d.grid_y, d.grid_z);
			if (json) {
				j_obj(NULL);
				j_u64("body", d.body);
				j_str("kernel", k->name);
				j_u64("block_start", d.block_start);
				j_arr("grid");
				j_u64(NULL, d.grid_x);
				j_u64(NULL, d.grid_y);
				j_u64(NULL, d.grid_z);
				j_arr_end();
				j_u64("param_off", d.param_off);
				j_u64("param_size", d.param_size);
				j_obj_end();
			} else {
				fprintf(o, "  %-6zu %-4" PRIu32 " %-12s %-22s %-10" PRIu32 " %-10" PRIu32 " %s\n", i, d.body,
					blocks, grid, d.param_off, d.param_size, k->name);
			}
		}
		if (json) {
			j_arr_end();
			j_obj_end();
			putchar('\n');
		}
	}
out:
	if (tmp[0])
		unlink(tmp);
	free(desc);
	jit_fused_free(fz);
	return rc;
}

/* ---- print ------------------------------------------------------------- */

static int cmd_print(int argc, char **argv)
{
	struct jit_buf b = { 0 };
	struct ptx_module *m;
	int rc;

	if (argc != 2 || argv[1][0] == '-') {
		if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			usage(stdout);
			return RC_OK;
		}
		return usage_error("print: want exactly one PTX file");
	}
	if (!(m = load(argv[1])))
		return RC_USAGE;
	rc = ptx_print(m, &b);
	if (rc < 0) {
		fprintf(stderr, "ooo-jit: print: %s\n", strerror(-rc));
		jit_buf_free(&b);
		return RC_USAGE;
	}
	fwrite(b.data, 1, b.len, stdout);
	jit_buf_free(&b);
	return RC_OK;
}

static int cmd_fence(int argc, char **argv)
{
	struct jit_buf b = { 0 };
	struct ptx_module *m;
	char err[512];
	int rc;

	if (argc != 3) {
		return usage_error("fence: want FILE.ptx KERNEL");
	}
	if (!(m = load(argv[1])))
		return RC_USAGE;
	rc = jit_fence(m, argv[2], &b, err, sizeof(err));
	if (rc == -EINVAL) {
		fprintf(stderr, "ooo-jit: fence: %s\n", err);
		jit_buf_free(&b);
		return RC_FAIL;
	}
	if (rc < 0) {
		fprintf(stderr, "ooo-jit: fence: %s\n", strerror(-rc));
		jit_buf_free(&b);
		return RC_USAGE;
	}
	fwrite(b.data, 1, b.len, stdout);
	jit_buf_free(&b);
	return RC_OK;
}

static int cmd_fence_all(int argc, char **argv)
{
	struct jit_buf b = { 0 }, why = { 0 };
	struct ptx_module *m;
	unsigned n = 0;
	char err[512];
	int rc;

	if (argc != 2) {
		return usage_error("fence-all: want FILE.ptx");
	}
	if (!(m = load(argv[1])))
		return RC_USAGE;
	rc = jit_fence_all(m, &b, &n, &why, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "ooo-jit: fence-all: %s\n", rc == -EINVAL ? err : strerror(-rc));
		jit_buf_free(&b);
		jit_buf_free(&why);
		return rc == -EINVAL ? RC_FAIL : RC_USAGE;
	}
	fwrite(b.data, 1, b.len, stdout);
	fprintf(stderr, "ooo-jit: fence-all: %u of %zu kernels fenced\n", n, ptx_kernel_count(m));
	if (why.len)
		fprintf(stderr, "%.*s", (int)why.len, why.data);
	jit_buf_free(&b);
	jit_buf_free(&why);
	return RC_OK;
}

static int cmd_fence_check(int argc, char **argv)
{
	char err[512], *text;
	unsigned n = 0;
	size_t len;
	int rc;

	if (argc != 2) {
		return usage_error("fence-check: want one PTX file");
	}
	if (!(text = slurp(argv[1], &len))) {
		fprintf(stderr, "ooo-jit: %s: %s\n", argv[1], strerror(errno));
		return RC_USAGE;
	}
	rc = jit_fence_check(text, len, &n, err, sizeof(err));
	free(text);
	if (rc < 0) {
		fprintf(stderr, "ooo-jit: fence-check: %s: %s\n", argv[1], rc == -EINVAL ? err : strerror(-rc));
		return rc == -EINVAL ? RC_FAIL : RC_USAGE;
	}
	printf("%s: %u fenced entr%s, every memory access guarded\n", argv[1], n, n == 1 ? "y" : "ies");
	return RC_OK;
}

/* ---- bench ------------------------------------------------------------- */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n ? v[n / 2] : 0;
}

static int cmd_bench(int argc, char **argv)
{
	static struct member mbs[MAX_MEMBERS];
	struct jit_body bodies[JIT_MAX_BODIES];
	const char *cache_dir = NULL;
	int iters = 50, c, rc = RC_OK;
	size_t nmb, nb, ptx_bytes = 0;
	double *t_parse = NULL, *t_fuse = NULL, *t_mem = NULL, *t_disk = NULL;
	static const struct option opts[] = { { "iters", required_argument, NULL, 'i' },
					      { "cache", required_argument, NULL, 'c' },
					      { "help", no_argument, NULL, 'h' },
					      { 0, 0, 0, 0 } };

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'i') {
			uint64_t v;

			if (args_u64(optarg, 10, 1, 100000, &v) < 0)
				return usage_error("bench: --iters wants 1..100000, not '%s'", optarg);
			iters = (int)v;
		} else if (c == 'c') {
			cache_dir = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return RC_OK;
		} else {
			return bad_option(argv);
		}
	}
	if (optind >= argc) {
		return usage_error("bench: no member given");
	}
	if ((rc = collect(argc - optind, argv + optind, mbs, &nmb, bodies, &nb)) != RC_OK)
		return rc;
	t_parse = calloc((size_t)iters, sizeof(double));
	t_fuse = calloc((size_t)iters, sizeof(double));
	t_mem = calloc((size_t)iters, sizeof(double));
	t_disk = calloc((size_t)iters, sizeof(double));
	if (!t_parse || !t_fuse || !t_mem || !t_disk) {
		rc = RC_USAGE;
		goto out;
	}
	/* parse: every distinct file, from its text */
	for (int i = 0; i < iters; i++) {
		double t0 = now_us();

		ptx_bytes = 0;
		for (size_t f = 0; f < nfiles; f++) {
			size_t len;
			char *text = slurp(files[f].path, &len);
			struct ptx_module *m = NULL;

			if (!text || ptx_parse(text, len, &m, NULL, 0) < 0) {
				free(text);
				fprintf(stderr, "ooo-jit bench: %s: cannot parse\n", files[f].path);
				rc = RC_USAGE;
				goto out;
			}
			ptx_bytes += len;
			free(text);
			ptx_module_free(m);
		}
		t_parse[i] = now_us() - t0;
	}
	for (int i = 0; i < iters; i++) {
		struct jit_fused *fz = NULL;
		char err[256];
		double t0 = now_us();

		if (jit_fuse(bodies, nb, &fz, err, sizeof(err)) < 0) {
			fprintf(stderr, "ooo-jit bench: %s\n", err);
			rc = RC_FAIL;
			goto out;
		}
		t_fuse[i] = now_us() - t0;
		jit_fused_free(fz);
	}
	/* cache hits: memory, then disk (a fresh cache each time, so memory is cold) */
	{
		struct jit_fused *fz = NULL;
		struct jit_cache *mc = NULL;
		struct jit_cache_opts mo = { .mem_max_bytes = 64u << 20, .mem_max_entries = 64 };
		char err[256];

		if (jit_fuse(bodies, nb, &fz, err, sizeof(err)) < 0 || jit_cache_open(&mo, &mc) < 0 ||
		    jit_cache_put(mc, fz->key, fz->ptx, fz->ptx_len) < 0) {
			fprintf(stderr, "ooo-jit bench: memory cache set-up failed\n");
			jit_cache_close(mc);
			jit_fused_free(fz);
			rc = RC_USAGE;
			goto out;
		}
		for (int i = 0; i < iters; i++) {
			void *blob;
			size_t len;
			double t0 = now_us();

			if (jit_cache_get(mc, fz->key, &blob, &len) == 0)
				free(blob);
			t_mem[i] = now_us() - t0;
		}
		jit_cache_close(mc);
		if (cache_dir) {
			struct jit_cache_opts d = { .dir = cache_dir, .err = err, .errlen = sizeof(err) };
			struct jit_cache *dc = NULL;

			if (jit_cache_open(&d, &dc) < 0 || jit_cache_put(dc, fz->key, fz->ptx, fz->ptx_len) < 0) {
				fprintf(stderr, "ooo-jit bench: disk cache %s: %s\n", cache_dir, err);
				jit_cache_close(dc);
				jit_fused_free(fz);
				rc = RC_USAGE;
				goto out;
			}
			jit_cache_close(dc);
			for (int i = 0; i < iters; i++) {
				void *blob;
				size_t len;
				double t0 = now_us();

				dc = NULL;
				if (jit_cache_open(&d, &dc) == 0 && jit_cache_get(dc, fz->key, &blob, &len) == 0)
					free(blob);
				jit_cache_close(dc);
				t_disk[i] = now_us() - t0;
			}
		}
		jit_fused_free(fz);
	}
	{
		size_t launches = 0;

		for (size_t i = 0; i < nmb; i++)
			launches += mbs[i].count;
		printf("ooo-jit bench: %zu file%s (%zu bytes of PTX), %zu bod%s, %zu member launch%s, %d iterations "
		       "(medians)\n",
		       nfiles, nfiles == 1 ? "" : "s", ptx_bytes, nb, nb == 1 ? "y" : "ies", launches,
		       launches == 1 ? "" : "es", iters);
		printf("  %-34s %10.1f us\n", "parse (all files)", median(t_parse, iters));
		printf("  %-34s %10.1f us  (%.1f us per body)\n", "fuse", median(t_fuse, iters),
		       median(t_fuse, iters) / (double)nb);
		printf("  %-34s %10.2f us\n", "cache hit, memory", median(t_mem, iters));
		if (cache_dir)
			printf("  %-34s %10.1f us\n", "cache hit, disk (open + read)", median(t_disk, iters));
	}
out:
	free(t_parse);
	free(t_fuse);
	free(t_mem);
	free(t_disk);
	return rc;
}

int main(int argc, char **argv)
{
	int rc;

	opterr = 0; /* the commands report bad options themselves (bad_option) */
	if (argc < 2)
		return usage_error("no command given");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return RC_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("ooo-jit %s (git %s)\n", OOO_VERSION_STRING, OOO_GIT_REV);
		return RC_OK;
	}
	if (!strcmp(argv[1], "inspect"))
		rc = cmd_inspect(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "fuse"))
		rc = cmd_fuse(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "print"))
		rc = cmd_print(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "fence"))
		rc = cmd_fence(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "fence-all"))
		rc = cmd_fence_all(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "fence-check"))
		rc = cmd_fence_check(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "bench"))
		rc = cmd_bench(argc - 1, argv + 1);
	else if (argv[1][0] == '-')
		rc = usage_error("unknown option '%s'", argv[1]);
	else
		rc = usage_error("unknown command '%s'", argv[1]);
	unload_all();
	return rc;
}
