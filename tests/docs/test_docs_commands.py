"""The commands of docs/walkthrough.md and of README.md's Python quickstart, run
as their readers would: from a scratch directory holding a copy of examples/,
with the built commands first on PATH and a cold blob store, checking the
output the docs show (times, byte counts, ports and timestamps masked; `...`
stands for anything)."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from tagged_processes import survivors  # noqa: E402

SOURCE_DIR = Path(os.environ.get("PYPTO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
TAG = f"docs_commands_{os.getpid()}"

# What varies between runs: durations, byte counts, the coordinator's port.
VOLATILE = re.compile(r"\d+(?:\.\d+)? ms\b|\d+ bytes\b|(?<=tcp://127\.0\.0\.1:)\d+")
TIMESTAMP = re.compile(r"^\[\d\d:\d\d:\d\d\.\d{3}\] ")
# dispatch_program.json fields that differ between runs and hosts.
VOLATILE_KEYS = re.compile(r".*_ns$|.*_ms$|^ms$|^host$")


def line_pattern(line):
    out = []
    for i, part in enumerate(line.split("...")):
        if i:
            out.append(".*")
        pos = 0
        for m in VOLATILE.finditer(part):
            out.append(re.escape(part[pos:m.start()]))
            token = m.group(0)
            out.append(r"\d+(?:\.\d+)? ms" if token.endswith("ms")
                       else r"\d+ bytes" if token.endswith("bytes") else r"\d+")
            pos = m.end()
        out.append(re.escape(part[pos:]))
    return re.compile("".join(out))


def blocks(text):
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)


def environment(scratch):
    env = dict(os.environ)
    env["PATH"] = os.environ["PYPTO_TOOL_PATH"] + ":" + env.get("PATH", "")
    env["PYPTO_BLOB_STORE"] = str(scratch / "store" / "blobs")  # cold: the counts shown
    env["PYPTO_E2E_TAG"] = TAG
    env.pop("PYPTO_RUNTIME_LOG", None)
    env.pop("PTOAS_ROOT", None)
    return env


def expect_output(command, shown, r):
    """Every shown line, in order within its stream (stdout or stderr)."""
    streams = {name: [TIMESTAMP.sub("", line) for line in text.splitlines()]
               for name, text in (("stdout", r.stdout), ("stderr", r.stderr))}
    cursor = {"stdout": 0, "stderr": 0}
    for line in shown:
        if line == "...":
            continue
        pattern = line_pattern(line)
        for name, lines in streams.items():
            hit = next((i for i in range(cursor[name], len(lines))
                        if pattern.fullmatch(lines[i])), None)
            if hit is not None:
                cursor[name] = hit + 1
                break
        else:
            raise AssertionError(f"{command}: the docs show\n  {line}\nwhich is not in\n"
                                 f"--- stdout\n{r.stdout}--- stderr\n{r.stderr}")


def expect_json(command, shown, actual):
    if isinstance(shown, dict):
        assert isinstance(actual, dict) and sorted(shown) == sorted(actual), (command, actual)
        for key, value in shown.items():
            if not VOLATILE_KEYS.match(key):
                expect_json(f"{command}: {key}", value, actual[key])
            elif isinstance(value, dict):
                assert sorted(value) == sorted(actual[key]), (command, key, actual[key])
    else:
        assert shown == actual, (command, shown, actual)


def run_shell_block(block, scratch, env):
    steps = []  # (command, shown output lines)
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    for command, shown in steps:
        r = subprocess.run(["bash", "-c", command], cwd=scratch, env=env, capture_output=True,
                           text=True, timeout=300)
        failing = any("error:" in line for line in shown)
        assert (r.returncode != 0) == failing, \
            f"{command}: exit code {r.returncode}\n{r.stdout}{r.stderr}"
        text = "\n".join(shown)
        if text.startswith("{"):
            expect_json(command, json.loads(text), json.loads(r.stdout))
        else:
            expect_output(command, shown, r)


def expect_tree(block, scratch):
    """A listing of a directory: every name it shows exists, at its depth."""
    lines = block.splitlines()
    root = scratch / lines[0].split()[0]
    assert root.is_dir(), root
    parents = [(0, root)]
    for line in lines[1:]:
        depth = len(line) - len(line.lstrip())
        name = line.split()[0].rstrip(",")
        while parents[-1][0] >= depth:
            parents.pop()
        path = parents[-1][1] / name
        assert path.exists(), f"the docs list {path}, which the run did not write"
        parents.append((depth, path))


def test_walkthrough(tmp_path):
    shutil.copytree(SOURCE_DIR / "examples", tmp_path / "examples")
    env = environment(tmp_path)
    doc = (SOURCE_DIR / "docs" / "walkthrough.md").read_text()
    ran = 0
    for block in blocks(doc):
        if block.startswith("$ "):
            run_shell_block(block, tmp_path, env)
            ran += 1
        elif block.startswith("out/"):
            expect_tree(block, tmp_path)
        elif block.startswith(".kernel "):
            name = block.split()[1]
            listing = tmp_path / "out/row_parallel/next_levels/0/ptoas" / f"{name}.pto"
            assert listing.read_text() == block
        elif block.startswith("import "):
            source = (tmp_path / "examples/row_parallel.ptl").read_text()
            assert block.strip() in source
    assert ran == 6  # check, the mistake, compile, run, cat, edit + replay
    assert survivors(TAG) == [], "processes of the walkthrough were left behind"


def test_readme_python_quickstart(tmp_path):
    shutil.copytree(SOURCE_DIR / "examples", tmp_path / "examples")
    readme = (SOURCE_DIR / "README.md").read_text()
    [block] = [b for b in blocks(readme) if b.startswith("/usr/bin/python3 -c")]
    shown = re.search(r"prints `(.*?)`", readme[readme.index(block):]).group(1)
    # The interpreter the package is built for (ctest gives its build-tree copy).
    command = block.replace("/usr/bin/python3", sys.executable, 1)
    r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=environment(tmp_path),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [shown], r.stdout + r.stderr
    assert (tmp_path / "out/allreduce/golden/inputs/x.npy").exists()
    assert survivors(TAG) == [], "processes of the quickstart were left behind"
