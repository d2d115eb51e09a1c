/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for ooo-k8s-plugin's parsers of what kubelet sends
 * (tools/k8s-plugin/grpc_frame.c, slots.c): the bytes of a DATA stream are
 * split into gRPC messages whole, and again as they would arrive in pieces
 * (the first byte picks the piece size); each message is also read as a
 * list of device IDs (NUL-separated) for slot_id_parse() and slots_prefer();
 * and the input is percent-encoded as a grpc-message.
 *
 * Aborts when
 *   - grpc_frame_next() returns other than 0, a length within the input,
 *     -EMSGSIZE, -ENOTSUP or -EPROTO, or a message outside the input or over the limit;
 *   - splitting in pieces finds other messages than splitting whole;
 *   - an ID that parses does not format back to itself;
 *   - slots_prefer() chooses more than asked, an ID twice, an ID it was not given;
 *   - the encoded text is longer than cap - 1, or holds a byte outside 0x20..0x7e.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/k8s-plugin/grpc_frame.h"
#include "../../tools/k8s-plugin/slots.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX 4096 /* a small limit, so that -EMSGSIZE is reached */
#define MAX_IDS 64

static void ids(const uint8_t *msg, size_t len)
{
	char *copy = malloc(len + 1), *p, *end;
	const char *v[MAX_IDS], *out[MAX_IDS];
	size_t n = 0;
	int r;

	if (!copy)
		return;
	memcpy(copy, msg, len);
	copy[len] = 0;
	end = copy + len;
	for (p = copy; p < end && n < MAX_IDS; p += strlen(p) + 1) {
		unsigned g, s;
		char back[SLOT_ID_MAX];

		v[n++] = p;
		if (!slot_id_parse(p, &g, &s) && (slot_id_format(back, sizeof(back), g, s) < 0 || strcmp(back, p)))
			abort();
	}
	r = slots_prefer(v + n / 2, n - n / 2, v, n / 2, len % (MAX_IDS + 1), out);
	if (r >= 0) {
		if ((size_t)r > len % (MAX_IDS + 1))
			abort();
		for (int i = 0; i < r; i++) {
			int found = 0;

			for (size_t k = 0; k < n; k++)
				found |= out[i] == v[k];
			for (int j = 0; j < i; j++)
				if (!strcmp(out[i], out[j]))
					abort();
			if (!found)
				abort();
		}
	} else if (r != -EINVAL) {
		abort();
	}
	free(copy);
}

/* Split buf[0, n) into messages; record each (offset, length) into offs; returns the count, or the error. */
static long split(const uint8_t *buf, size_t n, size_t piece, size_t *offs, size_t cap)
{
	uint8_t *acc = malloc(n + 1);
	size_t have = 0, fed = 0, base = 0;
	long count = 0;

	if (!acc)
		return -ENOMEM;
	while (fed < n || have) {
		const uint8_t *msg;
		size_t len;
		size_t k = piece && n - fed > piece ? piece : n - fed;
		ssize_t r;

		memcpy(acc + have, buf + fed, k);
		have += k;
		fed += k;
		r = grpc_frame_next(acc, have, MAX, &msg, &len);
		if (r < 0) {
			if (r != -EMSGSIZE && r != -ENOTSUP && r != -EPROTO)
				abort();
			free(acc);
			return r;
		}
		if (!r) {
			if (fed == n)
				break;
			continue;
		}
		if ((size_t)r > have || msg != acc + GRPC_PREFIX || len != (size_t)r - GRPC_PREFIX || len > MAX)
			abort();
		if (piece == 0)
			ids(msg, len);
		if ((size_t)count < cap)
			offs[count] = base;
		count++;
		base += (size_t)r;
		memmove(acc, acc + r, have - (size_t)r);
		have -= (size_t)r;
	}
	free(acc);
	return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t a[64], b[64];
	long na, nb;
	char enc[64];
	char *text;

	if (!size)
		return 0;
	na = split(data + 1, size - 1, 0, a, 64);
	nb = split(data + 1, size - 1, 1 + data[0] % 16, b, 64);
	if (na != nb || (na > 0 && memcmp(a, b, (size_t)(na < 64 ? na : 64) * sizeof(*a))))
		abort();
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	size_t cap = 1 + data[0] % sizeof(enc);
	size_t n = grpc_pct_encode(text, enc, cap);

	if (n >= cap || strlen(enc) != n)
		abort();
	for (size_t i = 0; i < n; i++)
		if (enc[i] < 0x20 || enc[i] > 0x7e)
			abort();
	free(text);
	return 0;
}
