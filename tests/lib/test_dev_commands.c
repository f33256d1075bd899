// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The command table and its consumers: every row is well formed, its FFI
 * global exists, the running backend knows it (a row a backend has no
 * handler for would fail here, as -ENOTTY, or the user backend would not
 * open at all), the user backend runs every row or refuses it with an
 * explicit EOPNOTSUPP, and a batch shows its records as struct tio_record.
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

/* The name of command @op, for messages. */
static const char *row_name(unsigned int op)
{
	struct tio_command_info c;
	int32_t i;

	for (i = 0; i < tio_command_count(); i++)
		if (!tio_command_info(i, &c) && c.op == op)
			return c.name;
	return "?";
}

/* A zeroed payload of every row a record can carry, in one batch: its results. */
static int64_t run_every_row(struct __test_metadata *_metadata, tio_batch_t *b)
{
	struct tio_command_info c;
	char zero[TIO_CMD_PAYLOAD] = { 0 };
	int32_t i, n = tio_command_count();
	int64_t ran = 0;

	EXPECT_EQ(0, tio_batch_set_mode(b, TIO_BATCH_IOCTL));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, tio_command_info(i, &c));
		if (c.flags & TIO_COMMAND_RUNS_RECORDS) {
			/* SUBMIT, RING_ENTER: never a record. */
			EXPECT_EQ(-1, tio_batch_add_record(b, c.op, zero, c.payload_size));
			ASSERT_DEV_MSG(EINVAL, "a record cannot carry it");
			continue;
		}
		EXPECT_EQ(ran, tio_batch_add_record(b, c.op, zero, c.payload_size))
			TH_LOG("%s", c.name);
		ran++;
	}
	EXPECT_EQ(0, tio_batch_submit(b));
	EXPECT_EQ(ran, tio_batch_wait(b, -1, -1));
	return ran;
}

/*
 * Every command reaches the backend's handler: a zeroed payload is
 * refused for what it holds (EINVAL, ENOENT, EOPNOTSUPP ...) or runs
 * (INFO, STREAM_CREATE), never "no such command" (ENOTTY).
 */
TEST_F(cmd, backend_runs_every_command)
{
	struct tio_record r;
	int64_t k, ran;
	tio_batch_t *b;

	ASSERT_OK(tio_batch_new(0, &b));
	ran = run_every_row(_metadata, b);
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

/*
 * The user backend's handler table is indexed by the command table's
 * rows: it opened (it does not while a row lacks a handler), and each row
 * answers as a handler does, the ones that need the kernel with an
 * explicit EOPNOTSUPP, never ENOTTY or ENOSYS.
 */
TEST_F(cmd, user_backend_handles_every_row)
{
	struct tio_record r;
	int64_t k, ran, refused = 0;
	tio_batch_t *b;

	if (dev_is_kernel())
		SKIP(return, "the kernel backend runs the driver's handlers");
	ASSERT_STREQ("user", tio_backend_name());
	ASSERT_OK(tio_batch_new(0, &b));
	ran = run_every_row(_metadata, b);
	for (k = 0; k < ran; k++) {
		ASSERT_OK(tio_batch_record_get(b, k, &r));
		EXPECT_TRUE(r.result == 0 || r.result == -EINVAL || r.result == -ENOENT ||
			    r.result == -EBADF || r.result == -EOPNOTSUPP)
			TH_LOG("%s: %d", row_name(r.op), r.result);
		refused += r.result == -EOPNOTSUPP;
	}
	/* sync_file export and import, the command ring's setup. */
	EXPECT_EQ(3, refused);
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
