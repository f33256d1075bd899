# SPDX-License-Identifier: LGPL-2.1-or-later
"""tensorio.net between two processes, over shared memory and TCP loopback:
descriptors, remote keys packed and unpacked, get and put (waited and on a
stream point), bytes compared on both sides. Waits are bounded."""

import os
import select
import subprocess
import sys
import time

import pytest

import tensorio

net = pytest.importorskip("tensorio.net")

N = 256 * 256 * 4
CAP = 60.0  # seconds: generous, never a timing assert

# The peer: a buffer with pattern 1, its address, key and descriptor; then
# "check" compares the first half against pattern 2, "quit" leaves. Its
# answers start with "@": UCX logs to stdout too.
PEER = r"""
import sys, tensorio, tensorio.net as tn
N = %d
ALLOC = %s
def pat(seed, n):
    return bytes((i * 7 + seed) %% 251 for i in range(n))
w = tn.Worker()
print("@" + w.address().hex(), flush=True)
ep = w.connect(bytes.fromhex(sys.stdin.readline().strip()), "parent")
if ALLOC:
    m = w.alloc(N)
    b = m.buffer
else:
    b = tensorio.Buffer(N)
    m = w.register(b)
memoryview(b)[:] = pat(1, N)
print("@" + m.rkey_pack().hex(), flush=True)
ep.send_desc(m, "float32", (256, 256), tag=5, timeout=30)
for line in sys.stdin:
    if line.strip() != "check":
        break
    ok = bytes(memoryview(b)[:N // 2]) == pat(2, N // 2) and \
        bytes(memoryview(b)[N // 2:]) == pat(1, N)[N // 2:]
    print("@ok" if ok else "@bad", flush=True)
"""


def pat(seed, n):
    return bytes((i * 7 + seed) % 251 for i in range(n))


class Peer:
    def __init__(self, env, alloc=False):
        self.p = subprocess.Popen([sys.executable, "-c", PEER % (N, alloc)], env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def line(self):
        deadline = time.monotonic() + CAP
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.p.stdout], [], [], 1.0)
            if r:
                s = self.p.stdout.readline()
                assert s, "the peer exited (status %s)" % self.p.poll()
                if s.startswith("@"):
                    return s[1:].strip()
        pytest.fail("no answer from the peer in %d s" % CAP)

    def send(self, s):
        self.p.stdin.write(s + "\n")
        self.p.stdin.flush()

    def stop(self):
        if self.p.poll() is None:
            try:
                self.send("quit")
                self.p.wait(CAP)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait()
        return self.p.returncode


@pytest.mark.parametrize("tls", ["sm,self", "tcp,self"])
def test_two_processes(tls, monkeypatch):
    monkeypatch.setenv("UCX_TLS", tls)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    peer = Peer(env)
    try:
        w = net.Worker()
        peer_addr = bytes.fromhex(peer.line())
        peer.send(w.address().hex())
        ep = w.connect(peer_addr, "child")
        assert ep.transports
        packed = bytes.fromhex(peer.line())

        rk = ep.recv_desc(5, timeout=CAP)
        assert rk.nbytes == N and rk.dtype == "float32" and rk.shape == (256, 256)
        b = tensorio.Buffer(N)
        m = w.register(b)
        # Whole get, waited for.
        assert ep.get(m, rk) == 0
        assert bytes(memoryview(b)) == pat(1, N)
        # The same memory through the packed key; a range at odd offsets.
        rk2 = ep.unpack(packed)
        assert rk2.nbytes == N
        memoryview(b)[:] = bytes(N)
        ep.get(m, rk2, local_off=3, remote_off=1001, nbytes=5000)
        assert bytes(memoryview(b)[3:5003]) == pat(1, N)[1001:6001]
        assert bytes(memoryview(b)[:3]) == bytes(3)
        # Half a put, completion on a stream point.
        memoryview(b)[:] = pat(2, N)
        s = tensorio.Stream()
        point = ep.put(m, rk, nbytes=N // 2, stream=s)
        assert point > 0
        assert s.wait(point, timeout=CAP) == 0
        peer.send("check")
        assert peer.line() == "ok"
        # Bad input: a clear error, nothing leaked (conftest checks).
        with pytest.raises(ValueError, match="exceeds the"):
            ep.get(m, rk, local_off=N, nbytes=1)
        with pytest.raises(ValueError, match="not a tensorio remote key"):
            ep.unpack(b"x" * 40)
        # Close while the peer still progresses (docs/net.md).
        del rk, rk2, ep, m, s
    finally:
        assert peer.stop() == 0


@pytest.mark.parametrize("tls", ["sm,self", "tcp,self"])
def test_alloc_two_processes_buffer_outlives(tls, monkeypatch):
    """Worker.alloc on both sides (UCX's memory): get and put, bytes
    compared; the local Memory.buffer and a tensor of it outlive the
    Memory and the Worker, still readable and writable."""
    monkeypatch.setenv("UCX_TLS", tls)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    peer = Peer(env, alloc=True)
    try:
        w = net.Worker()
        peer_addr = bytes.fromhex(peer.line())
        peer.send(w.address().hex())
        ep = w.connect(peer_addr, "child")
        peer.line()  # the packed key, unused here
        rk = ep.recv_desc(5, timeout=CAP)
        m = w.alloc(N - 100)  # rounded up to whole pages
        assert m.nbytes == N
        b = m.buffer
        assert b.nbytes == N and bytes(memoryview(b)) == bytes(N)
        assert ep.get(m, rk) == 0
        assert bytes(memoryview(b)) == pat(1, N)
        memoryview(b)[:] = pat(2, N)
        s = tensorio.Stream()
        assert s.wait(ep.put(m, rk, nbytes=N // 2, stream=s), timeout=CAP) == 0
        peer.send("check")
        assert peer.line() == "ok"
        with pytest.raises(ValueError, match="size 0 must be positive"):
            w.alloc(0)
        t = b.tensor((N // 4,), "uint32")
        del rk, ep, s, m, w
        # Memory and Worker gone: the buffer and its tensor still work.
        assert bytes(memoryview(b)[:N // 2]) == pat(2, N // 2)
        del b
        mt = memoryview(t)
        mt[0] = 0xdeadbeef
        assert mt[0] == 0xdeadbeef and mt[N // 4 - 1] == int.from_bytes(
            pat(2, N)[N - 4:], "little")
        del mt, t
    finally:
        assert peer.stop() == 0
