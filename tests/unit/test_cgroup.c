/* SPDX-License-Identifier: MIT */
/* Unit tests of daemon/policy/cgroup.c: /proc/PID/cgroup, pod UIDs, tenant keys. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "../../daemon/policy/cgroup.h"

static int parse(const char *text, char *out, size_t cap)
{
	return cgroup_parse_proc(text, strlen(text), out, cap);
}

static void test_parse_proc(void **state)
{
	char out[CGROUP_PATH_MAX];
	const char *hybrid = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/1a6a\n1:cpu:/\n0::/ooo-test/x.slice\n";

	(void)state;
	assert_int_equal(parse("0::/\n", out, sizeof(out)), 1);
	assert_string_equal(out, "/");
	assert_int_equal(parse("0::/kubepods.slice/a b\n", out, sizeof(out)), 19);
	assert_string_equal(out, "/kubepods.slice/a b");
	assert_int_equal(parse(hybrid, out, sizeof(out)), 17);
	assert_string_equal(out, "/ooo-test/x.slice");
	/* not the whole file, no v2 line, or a path that is not one */
	assert_int_equal(parse("0::/x", out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "");
	assert_int_equal(parse("", out, sizeof(out)), -EINVAL);
	assert_int_equal(parse("1:cpu:/\n", out, sizeof(out)), -EINVAL);
	assert_int_equal(parse("0::\n", out, sizeof(out)), -EINVAL);
	assert_int_equal(parse("0::x\n", out, sizeof(out)), -EINVAL);
	/* the v2 line is the kernel's last */
	assert_int_equal(parse("0::/a\n1:cpu:/\n", out, sizeof(out)), -EINVAL);
	/* a name with a newline that fakes a v2 line, after the real one or in a v1 hierarchy: ambiguous */
	assert_int_equal(parse("0::/user.slice/x\n0::/kubepods.slice/y\n", out, sizeof(out)), -EINVAL);
	assert_int_equal(parse("1:name=systemd:/u/x\n0::/kubepods.slice/y\n0::/user.slice\n", out, sizeof(out)),
			 -EINVAL);
	/* a name with a newline in the v2 line leaves a last line that is not one */
	assert_int_equal(parse("0::/user.slice/x\nkubepods\n", out, sizeof(out)), -EINVAL);
	/* a NUL in the text */
	assert_int_equal(cgroup_parse_proc("0::/a\0b\n", 8, out, sizeof(out)), -EINVAL);
	/* too long for the caller's buffer */
	assert_int_equal(parse("0::/abcdef\n", out, 7), -ENAMETOOLONG);
	assert_string_equal(out, "");
	assert_int_equal(parse("0::/abcdef\n", out, 8), 7);
	assert_int_equal(cgroup_parse_proc(NULL, 0, out, sizeof(out)), -EINVAL);
}

static void test_pod_uid(void **state)
{
	char out[CGROUP_POD_UID_MAX];
	static const struct {
		const char *path, *uid;
	} ok[] = {
		/* systemd driver, each QoS class; the container's scope below the pod, or not */
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_4a1b_8c2d_3e4f5a6b7c8d.slice/"
		  "cri-containerd-0123abcd.scope",
		  "1b2c3d4e-5f60-4a1b-8c2d-3e4f5a6b7c8d" },
		{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1111_2222.slice", "1111-2222" },
		{ "/kubepods.slice/kubepods-pod0a0b0c0d_0000_1111_2222_333344445555.slice/crio-9f.scope",
		  "0a0b0c0d-0000-1111-2222-333344445555" },
		/* cgroupfs driver */
		{ "/kubepods/burstable/pod1b2c3d4e-5f60-4a1b-8c2d-3e4f5a6b7c8d/0123abcd", "1b2c3d4e-5f60-4a1b-8c2d-3e4f5a6b7c8d" },
		{ "/kubepods/pod7e57ab1e-0000-4000-8000-000000000001/ctr", "7e57ab1e-0000-4000-8000-000000000001" },
		/* a static pod: 32 hex digits; upper case read as lower */
		{ "/kubepods/besteffort/podABCDEF0123456789abcdef0123456789", "abcdef0123456789abcdef0123456789" },
		/* below another root (a node in a container, kind): the deepest pod */
		{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubepods-burstable-podaa_bb.slice/x",
		  "aa-bb" },
		{ "/kubepods/pod11/ctr/kubepods/pod22/ctr", "22" },
		/* the systemd form names itself: kubepods... */
		{ "/ooo-test-1/kubepods-burstable-pod1111_2222.slice", "1111-2222" },
		{ "/user.slice/kubepods-burstable-pod1111.slice", "1111" },
	};
	static const char *const none[] = {
		"/",
		"",
		"/user.slice/user-1000.slice/session-3.scope",
		"/kubepods.slice/kubepods-burstable.slice",
		"/kubepods.slice/kubepods-burstable-pod.slice",         /* no UID */
		"/kubepods.slice/kubepods-burstable-podxyz.slice",      /* not hex */
		"/kubepods.slice/kubepods-burstable-pod12_34.scope",    /* not a slice */
		"/user.slice/pod1111",                                  /* not below kubepods */
		"/kubepods/pod",                                        /* no UID */
		"/kubepods/pod12345678901234567890123456789012345678901234567890123456789012345", /* 65 digits */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int r = cgroup_pod_uid(ok[i].path, out, sizeof(out));

		if (r != (int)strlen(ok[i].uid) || strcmp(out, ok[i].uid))
			fail_msg("%s: %d '%s', want '%s'", ok[i].path, r, out, ok[i].uid);
	}
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		int r = cgroup_pod_uid(none[i], out, sizeof(out));

		if (r != -ENOENT || out[0])
			fail_msg("%s: %d '%s', want none", none[i], r, out);
	}
	assert_int_equal(cgroup_pod_uid(NULL, out, sizeof(out)), -ENOENT);
	assert_int_equal(cgroup_pod_uid("/kubepods/pod1234", out, 4), -ENAMETOOLONG);
	assert_int_equal(cgroup_pod_uid("/kubepods/pod1234", out, 5), 4);
}

static void test_tenant_key(void **state)
{
	const char *pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1111_2222.slice/c.scope";
	const char *svc = "/system.slice/inference.service";
	char out[CGROUP_PATH_MAX];

	(void)state;
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_UID, pod, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_POD, pod, out, sizeof(out)), 9);
	assert_string_equal(out, "1111-2222");
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_CGROUP, pod, out, sizeof(out)), 9);
	assert_string_equal(out, "1111-2222");
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_POD, svc, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_CGROUP, svc, out, sizeof(out)), (int)strlen(svc));
	assert_string_equal(out, svc);
	/* unknown cgroup: the uid's tenant */
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_CGROUP, "", out, sizeof(out)), 0);
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_CGROUP, NULL, out, sizeof(out)), 0);
	assert_int_equal(cgroup_tenant_key(CGROUP_BY_CGROUP, svc, out, 8), -ENAMETOOLONG);
	assert_string_equal(out, "");
	assert_string_equal(cgroup_tenant_by_name(CGROUP_BY_UID), "uid");
	assert_string_equal(cgroup_tenant_by_name(CGROUP_BY_POD), "pod");
	assert_string_equal(cgroup_tenant_by_name(CGROUP_BY_CGROUP), "cgroup");
}

static void test_key_display(void **state)
{
	char out[16];

	(void)state;
	cgroup_key_display(out, sizeof(out), "1111-2222");
	assert_string_equal(out, "1111-2222");
	cgroup_key_display(out, sizeof(out), "/system.slice/inference.service");
	assert_string_equal(out, "...ence.service");
	assert_int_equal(strlen(out), sizeof(out) - 1);
	cgroup_key_display(out, sizeof(out), "/a\nb\x7f\xc3");
	assert_string_equal(out, "/a?b??");
	cgroup_key_display(out, sizeof(out), NULL);
	assert_string_equal(out, "");
	cgroup_key_display(out, sizeof(out), "0123456789abcde"); /* 15: fits */
	assert_string_equal(out, "0123456789abcde");
	cgroup_key_display(out, sizeof(out), "0123456789abcdef"); /* 16: does not */
	assert_string_equal(out, "...456789abcdef");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_proc),
		cmocka_unit_test(test_pod_uid),
		cmocka_unit_test(test_tenant_key),
		cmocka_unit_test(test_key_display),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
