/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the wire decoder: any bytes, both directions. A
 * message that decodes must re-encode to the same bytes (the decoder accepts
 * nothing the encoder would not produce).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char out[OOO_MSG_MAX];

	for (int d = 0; d < 2; d++) {
		struct wire_msg m;

		if (wire_decode(data, size, d ? WIRE_TO_PEER : WIRE_TO_DAEMON, &m, NULL) != 0)
			continue;
		ssize_t n = wire_encode(out, sizeof(out), m.hdr.type, m.hdr.seq, m.hdr.status, m.payload, m.plen);
		if (n != (ssize_t)size || memcmp(out, data, size))
			abort();
	}
	return 0;
}
