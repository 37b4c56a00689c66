"""The toy lens's job: the server started through the one session, its answer verified by the
session, then each of a few answers read whole over a connection of its own and counted."""

from __future__ import annotations

import socket

from serverbench import files
from serverbench.cell.session import ServerSession
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Target

from toy_bytes.record import SCHEMA, BytesRecord

# Answers counted where the profile gives no `toy_bytes` settings (its schema's default).
ANSWERS = 3


def answer_size(host: str, port: int, timeout: float) -> int:
    """Every byte of one answer: the connection closed by the request, read to its end."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        size = 0
        while chunk := sock.recv(65536):
            size += len(chunk)
    return size


def run(config: dict, profile_name: str, server: str, json_path, log_path) -> None:
    profile = effective_profile(config, profile_name)
    settings = profile.settings("toy_bytes")  # its own setting, typed (settings.py), or None
    answers = settings.answers if settings else ANSWERS
    sizes: list[int] = []
    with ServerSession(config, Target(profile_name, server), profile, log_path) as session:
        launch = session.start()
        session.verify()
        sizes = [answer_size(launch.host, launch.port, profile.timeout) for _ in range(answers)]
    ending = session.ending
    record = BytesRecord(SCHEMA, profile_name, server, ending.status, ending.reason, tuple(sizes))
    files.write_json(json_path, record.to_dict())
