// SPDX-License-Identifier: GPL-2.0
/*
 * tensorio: the /dev/tensorio misc device, its files and module parameters.
 */
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "tio_buffer.h"
#include "tio_priv.h"

unsigned long tio_max_buf_size = 1UL << 30;
module_param_named(max_buf_size, tio_max_buf_size, ulong, 0644);
MODULE_PARM_DESC(max_buf_size, "Largest buffer BUF_ALLOC accepts, bytes (default 1 GiB)");

unsigned long tio_max_pinned;
module_param_named(max_pinned, tio_max_pinned, ulong, 0644);
MODULE_PARM_DESC(max_pinned, "Module-wide cap on pinned bytes (default: half of RAM)");

atomic64_t tio_pinned_total = ATOMIC64_INIT(0);

/*
 * The bound on every fence seen outside its file (tio_timeline.c): 1 ms
 * to TIO_FENCE_TIMEOUT_MAX_MS, never unbounded.
 */
unsigned int tio_fence_timeout_ms = 10000;

static int tio_fence_timeout_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, TIO_FENCE_TIMEOUT_MAX_MS);
}

static const struct kernel_param_ops tio_fence_timeout_ops = {
	.set = tio_fence_timeout_set,
	.get = param_get_uint,
};

module_param_cb(fence_timeout_ms, &tio_fence_timeout_ops, &tio_fence_timeout_ms, 0644);
MODULE_PARM_DESC(fence_timeout_ms,
		 "A fence seen by other drivers expires with -ETIMEDOUT after this many ms (default 10000, at most 60000)");

/* The misc device's struct device, once registered. */
struct device *tio_device;

static int tio_open(struct inode *inode, struct file *file)
{
	struct tio_file *tf;

	tf = kzalloc(sizeof(*tf), GFP_KERNEL);
	if (!tf)
		return -ENOMEM;
	xa_init_flags(&tf->objs, XA_FLAGS_ALLOC1);
	tf->mm = current->mm;
	mmgrab(tf->mm);
	tio_uring_file_init(tf);
	tio_spare_init(tf);
	tio_debugfs_file_add(tf);
	file->private_data = tf;
	return nonseekable_open(inode, file);
}

static int tio_release(struct inode *inode, struct file *file)
{
	struct tio_file *tf = file->private_data;

	tio_debugfs_file_del(tf);
	tio_uring_file_release(tf);
	tio_obj_release_all(tf);
	tio_spare_release(tf);
	tio_ring_release(tf);
	mmdrop(tf->mm);
	kfree(tf);
	return 0;
}

/*
 * Each handle owns a window of 2^TIO_MMAP_SHIFT bytes of the file's offset
 * space: the object mapped is picked by the offset's high bits. Handles
 * start at 1: window 0 is the command ring's.
 */
static int tio_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct tio_file *tf = file->private_data;
	const unsigned int shift = TIO_MMAP_SHIFT - PAGE_SHIFT;
	unsigned long handle = vma->vm_pgoff >> shift;
	struct tio_obj *obj;
	int ret;

	if (handle > TIO_HANDLE_MAX)
		return -EINVAL;
	if (!handle)
		return tio_ring_mmap(tf, vma);
	rcu_read_lock();
	obj = xa_load(&tf->objs, handle);
	if (obj && !kref_get_unless_zero(&obj->ref))
		obj = NULL;
	rcu_read_unlock();
	if (!obj)
		return -ENOENT;
	if (!obj->ops->mmap) {
		ret = -ENODEV;
		goto out;
	}
	vma->vm_pgoff &= (1UL << shift) - 1;
	ret = obj->ops->mmap(obj, vma);
	/* vm_pgoff is read back by /proc/pid/maps only; restore it. */
	if (ret)
		vma->vm_pgoff |= handle << shift;
out:
	tio_obj_put(obj);
	return ret;
}

static const struct file_operations tio_fops = {
	.owner = THIS_MODULE,
	.open = tio_open,
	.release = tio_release,
	.unlocked_ioctl = tio_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = tio_mmap,
	.flush = tio_uring_flush,
#ifdef CONFIG_IO_URING
	.uring_cmd = tio_uring_cmd,
#endif
};

static struct miscdevice tio_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = TIO_DRV_NAME,
	.fops = &tio_fops,
	.mode = 0600,
};

static int __init tio_init(void)
{
	int ret;

	if (!tio_max_pinned)
		tio_max_pinned = (totalram_pages() << PAGE_SHIFT) / 2;
	tio_dmabuf_lockdep_prime();
	tio_debugfs_init();
	ret = misc_register(&tio_misc);
	if (ret)
		goto err_debugfs;
	/* Imported dma-bufs are attached to and DMA-mapped for this device. */
	tio_device = tio_misc.this_device;
	ret = dma_coerce_mask_and_coherent(tio_device, DMA_BIT_MASK(64));
	if (ret)
		goto err_misc;
	return 0;

err_misc:
	misc_deregister(&tio_misc);
err_debugfs:
	tio_debugfs_exit();
	return ret;
}

static void __exit tio_exit(void)
{
	misc_deregister(&tio_misc);
	tio_debugfs_exit();
	WARN_ON(atomic64_read(&tio_pinned_total));
}

module_init(tio_init);
module_exit(tio_exit);

MODULE_DESCRIPTION("tensorio: pinned and dma-buf tensor buffers and fence timelines");
MODULE_AUTHOR("The tensorio developers");
MODULE_LICENSE("GPL");
/* MODULE_IMPORT_NS() changed its argument in 6.13; this spelling did not. */
MODULE_INFO(import_ns, "DMA_BUF");
