#!/usr/bin/env python3
"""A Kalaha bot that connects itself (talk = "connect") and dies by SIGSEGV at its first move,
for the hosted-bot tests."""

import os
import signal
import socket

sock = socket.create_connection((os.environ["GAMED_HOST"], int(os.environ["GAMED_PORT"])))
sock.sendall(f"LOGIN {os.environ['GAMED_NAME']} {os.environ['GAMED_TOKEN']}\nTABLE {os.environ['GAMED_TABLE']}\n".encode())
for line in sock.makefile("r", encoding="ascii"):
    if line.startswith("YOURMOVE"):
        os.kill(os.getpid(), signal.SIGSEGV)
