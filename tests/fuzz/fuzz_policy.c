/* SPDX-License-Identifier: MIT */
/* libFuzzer target: policy_parse() on arbitrary bytes must never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../daemon/policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_error err;
	struct policy *p = NULL;
	gid_t groups[2] = { 0, 100 };
	char buf[64];
	uint64_t v;
	size_t i;

	memset(&err, 0x55, sizeof(err));
	if (policy_parse((const char *)data, size, "fuzz", &p, &err) == 0) {
		/* walk what was built so ASan sees every array */
		for (i = 0; i < p->nclasses; i++) {
			policy_find_class(p, p->classes[i].name);
			if (p->classes[i].nuids)
				policy_match(p, p->classes[i].uids[p->classes[i].nuids - 1], 1, NULL, 0);
			if (p->classes[i].ngids)
				policy_match(p, 1, p->classes[i].gids[p->classes[i].ngids - 1], groups, 2);
			/* each pattern against itself, taken as a path */
			for (size_t j = 0; j < p->classes[i].ncgroups; j++)
				policy_match_cgroup(p, 1000, 1000, groups, 2, p->classes[i].cgroups[j]);
		}
		policy_match(p, 1000, 1000, groups, 2);
		policy_match_cgroup(p, 0, 0, NULL, 0, "/kubepods.slice/kubepods-pod11.slice/c.scope");
		policy_uses_cgroups(p);
		policy_free(p);
	} else if (!memchr(err.msg, '\0', sizeof(err.msg)) || !err.msg[0] || err.line < 0 || p) {
		__builtin_trap(); /* an error must come with a reason and leave *out alone */
	}

	/* the size parser on a NUL-terminated prefix */
	i = size < sizeof(buf) - 1 ? size : sizeof(buf) - 1;
	memcpy(buf, data, i);
	buf[i] = '\0';
	policy_parse_size(buf, &v);
	return 0;
}
