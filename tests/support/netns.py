"""Run a command in a network namespace of its own with its loopback up:

    unshare --net -- python tests/support/netns.py COMMAND...

The mini-cloud listens on fixed ports of 127.0.0.1; a second one (tests/support/run_suites.py's lane e2e-2) gets
its own 127.0.0.1 this way. `unshare` is util-linux's (Debian: essential); the loopback is brought up with the
kernel's interface ioctls, so iproute2 is not needed. Needs root, as `make test` runs in CI.
"""
from __future__ import annotations

import fcntl
import os
import socket
import struct
import sys

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


if __name__ == "__main__":
    loopback_up()
    os.execvp(sys.argv[1], sys.argv[1:])
