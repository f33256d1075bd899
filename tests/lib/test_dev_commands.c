// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The command table and its consumers: every row is well formed, its FFI
 * global exists, the running backend knows it (a row a backend has no
 * handler for would fail here, as -ENOTTY, or the user backend would not
 * open at all), and a batch shows its records as struct tio_record.
 * tests/tools/test-tioctl.sh checks the table against the uapi header and
 * tio-bench's per-command rows.
 */
#include "kselftest_harness.h"
#include "dev_test.h"

DEV_FIXTURE(cmd);

TEST_F(cmd, rows_are_well_formed)
{
	struct tio_command_info c, prev = { 0 };
	tio_object_t *f;
	int32_t i, n = tio_command_count();

	ASSERT_LT(0, n);
	for (i = 0; i < n; i++) {
		ASSERT_OK(tio_command_info(i, &c));
		ASSERT_NE(NULL, c.name);
		EXPECT_NE(0, c.name[0]);
		EXPECT_LT(0, c.payload_size) TH_LOG("%s", c.name);
		EXPECT_GE(TIO_CMD_PAYLOAD, c.payload_size) TH_LOG("%s", c.name);
		EXPECT_EQ(TIO_IOC_MAGIC, _IOC_TYPE(c.op)) TH_LOG("%s", c.name);
		EXPECT_EQ(c.payload_size, _IOC_SIZE(c.op)) TH_LOG("%s", c.name);
		if (i)
			EXPECT_LT(_IOC_NR(prev.op), _IOC_NR(c.op)) TH_LOG("%s", c.name);
		EXPECT_LE(c.nargs, c.nargs_max) TH_LOG("%s", c.name);
		if (c.global) {
			/* The FFI consumer: the row's global is registered. */
			ASSERT_OK(tio_func_get_global(c.global, &f));
			ASSERT_NE(NULL, f) TH_LOG("%s has no FFI global", c.global);
			tio_object_decref(f);
		}
		prev = c;
	}
	ASSERT_EQ(-1, tio_command_info(n, &c));
	ASSERT_DEV_ERR(ERANGE, "ValueError");
	ASSERT_EQ(-1, tio_command_info(-1, &c));
	ASSERT_DEV_ERR(ERANGE, "ValueError");
}

/*
 * Every command reaches the backend's handler: a zeroed payload is
 * refused for what it holds (EINVAL, ENOENT, EOPNOTSUPP ...) or runs
 * (INFO, STREAM_CREATE), never "no such command" (ENOTTY).
 */
TEST_F(cmd, backend_runs_every_command)
{
	struct tio_command_info c;
	struct tio_record r;
	char zero[TIO_CMD_PAYLOAD] = { 0 };
	int32_t i, n = tio_command_count();
	int64_t k, ran = 0;
	tio_batch_t *b;

	ASSERT_OK(tio_batch_new(0, &b));
	ASSERT_OK(tio_batch_set_mode(b, TIO_BATCH_IOCTL));
	for (i = 0; i < n; i++) {
		ASSERT_OK(tio_command_info(i, &c));
		if (c.flags & TIO_COMMAND_RUNS_RECORDS) {
			/* SUBMIT, RING_ENTER: never a record. */
			ASSERT_EQ(-1, tio_batch_add_record(b, c.op, zero, c.payload_size));
			ASSERT_DEV_MSG(EINVAL, "a record cannot carry it");
			continue;
		}
		ASSERT_EQ(ran, tio_batch_add_record(b, c.op, zero, c.payload_size))
			TH_LOG("%s", c.name);
		ran++;
	}
	ASSERT_OK(tio_batch_submit(b));
	ASSERT_EQ(ran, tio_batch_wait(b, -1, -1));
	for (k = 0; k < ran; k++) {
		ASSERT_OK(tio_batch_record_get(b, k, &r));
		EXPECT_NE(-ENOTTY, r.result) TH_LOG("record %lld: op 0x%x", (long long)k, r.op);
		EXPECT_EQ(tio_batch_status(b, k), r.result);
		EXPECT_EQ(_IOC_SIZE(r.op), r.size);
		EXPECT_NE(NULL, r.payload);
	}
	tio_error_clear();
	tio_batch_free(b);
}

TEST_F(cmd, record_of_a_call_is_an_error)
{
	struct tio_record r;
	tio_object_t *backend;
	tio_batch_t *b;

	ASSERT_OK(tio_func_get_global("tio.backend", &backend));
	ASSERT_OK(tio_batch_new(0, &b));
	ASSERT_EQ(0, tio_batch_add(b, backend, NULL, 0));
	ASSERT_EQ(-1, tio_batch_record_get(b, 0, &r));
	ASSERT_DEV_MSG(ERANGE, "has no command record");
	ASSERT_EQ(-1, tio_batch_record_get(b, 1, &r));
	ASSERT_DEV_MSG(ERANGE, "has no command record");
	tio_batch_free(b);
	tio_object_decref(backend);
}

TEST_HARNESS_MAIN
