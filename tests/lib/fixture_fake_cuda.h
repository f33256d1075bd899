/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the two parts of the fake CUDA driver share (fixture_fake_cuda.c:
 * devices, contexts, memory; fixture_fake_cuda_stream.c: streams and the
 * work on them): the driver API's types and result codes, and the state
 * and checks both use. Nothing declared here is exported from
 * fake_cuda.so (-fvisibility=hidden); API marks what is.
 */
#ifndef FIXTURE_FAKE_CUDA_H
#define FIXTURE_FAKE_CUDA_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201,
	INVALID_HANDLE = 400,
	NOT_READY = 600,
	LAUNCH_TIMEOUT = 702,
	HOST_MEMORY_ALREADY_REGISTERED = 712,
	HOST_MEMORY_NOT_REGISTERED = 713,
	NOT_PERMITTED = 800,
	NOT_SUPPORTED = 801,
};

#define REG_PORTABLE	0x1
#define REG_DEVICEMAP	0x2
#define REG_IOMEMORY	0x4
#define REG_READ_ONLY	0x8

struct ctx;

/* Guards the lists of allocations and registrations, and the counters. */
extern pthread_mutex_t fake_lock;
extern long live_streams;
/* Set on a stream's thread while it runs a host function. */
extern __thread int in_host_func;

long env_long(const char *name, long dflt);
int nth_call(const char *name, long *count);
CUresult ready(int need_ctx);
int reg_flags(const void *p, size_t n);
int is_device(CUdeviceptr p, size_t n);
int memops(void);
struct ctx *current_ctx(void);

#endif /* FIXTURE_FAKE_CUDA_H */
