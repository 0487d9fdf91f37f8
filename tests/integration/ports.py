"""ports.py - free loopback ports for the servers the tests start.

Ports are chosen below the kernel's ephemeral range.  A port handed out by
bind(0) lies inside that range, so while its server is down (a broker or
daemon restarted by a test) any outgoing connection may be given it as its
source port; a client retrying connect() to that very port can even connect
to itself (TCP simultaneous open) and hold it, and the restarted server then
fails with EADDRINUSE.  Ports below the range are never used as source ports.
"""

import random
import socket


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(consecutive=1):
    """A port p on 127.0.0.1 such that p .. p+consecutive-1 are all free."""
    hi = _ephemeral_low() - consecutive
    lo = 10000 if hi > 12000 else 1024
    for _ in range(2000):
        p = random.randrange(lo, hi)
        if all(_bindable(p + i) for i in range(consecutive)):
            return p
    raise RuntimeError("no free loopback port below the ephemeral range")


if __name__ == "__main__":
    print(free_port())
