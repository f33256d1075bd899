// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: batches of raw command records on the user backend,
 * and the decoding of their results. Each 49 input bytes are one record:
 * an op selector and a 48-byte payload (waits forced to poll, sizes
 * bounded, pointers replaced by a fuzzed tensor descriptor or 0).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/batch.h>
#include <tensorio/context.h>
#include <tensorio/error.h>

static const unsigned int ops[] = {
	TIO_IOC_INFO, TIO_IOC_BUF_ALLOC, TIO_IOC_BUF_FREE, TIO_IOC_BUF_INFO,
	TIO_IOC_BUF_SET_DESC, TIO_IOC_BUF_EXPORT, TIO_IOC_BUF_ATTACH_FENCE,
	TIO_IOC_BUF_WAIT, TIO_IOC_STREAM_CREATE, TIO_IOC_STREAM_DESTROY,
	TIO_IOC_FENCE_EMIT, TIO_IOC_FENCE_SIGNAL, TIO_IOC_FENCE_WAIT,
	TIO_IOC_FENCE_EXPORT,
};

static struct tio_tensor_desc desc;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	setenv("TIO_BACKEND", "user", 1);
	return tio_init();
}

static void sanitize(unsigned int op, uint8_t *p, uint8_t sel)
{
	switch (op) {
	case TIO_IOC_BUF_ALLOC: {
		struct tio_buf_alloc *a = (void *)p;

		a->size &= 0xfffff;
		a->desc_ptr = sel & 1 ? (uintptr_t)&desc : 0;
		break;
	}
	case TIO_IOC_BUF_INFO:
		((struct tio_buf_info *)p)->desc_ptr = sel & 1 ? (uintptr_t)&desc : 0;
		break;
	case TIO_IOC_BUF_SET_DESC:
		((struct tio_buf_desc *)p)->desc_ptr = sel & 1 ? (uintptr_t)&desc : 0;
		break;
	case TIO_IOC_BUF_WAIT:
		((struct tio_buf_wait *)p)->timeout_ns = 0;
		break;
	case TIO_IOC_FENCE_WAIT:
		((struct tio_fence_wait *)p)->timeout_ns = 0;
		break;
	}
	/* Handles: mostly small, so that they name the batch's own objects. */
	if (sel & 2)
		p[0] &= 7, p[1] = p[2] = p[3] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tio_batch_t *b;
	int64_t i, n;

	if (size >= sizeof(desc)) {
		memcpy(&desc, data, sizeof(desc));
		data += sizeof(desc);
		size -= sizeof(desc);
	}
	if (tio_batch_new(size & 1 ? TIO_BATCH_STOP_ON_ERROR : 0, &b)) {
		tio_error_clear();
		return 0;
	}
	for (; size >= 49; data += 49, size -= 49) {
		unsigned int op = ops[data[0] % (sizeof(ops) / sizeof(ops[0]))];
		uint8_t p[TIO_CMD_PAYLOAD];

		memcpy(p, data + 1, sizeof(p));
		sanitize(op, p, data[0] >> 4);
		if (tio_batch_add_record(b, op, p, _IOC_SIZE(op)) < 0)
			tio_error_clear();
	}
	if (tio_batch_submit(b) < 0)
		tio_error_clear();
	tio_batch_wait(b, tio_batch_count(b), 0);
	tio_error_clear();
	n = tio_batch_count(b);
	for (i = 0; i < n; i++) {
		const struct tio_cmd *rec = tio_batch_record(b, i);
		tio_any_t v;

		tio_batch_status(b, i);
		tio_batch_error(b, i);
		if (!tio_batch_result(b, i, &v))
			tio_any_decref(&v);
		tio_error_clear();
		/* Close what exports handed out. */
		if (rec && !rec->result && rec->op == TIO_IOC_BUF_EXPORT)
			close(((const struct tio_buf_export *)rec->payload.bytes)->fd);
		if (rec && !rec->result && rec->op == TIO_IOC_FENCE_EXPORT)
			close(((const struct tio_fence_export *)rec->payload.bytes)->fd);
	}
	tio_batch_free(b);
	return 0;
}
