/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The optional torch accelerator's C interface: tensorio._torch_accel, a
 * C++ module built against Debian's libtorch-dev, exports one capsule
 * holding this table. The extension finds it when it first sees a
 * torch.Tensor (call argument or from_dlpack()) and otherwise takes the
 * DLPack path.
 */
#ifndef TENSORIO_PY_TORCH_ACCEL_H
#define TENSORIO_PY_TORCH_ACCEL_H

#include <stdint.h>

#define PT_TORCH_ACCEL_CAPSULE "tensorio._torch_accel.api"
#define PT_TORCH_ACCEL_ABI 2

/**
 * struct pt_torch_accel - what the accelerator does for the extension
 * @abi: PT_TORCH_ACCEL_ABI
 * @fill: for a torch.Tensor @o (exact type, checked), fill the DLTensor
 *	@dl as torch's own DLPack export would, without allocating: shape
 *	and strides copied into @shape and @strides (room for @room each),
 *	as torch's export gives them their own view; a reference to the
 *	tensor's storage in *@owner (what torch's export keeps too: the
 *	tensor may get other storage meanwhile, x.set_()). Returns 1 filled;
 *	0 for a tensor DLPack export refuses or may not see as it is
 *	(requires_grad, conjugate or negative bit, a layout other than
 *	strided, a device or dtype it has no code for, more than @room
 *	dimensions): the caller then takes the DLPack path, which says why.
 *	Raises nothing, needs the GIL.
 * @release: drop the storage reference *@owner took; any thread, GIL or not.
 */
struct pt_torch_accel {
	unsigned int abi;
	int (*fill)(PyObject *o, void *dl, void **owner, int64_t *shape,
		    int64_t *strides, int room);
	void (*release)(void *owner);
};

#endif /* TENSORIO_PY_TORCH_ACCEL_H */
