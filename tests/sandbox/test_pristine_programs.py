"""`pristine_programs` on a directory standing in for the container's root (no Docker): the
manifest of an image's PATH directories, what `restore` puts back, and what `changed` sees."""

from __future__ import annotations

import os
import shutil

import pytest

from tbrl_lib.sandbox.pristine_programs import changed, load, restore, scan

BINS = ("/usr/local/bin", "/usr/bin", "/bin")
MIRROR = "/m"


@pytest.fixture
def image(tmp_path):
    """An image root: a few programs, an interpreter beside its stdlib, merged-usr `/bin`,
    and a mirror of it at `/m` (as the pristine volume holds it); returns (root, manifest)."""
    root = str(tmp_path)
    for rel, text in {
        "usr/bin/env": "#!env\n",
        "usr/bin/python3.13": "#!python\n",
        "usr/bin/sub/tool": "tool\n",
        "usr/local/bin/task-tool": "image version\n",
        "usr/lib/python3.13/os.py": "",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    os.chmod(tmp_path / "usr/bin/env", 0o755)
    os.symlink("python3.13", tmp_path / "usr/bin/python3")
    os.symlink("usr/bin", tmp_path / "bin")
    manifest = scan(BINS, root)
    for top in ("usr/bin", "usr/local/bin"):
        shutil.copytree(tmp_path / top, tmp_path / "m" / top, symlinks=True)
    return root, manifest


def test_the_manifest_lists_every_entry_parents_first_and_the_interpreter(image):
    root, manifest = image
    paths = [e[0] for e in manifest["entries"]]
    assert paths.index("/usr/bin") < paths.index("/usr/bin/sub") < paths.index("/usr/bin/sub/tool")
    kinds = {e[0]: e[1] for e in manifest["entries"]}
    assert (
        kinds["/bin"] == "l" and kinds["/usr/bin/python3"] == "l" and kinds["/usr/bin/env"] == "f"
    )
    assert "/bin/env" not in kinds, "a merged-usr link is one entry, not walked"
    assert manifest["interpreters"] == ["/usr/bin/python3.13"]


def test_untouched_programs_stay_and_the_interpreter_points_at_the_mirror(image):
    root, manifest = image
    inode = os.lstat(root + "/usr/bin/env").st_ino
    baseline, restored, problems = restore(manifest, MIRROR, "t1", root)
    assert restored == [] and problems == []
    assert os.lstat(root + "/usr/bin/env").st_ino == inode
    assert os.readlink(root + "/usr/bin/python3.13") == MIRROR + "/usr/bin/python3.13"
    assert changed(baseline, root) == []
    again = restore(manifest, MIRROR, "t2", root)  # a second verification: nothing to do
    assert again[1:] == ([], [])


def test_every_kind_of_change_is_put_back_and_new_entries_are_left(image):
    root, manifest = image
    with open(root + "/usr/bin/env", "a") as fh:  # written in place: same inode, new ctime
        fh.write("exit 0\n")
    os.utime(root + "/usr/local/bin/task-tool", (0, 0))  # only touched
    os.unlink(root + "/usr/bin/python3")
    with open(root + "/usr/bin/python3", "w") as fh:  # a link replaced by a file
        fh.write("fake")
    shutil.rmtree(root + "/usr/bin/sub")
    os.symlink("/tmp/elsewhere", root + "/usr/bin/sub")  # a directory replaced by a link
    with open(root + "/usr/bin/agent-new", "w") as fh:
        fh.write("the agent's own program")
    baseline, restored, problems = restore(manifest, MIRROR, "t3", root)
    assert problems == []
    assert set(restored) == {
        "/usr/bin/env",
        "/usr/local/bin/task-tool",
        "/usr/bin/python3",
        "/usr/bin/sub",
        "/usr/bin/sub/tool",
    }
    assert open(root + "/usr/bin/env").read() == "#!env\n"
    assert os.stat(root + "/usr/bin/env").st_mode & 0o777 == 0o755
    assert os.readlink(root + "/usr/bin/python3") == "python3.13"
    assert open(root + "/usr/bin/sub/tool").read() == "tool\n"
    assert os.path.islink(root + "/usr/bin/sub.agent-t3"), "what stood there is moved aside"
    assert open(root + "/usr/bin/agent-new").read() == "the agent's own program"
    assert changed(baseline, root) == []


def test_a_change_after_the_baseline_is_seen_whatever_it_looks_like_afterwards(image):
    root, manifest = image
    baseline, _, _ = restore(manifest, MIRROR, "t4", root)
    path = root + "/usr/bin/env"
    original = open(path).read()
    with open(path, "w") as fh:  # swapped in, then the same bytes written back
        fh.write("exit 0\n")
    with open(path, "w") as fh:
        fh.write(original)
    os.rename(root + "/usr/local/bin/task-tool", root + "/tmp-tool")
    os.rename(root + "/tmp-tool", root + "/usr/local/bin/task-tool")  # moved away and back
    assert changed(baseline, root) == ["/usr/local/bin/task-tool", "/usr/bin/env"]


def test_no_volume_no_manifest(tmp_path):
    assert load("/.tbrl-pristine", str(tmp_path)) is None
