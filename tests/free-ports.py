#!/usr/bin/env python3
"""Prints N different loopback ports, free now, on one line (default 1): the one port
picker of the test scripts (tests/common/operator.rs `free_port` is the Rust side's).

They are taken below the kernel's ephemeral range (32768 up): a port that range gives out,
as a bind to port 0 does, is soon the local end of some outbound connection, such as a
client's to the apiserver, and the listen that follows finds it taken.

    tests/free-ports.py [N]
"""
import random
import socket
import sys


def free_ports(n):
    found = []
    for port in random.sample(range(20000, 32000), 2000):
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))
        except OSError:
            continue
        found.append(port)
        if len(found) == n:
            return found
    sys.exit(f"no {n} free loopback ports in 20000-31999")


if __name__ == "__main__":
    print(" ".join(str(p) for p in free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1)))
