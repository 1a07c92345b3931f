"""docs/python.md's snippets, run in order as its readers would: the ```python
blocks in one interpreter, the ```sh blocks through the shell with this test's
interpreter as `python3`, all from a directory holding a copy of examples/."""
import re
import shutil
import subprocess
import sys

from conftest import EXAMPLES, SOURCE_DIR

DOC = SOURCE_DIR / "docs" / "python.md"


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_python_snippets_run_in_order(tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    snippets = blocks("python")
    assert len(snippets) >= 8
    script = "\n".join(
        f"{code}\nprint('snippet {i} ok', flush=True)\n" for i, code in enumerate(snippets))
    (tmp_path / "quickstart.py").write_text(script)
    r = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for i in range(len(snippets)):
        assert f"snippet {i} ok" in r.stdout

    # The shell snippets use the builds the Python ones wrote.
    shell = [line for block in blocks("sh") for line in block.splitlines()
             if line.startswith(("python3 -m pypto", "/usr/bin/python3 -c"))]
    assert len(shell) == 3
    for line in shell:
        command = sys.executable + " " + line.split(" ", 1)[1]
        r = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, command + "\n" + r.stdout + r.stderr
        if "execute_artifact" in line:
            assert r.stdout == "PYPTO_EXEC_RESULT=PASS device=0\n"
        elif "replay" in line:
            assert "validation: passed" in r.stdout
        else:
            assert r.stdout == "0.1.0\n"
