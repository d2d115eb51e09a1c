/* SPDX-License-Identifier: MIT */
/*
 * SM partitions with CUDA green contexts (see partition.h for the API).
 *
 * How a set is made. The CUDA 12.4-13.0 driver API splits an SM resource
 * with cuDevSmResourceSplitByCount into groups of one size only, and its
 * outputs "cannot be split again without first creating a descriptor and
 * a green context" (cuda.h, cuDevSmResourceSplitByCount). But
 * cuDevResourceGenerateDesc takes several SM resources that are "outputs
 * (whether result or remaining) from the same split API instance". So the
 * device is split once into groups of the smallest size the driver allows
 * (minCount 1, rounded up by the driver to the granule: 8 SMs on sm_90, 2
 * with CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING), each partition is
 * a descriptor of consecutive groups, and the shared partition gets the
 * groups nobody asked for plus the split's remainder (the SMs that fit in
 * no group: 132 SMs in 8-SM groups leave 4 or more). part_resize moves
 * groups between one partition and the shared one, with new descriptors
 * from the same split. (CUDA 13.1's cuDevSmResourceSplit takes groups of
 * different sizes in one call; the 13.0 headers this builds with do not
 * declare it, and the single split above does the same job.)
 *
 * The facts the executor relies on, and where they come from (cuda.h of
 * CUDA 13.0, /usr/local/cuda/include, unless said otherwise):
 *
 * 1. Kernels of primary-context modules launch on green streams.
 *    cuCtxFromGreenCtx: "The API converts a green context into the primary
 *    context ... the converted context is a normal primary context but
 *    with the resources of the specified green context". The newer driver
 *    documentation of the same call (cuda-python bindings, CUDA 13.x
 *    text): "treated as if it were a primary context, while still honoring
 *    the resources ... For APIs whose semantics are independent of green
 *    context resources, the operation is performed identically to how it
 *    would perform with a primary context. For APIs whose behavior depends
 *    on green context resources (for example, kernel launch), the
 *    operation is performed using the resources ... This call does not
 *    create a new independent context". A CUmodule (and its CUfunctions)
 *    belongs to a context, and the green context's context is the primary
 *    one: a CUfunction from cuModuleGetFunction on a module loaded with
 *    cuModuleLoadDataEx in the primary context is launched with
 *    cuLaunchKernel on part_stream(i). No per-partition module load.
 *    If a driver ever refuses that (tests/gpu/green_check says, check b),
 *    the context-independent path is cuLibraryLoadData + cuLibraryGetKernel
 *    and the CUkernel cast to CUfunction for cuLaunchKernel: "the context
 *    to launch the kernel on will either be taken from the specified
 *    stream hStream or the current context" (cuLaunchKernel), or
 *    cuKernelGetFunction with part_ctx(i) current for a CUfunction of that
 *    context (all four are CUDA 12.0 functions; green_check resolves them
 *    itself and checks that path too, check g).
 * 2. Memory is the primary context's: same context, same address space.
 *    cuMemAlloc memory of the primary context and VMM mappings
 *    (cuMemCreate/cuMemMap/cuMemSetAccess with a device location, which
 *    is per device anyway) are used by kernels on green streams unchanged
 *    (green_check, check c).
 * 3. Events cross. cuStreamWaitEvent: "hEvent may be from a different
 *    context or device than hStream"; cuEventQuery takes any event. An
 *    event created in the primary context is recorded on a green stream
 *    (cuEventRecord needs event and stream "from the same context", and
 *    the green one is the primary one; cuGreenCtxRecordEvent likewise
 *    needs them "from the same primary context"). cuCtxSynchronize of the
 *    primary context "green contexts that have been created will also be
 *    synchronized"; cuCtxRecordEvent of the primary context captures "all
 *    the activities of the primary context and its green contexts".
 *    (green_check, check d.)
 * 4. Isolation is one-way. A kernel on a green stream runs on that green
 *    context's SMs ("it is possible for the workload to run on more SMs
 *    than was provisioned (but never less)": MPS with
 *    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and on 9.x a loaded module with
 *    dynamic parallelism adds 2 shared SMs). Work on primary-context
 *    streams is not confined and runs on every SM, the green contexts'
 *    included (observed with %smid on sm_120, NVIDIA developer forum
 *    thread "Green-context SM provisioning vs the primary context"). Hence
 *    the shared partition is a green context too, not the primary context.
 *    Disjoint partitions still share memory bandwidth, L2, copy engines
 *    and hardware queues ("not guaranteed that the kernels launched in
 *    them will run concurrently or have forward progress guarantees ...
 *    HW connections, see CUDA_DEVICE_MAX_CONNECTIONS").
 * 5. cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) reports the device, not
 *    the partition (verified on the H200): part_sms() comes from
 *    cuGreenCtxGetDevResource of each green context.
 * 6. Lifetimes. cuGreenCtxCreate retains the primary context, released
 *    by cuGreenCtxDestroy, which "does not destroy streams created via
 *    cuGreenCtxStreamCreate ... Users must explicitly destroy all such
 *    streams before invoking cuGreenCtxDestroy". The streams need
 *    CU_STREAM_NON_BLOCKING; cuGreenCtxStreamCreate "ignores the context
 *    that is current to the calling thread"; priorities are clamped to
 *    cuCtxGetStreamPriorityRange's. CU_GREEN_CTX_DEFAULT_STREAM is
 *    "Required" by cuGreenCtxCreate in CUDA 12.x/13.0.
 * 7. Threads: "a green context can be current to only one thread at a
 *    time. There is no internal synchronization to make API calls
 *    accessing the same green context from multiple threads work."
 */
#include "partition.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct part {
	CUgreenCtx green;
	CUcontext ctx;
	CUstream st[PART_STREAMS]; /* st[0] is part_stream()'s */
	int stp[PART_STREAMS];     /* the priority st[k] was made with */
	uint32_t sms;
	int prio;
};

struct partition_set {
	const struct cuda_api *api;
	CUdevice dev;
	uint32_t n;            /* requested partitions; p[n] is the shared one */
	uint32_t ngroups;
	CUdevResource *groups; /* the one split of the device */
	uint32_t *owner;       /* owner[g]: the partition holding group g */
	CUdevResource rem;     /* the split's remainder, always the shared partition's */
	bool has_rem;
	uint32_t granule;
	uint32_t total;        /* SMs of the groups and the remainder */
	uint32_t nstreams;     /* streams of every partition (part_set_streams; 1 at first) */
	bool has_sprio;        /* stream k gets sprio[k], not its partition's priority */
	int sprio[PART_STREAMS];
	struct part p[];
};

static bool have_green(const struct cuda_api *api)
{
	return api->p_cuDeviceGetDevResource && api->p_cuDevSmResourceSplitByCount &&
	       api->p_cuDevResourceGenerateDesc && api->p_cuGreenCtxCreate && api->p_cuGreenCtxDestroy &&
	       api->p_cuGreenCtxGetDevResource && api->p_cuCtxFromGreenCtx && api->p_cuGreenCtxStreamCreate;
}

/* "WHAT: CUDA_ERROR_...(N): text" into why; returns err. */
static int drv_fail(const struct cuda_api *api, CUresult r, const char *what, int err, char *why, size_t cap)
{
	char e[160];

	snprintf(why, cap, "%s: %s", what, cuda_strerror(api, r, e, sizeof(e)));
	return err;
}

/* Split the device into groups of the smallest size. On success the caller frees *groups. */
static int split_device(const struct cuda_api *api, CUdevice dev, bool fine, CUdevResource **groups,
			uint32_t *ngroups, CUdevResource *rem, uint32_t *granule, uint32_t *total, char *why,
			size_t cap)
{
	unsigned int flags = fine ? CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING : 0;
	unsigned int nb = 0, got, mincount = 0;
	CUdevResource whole;
	CUdevResource *g;
	uint32_t sum = 0, gmin = UINT32_MAX;
	CUresult r;

	if (!have_green(api)) {
		snprintf(why, cap, "the driver (CUDA %d.%d) has no green contexts: they need CUDA 12.5 or newer",
			 api->driver_version / 1000, api->driver_version % 1000 / 10);
		return -ENOTSUP;
	}
	memset(&whole, 0, sizeof(whole));
	memset(rem, 0, sizeof(*rem));
	r = api->p_cuDeviceGetDevResource(dev, &whole, CU_DEV_RESOURCE_TYPE_SM);
	if (r != CUDA_SUCCESS)
		return drv_fail(api, r, "cuDeviceGetDevResource(SM)", -ENOTSUP, why, cap);
	if (whole.type != CU_DEV_RESOURCE_TYPE_SM || whole.sm.smCount == 0) {
		snprintf(why, cap, "cuDeviceGetDevResource(SM) returned no SMs");
		return -ENOTSUP;
	}
	/*
	 * How many groups of the smallest size: minCount 1, which the driver
	 * rounds up; should a driver refuse a minCount below its minimum,
	 * the minimum it reports (CUDA 13.0's minSmPartitionSize, 0 before),
	 * then the documented guidelines.
	 */
	{
		const unsigned int tries[] = { 1, whole.sm.minSmPartitionSize, 2, 4, 8 };

		r = CUDA_ERROR_INVALID_VALUE;
		for (size_t t = 0; t < sizeof(tries) / sizeof(tries[0]); t++) {
			if (tries[t] == 0 || (t > 0 && tries[t] <= mincount) || tries[t] > whole.sm.smCount)
				continue;
			mincount = tries[t];
			nb = 0;
			r = api->p_cuDevSmResourceSplitByCount(NULL, &nb, &whole, NULL, flags, mincount);
			if (r == CUDA_SUCCESS && nb > 0)
				break;
		}
	}
	if (r != CUDA_SUCCESS)
		return drv_fail(api, r, "cuDevSmResourceSplitByCount (count)", -ENOTSUP, why, cap);
	if (nb == 0) {
		snprintf(why, cap, "cuDevSmResourceSplitByCount: %u SMs split into no groups", whole.sm.smCount);
		return -ENOTSUP;
	}
	g = calloc(nb, sizeof(*g));
	if (!g) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	got = nb;
	r = api->p_cuDevSmResourceSplitByCount(g, &got, &whole, rem, flags, mincount);
	if (r != CUDA_SUCCESS) {
		free(g);
		return drv_fail(api, r, "cuDevSmResourceSplitByCount", -ENOTSUP, why, cap);
	}
	if (got == 0 || got > nb) {
		free(g);
		snprintf(why, cap, "cuDevSmResourceSplitByCount made %u groups of %u", got, nb);
		return -ENOTSUP;
	}
	for (uint32_t i = 0; i < got; i++) {
		if (g[i].sm.smCount == 0) {
			free(g);
			snprintf(why, cap, "cuDevSmResourceSplitByCount: group %u has no SMs", i);
			return -ENOTSUP;
		}
		sum += g[i].sm.smCount;
		if (g[i].sm.smCount < gmin)
			gmin = g[i].sm.smCount;
	}
	if (rem->type == CU_DEV_RESOURCE_TYPE_SM)
		sum += rem->sm.smCount;
	*groups = g;
	*ngroups = got;
	*granule = gmin;
	*total = sum;
	return 0;
}

int part_limits(const struct cuda_api *api, CUdevice dev, bool fine, uint32_t *total_sms, uint32_t *granule,
		char *why, size_t cap)
{
	CUdevResource *g = NULL, rem;
	uint32_t ng;
	int r;

	if (!api || !total_sms || !granule)
		return -EINVAL;
	r = split_device(api, dev, fine, &g, &ng, &rem, granule, total_sms, why, cap);
	free(g);
	return r;
}

static uint32_t round_up(uint32_t v, uint32_t to)
{
	uint64_t r = to ? ((uint64_t)v + to - 1) / to * to : v;

	return r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

static void part_destroy(const struct cuda_api *api, struct part *p)
{
	/* the streams first: cuGreenCtxDestroy does not destroy them */
	for (uint32_t k = 0; k < PART_STREAMS; k++) {
		if (p->st[k])
			api->p_cuStreamDestroy(p->st[k]);
		p->st[k] = NULL;
	}
	if (p->green)
		api->p_cuGreenCtxDestroy(p->green);
	p->green = NULL;
	p->ctx = NULL;
	p->sms = 0;
}

/* SMs that `owner` gives partition idx (the remainder counts for the shared one). */
static uint32_t owned_sms(const struct partition_set *s, const uint32_t *owner, uint32_t idx)
{
	uint32_t sum = 0;

	for (uint32_t g = 0; g < s->ngroups; g++)
		if (owner[g] == idx)
			sum += s->groups[g].sm.smCount;
	if (idx == s->n && s->has_rem)
		sum += s->rem.sm.smCount;
	return sum;
}

/*
 * Make partition idx as `owner` says: its groups (and for the shared one
 * the remainder) into a descriptor, a green context, its stream. `tmp`
 * has room for ngroups + 1 resources. `err` is what driver failures return.
 */
static int part_build(struct partition_set *s, const uint32_t *owner, uint32_t idx, int prio, CUdevResource *tmp,
		      struct part *out, int err, char *why, size_t cap)
{
	const struct cuda_api *api = s->api;
	CUdevResourceDesc desc = NULL;
	CUdevResource mine;
	unsigned int k = 0;
	char what[96];
	CUresult r;

	memset(out, 0, sizeof(*out));
	out->prio = prio;
	for (uint32_t g = 0; g < s->ngroups; g++)
		if (owner[g] == idx)
			tmp[k++] = s->groups[g];
	if (idx == s->n && s->has_rem)
		tmp[k++] = s->rem;
	if (k == 0) {
		snprintf(why, cap, "partition %u has no SMs", idx);
		return -ENOSPC;
	}
	r = api->p_cuDevResourceGenerateDesc(&desc, tmp, k);
	if (r != CUDA_SUCCESS) {
		snprintf(what, sizeof(what), "partition %u: cuDevResourceGenerateDesc (%u groups)", idx, k);
		return drv_fail(api, r, what, err, why, cap);
	}
	r = api->p_cuGreenCtxCreate(&out->green, desc, s->dev, CU_GREEN_CTX_DEFAULT_STREAM);
	if (r != CUDA_SUCCESS) {
		out->green = NULL;
		snprintf(what, sizeof(what), "partition %u: cuGreenCtxCreate", idx);
		return drv_fail(api, r, what, err, why, cap);
	}
	r = api->p_cuCtxFromGreenCtx(&out->ctx, out->green);
	if (r != CUDA_SUCCESS) {
		snprintf(what, sizeof(what), "partition %u: cuCtxFromGreenCtx", idx);
		goto fail;
	}
	for (uint32_t j = 0; j < (s->nstreams ? s->nstreams : 1); j++) {
		out->stp[j] = s->has_sprio ? s->sprio[j] : prio;
		r = api->p_cuGreenCtxStreamCreate(&out->st[j], out->green, CU_STREAM_NON_BLOCKING, out->stp[j]);
		if (r != CUDA_SUCCESS) {
			out->st[j] = NULL;
			snprintf(what, sizeof(what), "partition %u: cuGreenCtxStreamCreate (stream %u)", idx, j);
			goto fail;
		}
	}
	/* what the driver actually gave it, not what was asked */
	memset(&mine, 0, sizeof(mine));
	r = api->p_cuGreenCtxGetDevResource(out->green, &mine, CU_DEV_RESOURCE_TYPE_SM);
	if (r != CUDA_SUCCESS) {
		snprintf(what, sizeof(what), "partition %u: cuGreenCtxGetDevResource", idx);
		goto fail;
	}
	out->sms = mine.sm.smCount ? mine.sm.smCount : owned_sms(s, owner, idx);
	return 0;
fail:
	part_destroy(api, out);
	return drv_fail(api, r, what, err, why, cap);
}

static struct partition_set *set_alloc(uint32_t n)
{
	struct partition_set *s = calloc(1, sizeof(*s) + (n + 1) * sizeof(struct part));

	return s;
}

void part_free(struct partition_set *set)
{
	if (!set)
		return;
	for (uint32_t i = 0; i <= set->n; i++)
		part_destroy(set->api, &set->p[i]);
	free(set->groups);
	free(set->owner);
	free(set);
}

int part_create(const struct cuda_api *api, CUdevice dev, const uint32_t *sms, const int *prio, uint32_t n,
		bool fine, struct partition_set **out, char *why, size_t cap)
{
	struct partition_set *s;
	CUdevResource *tmp = NULL;
	uint32_t next = 0, asked = 0;
	char sizes[PART_MAX * 12 + 1] = "";
	bool fits = true;
	size_t at = 0;
	int r;

	if (out)
		*out = NULL;
	if (!api || !out || (n && !sms) || n > PART_MAX) {
		snprintf(why, cap, "bad arguments (%u partitions, at most %u)", n, PART_MAX);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (sms[i] == 0) {
			snprintf(why, cap, "partition %u: 0 SMs", i);
			return -EINVAL;
		}
	}
	s = set_alloc(n);
	if (!s) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	s->api = api;
	s->dev = dev;
	s->n = n;
	s->nstreams = 1;
	r = split_device(api, dev, fine, &s->groups, &s->ngroups, &s->rem, &s->granule, &s->total, why, cap);
	if (r < 0) {
		free(s);
		return r;
	}
	s->has_rem = s->rem.type == CU_DEV_RESOURCE_TYPE_SM && s->rem.sm.smCount > 0;
	s->owner = calloc(s->ngroups, sizeof(*s->owner));
	tmp = calloc(s->ngroups + 1, sizeof(*tmp));
	if (!s->owner || !tmp) {
		snprintf(why, cap, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	/* consecutive groups for each partition in turn, the rest for the shared one */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t got = 0;

		while (fits && got < sms[i] && next < s->ngroups) {
			s->owner[next] = i;
			got += s->groups[next++].sm.smCount;
		}
		fits = fits && got >= sms[i];
		asked += round_up(sms[i], s->granule);
		at += (size_t)snprintf(sizes + at, sizeof(sizes) - at, "%s%u", i ? "+" : "",
				       round_up(sms[i], s->granule));
	}
	if (fits) {
		for (uint32_t g = next; g < s->ngroups; g++)
			s->owner[g] = n;
	}
	if (!fits || owned_sms(s, s->owner, n) == 0) {
		uint32_t left = s->has_rem ? s->rem.sm.smCount : 0;

		if (!fits)
			snprintf(why, cap,
				 "partitions of %s = %u SMs (multiples of %u) do not fit: the device splits into %u "
				 "groups of %u SMs, %u SMs left over",
				 n ? sizes : "0", asked, s->granule, s->ngroups, s->granule, left);
		else
			snprintf(why, cap,
				 "partitions of %s = %u SMs (multiples of %u) leave no SMs for the shared partition "
				 "(the device splits into %u groups of %u SMs, %u SMs left over)",
				 n ? sizes : "0", asked, s->granule, s->ngroups, s->granule, left);
		r = -ENOSPC;
		goto fail;
	}
	for (uint32_t i = 0; i <= n; i++) {
		r = part_build(s, s->owner, i, i < n && prio ? prio[i] : 0, tmp, &s->p[i], -ENOTSUP, why, cap);
		if (r < 0)
			goto fail;
	}
	free(tmp);
	*out = s;
	return 0;
fail:
	free(tmp);
	part_free(s);
	return r;
}

uint32_t part_count(const struct partition_set *set)
{
	return set ? set->n + 1 : 0;
}

CUstream part_stream(const struct partition_set *set, uint32_t i)
{
	return set && i <= set->n ? set->p[i].st[0] : NULL;
}

CUstream part_stream_k(const struct partition_set *set, uint32_t i, uint32_t k)
{
	return set && i <= set->n && k < set->nstreams ? set->p[i].st[k] : NULL;
}

uint32_t part_nstreams(const struct partition_set *set)
{
	return set ? set->nstreams : 0;
}

int part_set_streams(struct partition_set *set, uint32_t k, const int *prio, char *why, size_t cap)
{
	const struct cuda_api *api;
	CUstream fresh[PART_MAX + 1][PART_STREAMS];

	if (!set || k == 0 || k > PART_STREAMS) {
		snprintf(why, cap, "bad arguments: %u streams per partition (1 to %u)", k, PART_STREAMS);
		return -EINVAL;
	}
	api = set->api;
	memset(fresh, 0, sizeof(fresh));
	/* every new stream first (a missing one, or one with another priority): a refusal changes nothing */
	for (uint32_t i = 0; i <= set->n; i++) {
		struct part *p = &set->p[i];

		for (uint32_t j = 0; j < k; j++) {
			int want = prio ? prio[j] : p->prio;
			CUresult r;

			if (j < set->nstreams && p->st[j] && p->stp[j] == want)
				continue;
			r = api->p_cuGreenCtxStreamCreate(&fresh[i][j], p->green, CU_STREAM_NON_BLOCKING, want);
			if (r != CUDA_SUCCESS) {
				char what[96];

				fresh[i][j] = NULL;
				for (uint32_t x = 0; x <= i; x++)
					for (uint32_t y = 0; y < k; y++)
						if (fresh[x][y])
							api->p_cuStreamDestroy(fresh[x][y]);
				snprintf(what, sizeof(what), "partition %u: cuGreenCtxStreamCreate (stream %u)", i, j);
				return drv_fail(api, r, what, -EIO, why, cap);
			}
		}
	}
	for (uint32_t i = 0; i <= set->n; i++) {
		struct part *p = &set->p[i];

		for (uint32_t j = 0; j < PART_STREAMS; j++) {
			bool replace = j < k && fresh[i][j];

			if ((replace || j >= k) && p->st[j]) {
				api->p_cuStreamSynchronize(p->st[j]);
				api->p_cuStreamDestroy(p->st[j]);
				p->st[j] = NULL;
			}
			if (replace) {
				p->st[j] = fresh[i][j];
				p->stp[j] = prio ? prio[j] : p->prio;
			}
		}
	}
	set->has_sprio = prio != NULL;
	for (uint32_t j = 0; j < k; j++)
		set->sprio[j] = prio ? prio[j] : 0;
	set->nstreams = k;
	return 0;
}

uint32_t part_sms(const struct partition_set *set, uint32_t i)
{
	return set && i <= set->n ? set->p[i].sms : 0;
}

CUcontext part_ctx(const struct partition_set *set, uint32_t i)
{
	return set && i <= set->n ? set->p[i].ctx : NULL;
}

CUgreenCtx part_green(const struct partition_set *set, uint32_t i)
{
	return set && i <= set->n ? set->p[i].green : NULL;
}

uint32_t part_granule(const struct partition_set *set)
{
	return set ? set->granule : 0;
}

uint32_t part_total_sms(const struct partition_set *set)
{
	return set ? set->total : 0;
}

int part_resize(struct partition_set *set, uint32_t i, uint32_t sms, char *why, size_t cap)
{
	const struct cuda_api *api;
	struct part np, ns;
	CUdevResource *tmp;
	uint32_t *owner, got = 0, n;
	bool same = true;
	int r;

	if (!set || i >= set->n || sms == 0) {
		snprintf(why, cap, "bad arguments: partition %u of %u, %u SMs", i, set ? set->n : 0, sms);
		return -EINVAL;
	}
	api = set->api;
	n = set->n;
	owner = malloc(set->ngroups * sizeof(*owner));
	tmp = calloc(set->ngroups + 1, sizeof(*tmp));
	if (!owner || !tmp) {
		free(owner);
		free(tmp);
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	memcpy(owner, set->owner, set->ngroups * sizeof(*owner));
	/* keep i's groups in order while they are needed, give the rest back */
	for (uint32_t g = 0; g < set->ngroups; g++) {
		if (owner[g] != i)
			continue;
		if (got < sms)
			got += set->groups[g].sm.smCount;
		else
			owner[g] = n;
	}
	/* then take the shared partition's, lowest first */
	for (uint32_t g = 0; g < set->ngroups && got < sms; g++) {
		if (owner[g] == n) {
			owner[g] = i;
			got += set->groups[g].sm.smCount;
		}
	}
	if (got < sms || owned_sms(set, owner, n) == 0) {
		snprintf(why, cap,
			 "partition %u: %u SMs (multiples of %u) do not fit: it has %u and the shared partition %u, "
			 "which must keep some",
			 i, sms, set->granule, set->p[i].sms, set->p[n].sms);
		r = -ENOSPC;
		goto out;
	}
	for (uint32_t g = 0; g < set->ngroups; g++)
		same = same && owner[g] == set->owner[g];
	if (same) {
		r = (int)set->p[i].sms;
		goto out;
	}
	/*
	 * The new green contexts first, while the old ones still exist (their
	 * SMs overlap for a moment, which green contexts allow: nothing
	 * reserves SMs exclusively), so that a failure leaves the set as it was.
	 */
	r = part_build(set, owner, i, set->p[i].prio, tmp, &np, -EIO, why, cap);
	if (r < 0)
		goto out;
	r = part_build(set, owner, n, set->p[n].prio, tmp, &ns, -EIO, why, cap);
	if (r < 0) {
		part_destroy(api, &np);
		goto out;
	}
	/* drained by the caller; synchronized anyway so no running work loses its stream */
	for (uint32_t k = 0; k < set->nstreams; k++) {
		api->p_cuStreamSynchronize(set->p[i].st[k]);
		api->p_cuStreamSynchronize(set->p[n].st[k]);
	}
	part_destroy(api, &set->p[i]);
	part_destroy(api, &set->p[n]);
	set->p[i] = np;
	set->p[n] = ns;
	memcpy(set->owner, owner, set->ngroups * sizeof(*owner));
	r = (int)np.sms;
out:
	free(owner);
	free(tmp);
	return r;
}
