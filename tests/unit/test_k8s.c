/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ooo-k8s-plugin's pure parts (tools/k8s-plugin/grpc_frame.c:
 * gRPC's framing, status text and paths; slots.c: device IDs and the
 * preferred allocation) and of oooctl cdi's spec (tools/oooctl/cdi_spec.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/k8s-plugin/grpc_frame.h"
#include "../../tools/k8s-plugin/slots.h"
#include "../../tools/oooctl/cdi_spec.h"

static void test_frame(void **state)
{
	uint8_t b[16] = { 0 }, p[GRPC_PREFIX];
	const uint8_t *msg = NULL;
	size_t len = 99;

	(void)state;
	grpc_frame_prefix(p, 0x01020304);
	assert_memory_equal(p, "\0\1\2\3\4", 5);
	grpc_frame_prefix(b, 3);
	memcpy(b + 5, "abcXY", 5);
	/* short: nothing yet, outputs untouched */
	for (size_t n = 0; n < 8; n++)
		assert_int_equal(grpc_frame_next(b, n, GRPC_MSG_MAX, &msg, &len), 0);
	assert_null(msg);
	assert_int_equal(len, 99);
	/* whole, with the next message's bytes after it */
	assert_int_equal(grpc_frame_next(b, 10, GRPC_MSG_MAX, &msg, &len), 8);
	assert_ptr_equal(msg, b + 5);
	assert_int_equal(len, 3);
	/* an empty message is 5 bytes */
	grpc_frame_prefix(b, 0);
	assert_int_equal(grpc_frame_next(b, 5, GRPC_MSG_MAX, &msg, &len), 5);
	assert_int_equal(len, 0);
	/* over the limit, whatever follows */
	grpc_frame_prefix(b, 11);
	assert_int_equal(grpc_frame_next(b, 5, 10, &msg, &len), -EMSGSIZE);
	grpc_frame_prefix(b, 0xffffffffu);
	assert_int_equal(grpc_frame_next(b, 5, GRPC_MSG_MAX, &msg, &len), -EMSGSIZE);
	/* compressed, or a flag gRPC does not define */
	b[0] = 1;
	assert_int_equal(grpc_frame_next(b, 5, GRPC_MSG_MAX, &msg, &len), -ENOTSUP);
	b[0] = 2;
	assert_int_equal(grpc_frame_next(b, 5, GRPC_MSG_MAX, &msg, &len), -EPROTO);
}

static void test_pct(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(grpc_pct_encode("plain text", out, sizeof(out)), 10);
	assert_string_equal(out, "plain text");
	grpc_pct_encode("100%\n\xc3\xa9", out, sizeof(out));
	assert_string_equal(out, "100%25%0A%C3%A9");
	/* cut before an escape that does not fit, never inside one */
	assert_int_equal(grpc_pct_encode("ab%", out, 5), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(grpc_pct_encode("ab%", out, 6), 5);
	assert_int_equal(grpc_pct_encode("abc", out, 1), 0);
	assert_string_equal(out, "");
	assert_int_equal(grpc_pct_encode("abc", out, 0), 0);
}

static void test_method(void **state)
{
	static const char *const names[] = { "/v1beta1.DevicePlugin/Allocate", "/v1beta1.DevicePlugin/ListAndWatch" };
	const char *p = "/v1beta1.DevicePlugin/ListAndWatchX";

	(void)state;
	assert_int_equal(grpc_method(p, strlen(p) - 1, names, 2), 1);
	assert_int_equal(grpc_method(p, strlen(p), names, 2), -1);
	assert_int_equal(grpc_method(names[0], strlen(names[0]), names, 2), 0);
	assert_int_equal(grpc_method("", 0, names, 2), -1);
}

static void test_ids(void **state)
{
	char b[SLOT_ID_MAX];
	unsigned g = 77, s = 77;

	(void)state;
	assert_int_equal(slot_id_format(b, sizeof(b), 3, 17), 11);
	assert_string_equal(b, "gpu3-slot17");
	assert_int_equal(slot_id_format(b, sizeof(b), SLOTS_GPU_MAX - 1, SLOTS_PER_GPU_MAX - 1), 16);
	assert_int_equal(slot_id_format(b, 5, 1, 1), -ENOSPC);
	assert_int_equal(slot_id_parse("gpu3-slot17", &g, &s), 0);
	assert_int_equal(g, 3);
	assert_int_equal(s, 17);
	assert_int_equal(slot_id_parse("gpu0-slot0", &g, &s), 0);
	assert_int_equal(g + s, 0);
	static const char *const bad[] = { "", "gpu", "gpu1", "gpu1-slot", "gpu-slot1", "gpu01-slot1", "gpu1-slot01",
					   "gpu+1-slot1", "gpu1-slot1 ", "gpu1-slot1x", "GPU1-slot1", "gpu1024-slot0",
					   "gpu0-slot1024", "gpu99999999999-slot0", "nvidia0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		g = s = 77;
		if (slot_id_parse(bad[i], &g, &s) != -EINVAL || g != 77 || s != 77)
			fail_msg("'%s' parsed", bad[i]);
	}
}

/* slots_prefer over avail (space-separated), must, size: the chosen IDs, space-separated, or "ERR n" */
static const char *prefer(const char *avail, const char *must, size_t size)
{
	static char out[1024];
	char *a = strdup(avail), *m = strdup(must), *tok, *sp;
	const char *av[128], *mv[128], *chosen[128];
	size_t na = 0, nm = 0;
	int r;

	for (tok = strtok_r(a, " ", &sp); tok; tok = strtok_r(NULL, " ", &sp))
		av[na++] = tok;
	for (tok = strtok_r(m, " ", &sp); tok; tok = strtok_r(NULL, " ", &sp))
		mv[nm++] = tok;
	r = slots_prefer(av, na, mv, nm, size, chosen);
	out[0] = 0;
	if (r < 0)
		snprintf(out, sizeof(out), "ERR %d", r);
	for (int i = 0; i < r; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? " " : "", chosen[i]);
	free(a);
	free(m);
	return out;
}

static void test_prefer(void **state)
{
	/* gpu0 has 3 free, gpu1 2, gpu2 4 */
	const char *av = "gpu2-slot3 gpu0-slot1 gpu1-slot0 gpu0-slot2 gpu2-slot0 gpu1-slot5 gpu0-slot7 gpu2-slot1 gpu2-slot2";

	(void)state;
	/* the smallest GPU that holds them all (best fit) */
	assert_string_equal(prefer(av, "", 2), "gpu1-slot0 gpu1-slot5");
	assert_string_equal(prefer(av, "", 3), "gpu0-slot1 gpu0-slot2 gpu0-slot7");
	assert_string_equal(prefer(av, "", 4), "gpu2-slot0 gpu2-slot1 gpu2-slot2 gpu2-slot3");
	assert_string_equal(prefer(av, "", 1), "gpu1-slot0");
	/* none holds them: the largest first, then the best fit for the rest */
	assert_string_equal(prefer(av, "", 6),
			    "gpu2-slot0 gpu2-slot1 gpu2-slot2 gpu2-slot3 gpu1-slot0 gpu1-slot5");
	assert_string_equal(prefer(av, "", 7),
			    "gpu2-slot0 gpu2-slot1 gpu2-slot2 gpu2-slot3 gpu0-slot1 gpu0-slot2 gpu0-slot7");
	/* must-include first, then its GPU filled, then elsewhere */
	assert_string_equal(prefer(av, "gpu0-slot7", 2), "gpu0-slot7 gpu0-slot1");
	assert_string_equal(prefer(av, "gpu1-slot5", 4), "gpu1-slot5 gpu1-slot0 gpu0-slot1 gpu0-slot2");
	/* must-include IDs not listed in avail count, duplicates once */
	assert_string_equal(prefer("gpu0-slot0 gpu0-slot0 gpu0-slot1", "gpu3-slot0 gpu3-slot0", 3),
			    "gpu3-slot0 gpu0-slot0 gpu0-slot1");
	/* more wanted than there are: all of them */
	assert_string_equal(prefer("gpu0-slot0 gpu1-slot0", "", 5), "gpu0-slot0 gpu1-slot0");
	assert_string_equal(prefer("", "", 0), "");
	assert_string_equal(prefer(av, "", 0), "");
	/* an ID that is not ours */
	assert_string_equal(prefer("gpu0-slot0 nvidia0", "", 1), "ERR -22");
	assert_string_equal(prefer("gpu0-slot0", "x", 1), "ERR -22");
}

static void test_cdi(void **state)
{
	static const unsigned gpus[] = { 0, 2 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	assert_int_equal(cdi_write(f, gpus, 2, "/run/ooo/oood.sock"), 0);
	fclose(f);
	assert_string_equal(text, "{\n"
				  "  \"cdiVersion\": \"0.6.0\",\n"
				  "  \"kind\": \"ooo.dev/gpu\",\n"
				  "  \"devices\": [\n"
				  "    {\n"
				  "      \"name\": \"gpu0\",\n"
				  "      \"containerEdits\": {\n"
				  "        \"env\": [\n"
				  "          \"OOO_CDI_DEVICE=gpu0\"\n"
				  "        ]\n"
				  "      }\n"
				  "    },\n"
				  "    {\n"
				  "      \"name\": \"gpu2\",\n"
				  "      \"containerEdits\": {\n"
				  "        \"env\": [\n"
				  "          \"OOO_CDI_DEVICE=gpu2\"\n"
				  "        ]\n"
				  "      }\n"
				  "    },\n"
				  "    {\n"
				  "      \"name\": \"all\",\n"
				  "      \"containerEdits\": {\n"
				  "        \"env\": [\n"
				  "          \"OOO_CDI_DEVICE=all\"\n"
				  "        ]\n"
				  "      }\n"
				  "    }\n"
				  "  ],\n"
				  "  \"containerEdits\": {\n"
				  "    \"env\": [\n"
				  "      \"OOO_SOCKET=/run/ooo/oood.sock\"\n"
				  "    ],\n"
				  "    \"mounts\": [\n"
				  "      {\n"
				  "        \"hostPath\": \"/run/ooo/oood.sock\",\n"
				  "        \"containerPath\": \"/run/ooo/oood.sock\",\n"
				  "        \"options\": [\n"
				  "          \"bind\"\n"
				  "        ]\n"
				  "      }\n"
				  "    ]\n"
				  "  }\n"
				  "}\n");
	free(text);
	/* a path with a quote is escaped; no GPU still gives "all" */
	f = open_memstream(&text, &len);
	assert_int_equal(cdi_write(f, NULL, 0, "/tmp/a\"b"), 0);
	fclose(f);
	assert_non_null(strstr(text, "\"OOO_SOCKET=/tmp/a\\\"b\""));
	assert_non_null(strstr(text, "\"name\": \"all\""));
	assert_null(strstr(text, "\"gpu"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame), cmocka_unit_test(test_pct),    cmocka_unit_test(test_method),
		cmocka_unit_test(test_ids),   cmocka_unit_test(test_prefer), cmocka_unit_test(test_cdi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
