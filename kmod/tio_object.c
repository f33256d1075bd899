// SPDX-License-Identifier: GPL-2.0
/*
 * Per-file object table: handles are small integers, private to the open
 * file that created them. Another file reaches an object only through a
 * dma-buf or sync_file fd.
 *
 * Lookups take no lock: under RCU they find the object and take a
 * reference with kref_get_unless_zero(). An object removed and released
 * concurrently stays readable until a grace period has passed because
 * every release frees its structure with kfree_rcu().
 *
 * Most commands name the object the previous one named (a stream that
 * emits and signals, a buffer allocated and used): tf->hot[type] keeps
 * the last one found, so that a repeated lookup is a compare instead of
 * an xarray walk. The cache holds no reference. It is written only under
 * the xarray's lock, with an object that is in the table at that moment,
 * and tio_obj_remove() clears it under the same lock before the table's
 * reference can go: a cached pointer is therefore never left to an
 * object past its removal, and a reader that loaded it just before is in
 * an RCU read section, where the structure is still readable and
 * kref_get_unless_zero() fails once the object is being released. A
 * lookup that races with STREAM_DESTROY or BUF_FREE of the same handle
 * (another thread) finds the object or -ENOENT, as an xarray lookup
 * would.
 */
#include <linux/err.h>
#include <linux/rcupdate.h>

#include "tio_priv.h"

/**
 * tio_obj_init() - initialise an object header with one reference
 * @obj: the object
 * @type: enum tio_obj_type
 * @ops: its operations; @ops->release is mandatory
 */
void tio_obj_init(struct tio_obj *obj, u32 type, const struct tio_obj_ops *ops)
{
	kref_init(&obj->ref);
	obj->type = type;
	obj->handle = 0;
	obj->ops = ops;
}

/**
 * tio_obj_insert() - publish an object in a file's table
 * @tf: the file
 * @obj: the object; the table takes over the caller's reference
 *
 * On success obj->handle is set. Return: 0, -ENOMEM or -EBUSY (no handle).
 */
int tio_obj_insert(struct tio_file *tf, struct tio_obj *obj)
{
	u32 handle;
	int ret;

	ret = xa_alloc(&tf->objs, &handle, obj, XA_LIMIT(1, TIO_HANDLE_MAX),
		       GFP_KERNEL);
	if (ret)
		return ret;
	/* Readers only see the object once xa_alloc() stored it. */
	WRITE_ONCE(obj->handle, handle);
	return 0;
}

/**
 * tio_obj_get() - look up a handle and take a reference
 * @tf: the file
 * @handle: the handle
 * @type: the type the caller expects
 *
 * Return: the object, or ERR_PTR(-ENOENT) for an unknown handle or one of
 * another type.
 */
struct tio_obj *tio_obj_get(struct tio_file *tf, u32 handle, u32 type)
{
	struct tio_obj *obj;

	rcu_read_lock();
	obj = rcu_dereference(tf->hot[type]);
	if (likely(obj && READ_ONCE(obj->handle) == handle &&
		   kref_get_unless_zero(&obj->ref)))
		goto out;
	obj = xa_load(&tf->objs, handle);
	if (obj && (obj->type != type || !kref_get_unless_zero(&obj->ref)))
		obj = NULL;
	if (obj) {
		/* Cached only while it is still in the table (see above). */
		xa_lock(&tf->objs);
		if (xa_load(&tf->objs, handle) == obj &&
		    READ_ONCE(obj->handle) == handle)
			rcu_assign_pointer(tf->hot[type], obj);
		xa_unlock(&tf->objs);
	}
out:
	rcu_read_unlock();
	return obj ?: ERR_PTR(-ENOENT);
}

/**
 * tio_obj_remove() - take a handle out of the table
 * @tf: the file
 * @handle: the handle
 * @type: the type the caller expects
 *
 * Return: the object with the table's reference, now the caller's, or
 * ERR_PTR(-ENOENT).
 */
struct tio_obj *tio_obj_remove(struct tio_file *tf, u32 handle, u32 type)
{
	struct tio_obj *obj;

	xa_lock(&tf->objs);
	obj = xa_load(&tf->objs, handle);
	if (obj && obj->type == type) {
		__xa_erase(&tf->objs, handle);
		if (rcu_access_pointer(tf->hot[type]) == obj)
			RCU_INIT_POINTER(tf->hot[type], NULL);
	} else {
		obj = NULL;
	}
	xa_unlock(&tf->objs);
	return obj ?: ERR_PTR(-ENOENT);
}

static void tio_obj_kref_release(struct kref *ref)
{
	struct tio_obj *obj = container_of(ref, struct tio_obj, ref);

	obj->ops->release(obj);
}

/**
 * tio_obj_put() - drop a reference; the last one releases the object
 * @obj: the object (NULL and error pointers are ignored)
 */
void tio_obj_put(struct tio_obj *obj)
{
	if (!IS_ERR_OR_NULL(obj))
		kref_put(&obj->ref, tio_obj_kref_release);
}

/**
 * tio_obj_release_all() - empty a file's table on release
 * @tf: the file; no other user can reach its table any more
 */
void tio_obj_release_all(struct tio_file *tf)
{
	struct tio_obj *obj;
	unsigned long index;
	unsigned int type;

	for (type = 0; type < TIO_OBJ_NR; type++)
		RCU_INIT_POINTER(tf->hot[type], NULL);
	xa_for_each(&tf->objs, index, obj) {
		xa_erase(&tf->objs, index);
		tio_obj_put(obj);
	}
	xa_destroy(&tf->objs);
}
