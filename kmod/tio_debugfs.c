// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs tensorio/: statistics for operators and benchmarks.
 *
 *   stats           module-wide: open files, buffers, streams, pinned
 *                   bytes, blocking waits, parked io_uring waits,
 *                   expired fences
 *   commands        per command: calls, errors, total and max ns in the
 *                   handler (write anything to reset)
 *   timing          1: time every handler, 0: count only (default)
 *   files/PID.N/stats  the same counts for one open file
 *   files/PID.N/objects  one line per buffer and stream of that file
 *
 * Locking: tio_files_lock (a mutex) protects tio_files, the list of open
 * files; a file is on it from open until release, so readers holding the
 * mutex may look at any file on it. Per-file objects are counted under
 * the file's xarray lock.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/jump_label.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/seq_file.h>

#include "tio_priv.h"

static struct dentry *tio_dbg_root;
static struct dentry *tio_dbg_files;
static LIST_HEAD(tio_files);
static DEFINE_MUTEX(tio_files_lock);
static atomic_t tio_file_ids = ATOMIC_INIT(0);

struct tio_counts {
	unsigned long buffers;
	unsigned long streams;
	unsigned long waits;
	unsigned long parked;
	unsigned long spare;
};

static void tio_file_counts(struct tio_file *tf, struct tio_counts *c)
{
	struct tio_obj *obj;
	unsigned long index;

	xa_lock(&tf->objs);
	xa_for_each(&tf->objs, index, obj) {
		if (obj->type == TIO_OBJ_BUFFER)
			c->buffers++;
		else if (obj->type == TIO_OBJ_STREAM)
			c->streams++;
	}
	xa_unlock(&tf->objs);
	c->waits += atomic_read(&tf->nr_waits);
	c->parked += atomic_read(&tf->nr_parked);
	c->spare += READ_ONCE(tf->spare.nr);
}

static void tio_counts_print(struct seq_file *m, const struct tio_counts *c)
{
	seq_printf(m, "buffers %lu\n", c->buffers);
	seq_printf(m, "streams %lu\n", c->streams);
	seq_printf(m, "pending_waits %lu\n", c->waits);
	seq_printf(m, "parked_uring %lu\n", c->parked);
	seq_printf(m, "spare_pages %lu\n", c->spare);
}

static int tio_global_stats_show(struct seq_file *m, void *unused)
{
	struct tio_counts c = { 0 };
	unsigned long files = 0;
	struct tio_file *tf;

	mutex_lock(&tio_files_lock);
	list_for_each_entry(tf, &tio_files, dbg_node) {
		tio_file_counts(tf, &c);
		files++;
	}
	mutex_unlock(&tio_files_lock);
	seq_printf(m, "files %lu\n", files);
	tio_counts_print(m, &c);
	seq_printf(m, "pinned_bytes_total %lld\n",
		   (long long)atomic64_read(&tio_pinned_total));
	seq_printf(m, "parked_uring_total %d\n", atomic_read(&tio_parked_total));
	seq_printf(m, "fences_expired %lld\n",
		   (long long)atomic64_read(&tio_fences_expired));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tio_global_stats);

static int tio_file_stats_show(struct seq_file *m, void *unused)
{
	struct tio_file *tf = m->private;
	struct tio_counts c = { 0 };

	seq_printf(m, "pid %d\n", tf->pid);
	tio_file_counts(tf, &c);
	tio_counts_print(m, &c);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tio_file_stats);

/*
 * One line per object: "HANDLE TYPE details". Each object is referenced
 * while it is printed, outside the xarray lock, so its show() may sleep.
 */
static int tio_file_objects_show(struct seq_file *m, void *unused)
{
	struct tio_file *tf = m->private;
	unsigned long index;
	struct tio_obj *obj;

	rcu_read_lock();
	xa_for_each(&tf->objs, index, obj) {
		if (!kref_get_unless_zero(&obj->ref))
			continue;
		rcu_read_unlock();
		seq_printf(m, "%lu ", index);
		obj->ops->show(obj, m);
		tio_obj_put(obj);
		rcu_read_lock();
	}
	rcu_read_unlock();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tio_file_objects);

static int tio_commands_open(struct inode *inode, struct file *file)
{
	return single_open(file, tio_cmd_stats_show, NULL);
}

static ssize_t tio_commands_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	tio_cmd_stats_reset();
	return len;
}

static const struct file_operations tio_commands_fops = {
	.owner = THIS_MODULE,
	.open = tio_commands_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = tio_commands_write,
	.release = single_release,
};

static int tio_timing_get(void *data, u64 *val)
{
	*val = static_key_enabled(&tio_stats_timing);
	return 0;
}

static int tio_timing_set(void *data, u64 val)
{
	if (val > 1)
		return -EINVAL;
	if (val)
		static_branch_enable(&tio_stats_timing);
	else
		static_branch_disable(&tio_stats_timing);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(tio_timing_fops, tio_timing_get, tio_timing_set, "%llu\n");

/**
 * tio_debugfs_init() - create debugfs tensorio/
 *
 * Failures are not fatal: the driver works without its statistics.
 */
void tio_debugfs_init(void)
{
	tio_dbg_root = debugfs_create_dir(TIO_DRV_NAME, NULL);
	debugfs_create_file("stats", 0444, tio_dbg_root, NULL,
			    &tio_global_stats_fops);
	debugfs_create_file("commands", 0644, tio_dbg_root, NULL,
			    &tio_commands_fops);
	debugfs_create_file_unsafe("timing", 0644, tio_dbg_root, NULL,
				   &tio_timing_fops);
	tio_dbg_files = debugfs_create_dir("files", tio_dbg_root);
}

/**
 * tio_debugfs_exit() - remove debugfs tensorio/
 */
void tio_debugfs_exit(void)
{
	debugfs_remove_recursive(tio_dbg_root);
	tio_dbg_root = NULL;
	tio_dbg_files = NULL;
}

/**
 * tio_debugfs_file_add() - list a new open file and give it a directory
 * @tf: the file, initialised
 */
void tio_debugfs_file_add(struct tio_file *tf)
{
	char name[32];

	tf->id = atomic_inc_return(&tio_file_ids);
	tf->pid = task_tgid_vnr(current);
	snprintf(name, sizeof(name), "%d.%u", tf->pid, tf->id);
	mutex_lock(&tio_files_lock);
	list_add_tail(&tf->dbg_node, &tio_files);
	mutex_unlock(&tio_files_lock);
	tf->dbg = debugfs_create_dir(name, tio_dbg_files);
	debugfs_create_file("stats", 0444, tf->dbg, tf, &tio_file_stats_fops);
	debugfs_create_file("objects", 0444, tf->dbg, tf, &tio_file_objects_fops);
}

/**
 * tio_debugfs_file_del() - unlist a file being released
 * @tf: the file; its directory is gone, and no reader sees it, on return
 */
void tio_debugfs_file_del(struct tio_file *tf)
{
	debugfs_remove_recursive(tf->dbg);
	tf->dbg = NULL;
	mutex_lock(&tio_files_lock);
	list_del(&tf->dbg_node);
	mutex_unlock(&tio_files_lock);
}
