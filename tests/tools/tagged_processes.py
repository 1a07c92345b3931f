"""Processes a test started, found by the PYPTO_E2E_TAG=<tag> it put in their
environment (children inherit it): what must be gone when the test ends."""
import os
from pathlib import Path


def survivors(tag):
    """The pids of live (non-zombie) processes carrying PYPTO_E2E_TAG=<tag>."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if f"PYPTO_E2E_TAG={tag}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            pass
    return found
