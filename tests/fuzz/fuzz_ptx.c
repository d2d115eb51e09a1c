/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target of the JIT: any input is parsed; what parses is printed
 * and parsed again (the kernels must keep their hashes), and its fusible
 * kernels are fused alone and together, with a descriptor built for them.
 * Nothing may crash, leak or hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/jit/jit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptx_module *m = NULL, *m2 = NULL;
	struct jit_body bodies[8];
	struct jit_buf b = { 0 };
	char err[256];
	size_t nb = 0;

	if (ptx_parse((const char *)data, size, &m, err, sizeof(err)) < 0)
		return 0;
	if (ptx_print(m, &b) == 0 && ptx_parse(b.data, b.len, &m2, err, sizeof(err)) == 0) {
		if (ptx_kernel_count(m2) != ptx_kernel_count(m))
			abort();
		for (size_t i = 0; i < ptx_kernel_count(m); i++)
			if (memcmp(ptx_kernel_at(m, i)->hash, ptx_kernel_at(m2, i)->hash, 32) != 0 ||
			    ptx_kernel_at(m, i)->fusible != ptx_kernel_at(m2, i)->fusible)
				abort();
	}
	for (size_t i = 0; i < ptx_kernel_count(m) && nb < 8; i++) {
		const struct ptx_kernel *k = ptx_kernel_at(m, i);
		struct jit_fused *f = NULL;
		bool dup = false;

		if (!k->fusible)
			continue;
		for (size_t j = 0; j < nb; j++)
			dup |= memcmp(ptx_kernel_find(m, bodies[j].kernel)->hash, k->hash, 32) == 0;
		if (dup)
			continue;
		bodies[nb++] = (struct jit_body){ m, k->name };
		if (jit_fuse(&bodies[nb - 1], 1, &f, err, sizeof(err)) == 0 && !f->ptx)
			abort();
		jit_fused_free(f);
	}
	if (nb > 1) {
		struct jit_fused *f = NULL;

		if (jit_fuse(bodies, nb, &f, err, sizeof(err)) == 0) {
			struct jit_desc_launch l[8];
			uint8_t params[8][64] = { { 0 } };
			uint8_t desc[2048];
			uint32_t total;

			for (size_t i = 0; i < nb; i++) {
				uint32_t ps = ptx_kernel_find(m, bodies[i].kernel)->param_bytes;

				l[i] = (struct jit_desc_launch){ .body = (uint32_t)i,
								 .grid = { 1, 2, 1 },
								 .params = params[i],
								 .param_size = ps < 64 ? ps : 64,
								 .wait = (uint32_t)(i & 1), /* odd members after member 0 */
								 .signal = i == 0 };
			}
			if (jit_desc_build(l, nb, desc, sizeof(desc), &total, NULL) > 0 && total != 2 * nb)
				abort();
		}
		jit_fused_free(f);
	}
	/* fencing: whatever the rewriter accepts, the checker must prove */
	for (size_t i = 0; i < ptx_kernel_count(m) && i < 4; i++) {
		struct jit_buf fb = { 0 };
		unsigned nf = 0;

		if (jit_fence(m, ptx_kernel_at(m, i)->name, &fb, err, sizeof(err)) == 0 &&
		    jit_fence_check(fb.data, fb.len, &nf, err, sizeof(err)) != 0) {
			fprintf(stderr, "fenced %s refused by the checker: %s\n", ptx_kernel_at(m, i)->name, err);
			abort();
		}
		jit_buf_free(&fb);
	}
	/* the whole module at once (a fenced executor's load): what it hands out, the checker proves */
	{
		struct jit_buf fb = { 0 }, why = { 0 };
		unsigned nf = 0, nc = 0;

		if (jit_fence_all(m, &fb, &nf, &why, err, sizeof(err)) == 0 && nf > 0 &&
		    jit_fence_check(fb.data, fb.len, &nc, err, sizeof(err)) != 0) {
			fprintf(stderr, "fence-all output refused by the checker: %s\n", err);
			abort();
		}
		if (nf > ptx_kernel_count(m))
			abort();
		jit_buf_free(&fb);
		jit_buf_free(&why);
	}
	/* and the checker itself on anything */
	{
		unsigned nf = 0;

		(void)jit_fence_check((const char *)data, size, &nf, err, sizeof(err));
	}
	jit_buf_free(&b);
	ptx_module_free(m2);
	ptx_module_free(m);
	return 0;
}
