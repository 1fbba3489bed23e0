#!/usr/bin/env python3
"""A filesystem whose file never returns its bytes: a hung FUSE or NFS mount, for tests.

Mounts a FUSE filesystem (the kernel's /dev/fuse protocol, spoken directly: no libfuse) at
MOUNTPOINT with one file, m.onnx (mode 0644, 4096 bytes). Lookups, attributes, opens and statfs
are answered; reads are never answered, so whoever reads the file waits until this process
ends (then the kernel fails the read). Used by deputy_hang_test.sh (issue 31 item 3: 16 reads
of such a file held every worker of gpucast serve and /healthz).

Usage (root): hung_fs.py MOUNTPOINT      (runs until SIGTERM; prints "mounted" when ready)
"""
import ctypes
import os
import signal
import struct
import sys

FUSE_LOOKUP, FUSE_FORGET, FUSE_GETATTR, FUSE_OPEN, FUSE_READ, FUSE_STATFS = 1, 2, 3, 14, 15, 17
FUSE_RELEASE, FUSE_FLUSH, FUSE_INIT, FUSE_OPENDIR, FUSE_RELEASEDIR = 18, 25, 26, 27, 29
FUSE_INTERRUPT, FUSE_BATCH_FORGET, FUSE_DESTROY = 36, 42, 38
ENOENT, ENOSYS = 2, 38
IN_HEADER = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid total_extlen padding
FILE_SIZE = 4096


def attr(ino):
    # fuse_attr: ino size blocks atime mtime ctime atimensec mtimensec ctimensec mode nlink uid gid rdev blksize flags
    if ino == 1:
        return struct.pack("<QQQQQQIIIIIIIIII", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0o40755, 2, 0, 0, 0, 4096, 0)
    return struct.pack("<QQQQQQIIIIIIIIII", 2, FILE_SIZE, 8, 0, 0, 0, 0, 0, 0, 0o100644, 1, 0, 0, 0, 4096, 0)


def main():
    mnt = sys.argv[1]
    fd = os.open("/dev/fuse", os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    opts = "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other" % fd
    if libc.mount(b"hungfs", mnt.encode(), b"fuse", 0, opts.encode()) != 0:
        err = ctypes.get_errno()
        sys.exit("hung_fs: mount: %s" % os.strerror(err))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    def reply(unique, payload=b"", error=0):
        os.write(fd, struct.pack("<IiQ", 16 + len(payload), -error, unique) + payload)

    print("mounted", flush=True)
    while True:
        try:
            req = os.read(fd, 1 << 20)
        except OSError:
            return
        length, op, unique, node, _uid, _gid, _pid, _ext, _pad = IN_HEADER.unpack_from(req)
        body = req[IN_HEADER.size:length]
        if op == FUSE_INIT:
            major, minor = struct.unpack_from("<II", body)
            # fuse_init_out: major minor max_readahead flags max_background congestion max_write time_gran
            # max_pages map_alignment flags2 unused[7]
            reply(unique, struct.pack("<IIIIHHIIHHI7I", 7, min(minor, 31), 65536, 0, 16, 12, 65536, 1, 0, 0, 0,
                                      *([0] * 7)))
        elif op == FUSE_LOOKUP:
            name = body.split(b"\0", 1)[0]
            if node == 1 and name == b"m.onnx":
                reply(unique, struct.pack("<QQQQII", 2, 0, 60, 60, 0, 0) + attr(2))
            else:
                reply(unique, error=ENOENT)
        elif op == FUSE_GETATTR:
            reply(unique, struct.pack("<QII", 60, 0, 0) + attr(node))
        elif op in (FUSE_OPEN, FUSE_OPENDIR):
            reply(unique, struct.pack("<QII", 1, 0, 0))
        elif op == FUSE_STATFS:
            reply(unique, struct.pack("<QQQQQIIII6I", 1000, 1000, 1000, 100, 100, 4096, 255, 4096, 0, *([0] * 6)))
        elif op in (FUSE_RELEASE, FUSE_RELEASEDIR, FUSE_FLUSH):
            reply(unique)
        elif op in (FUSE_READ, FUSE_INTERRUPT, FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_DESTROY):
            pass  # a read is never answered (the mount hangs); forget and interrupt need no answer
        else:
            reply(unique, error=ENOSYS)


if __name__ == "__main__":
    main()
