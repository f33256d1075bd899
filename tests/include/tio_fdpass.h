/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Passing one fd over a UNIX socket (SCM_RIGHTS), for the tests that hand
 * dma-bufs and sync_files to another process.
 */
#ifndef TIO_FDPASS_H
#define TIO_FDPASS_H

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

/* Send @fd over @sock with sendmsg() @flags; 0 or -errno. */
static inline int tio_send_fd(int sock, int fd, int flags)
{
	char byte = 'x', cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, flags) == 1 ? 0 : -errno;
}

/* Receive one fd from @sock with recvmsg() @flags; the fd or -1. */
static inline int tio_recv_fd(int sock, int flags)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, flags) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

#endif /* TIO_FDPASS_H */
