"""The image's programs as the tests get them: a manifest of the image's PATH directories
(written when the pristine volume is built), their restoration in the container before the
tests run, and the check afterwards that none changed while they ran.

    manifest = scan(BIN_DIRS)                               # in the image (volume build)
    baseline, restored, problems = restore(manifest, mirror, tag)   # in the container
    ... tests run ...
    changed(baseline)                                       # [] unless something moved

Standard library only: `scan` runs in the throwaway container that builds the pristine volume
and `restore`/`changed` in the verifier's runner; their source travels inside those programs
(`pristine_volume.BUILD_SCRIPT`, `rewards.verifier.BOOT`). Paths are the image's absolute
paths; `root` prefixes every filesystem access (tests use a directory as the root).

Why it works without privileges. The sandbox has no CAP_SYS_ADMIN and Docker's seccomp
profile refuses `mount` and `unshare` (measured: `unshare -U -r -m` fails with EPERM inside
the sandbox, `docker exec --privileged` cannot even start here), so the verifier cannot give
the tests a private view of the filesystem. It restores the files instead. An entry the agent
never touched is the image layer's own inode: overlayfs shows it with the lower file's inode
number and ctime in every container of the image. Any change (write, chmod, touch, rename,
replacement, the copy-up that precedes them) gives it a new ctime, which no process can set
back (that takes CAP_SYS_TIME, dropped too). So `(st_ino, st_ctime_ns)` equal to the
manifest's means untouched, and anything else is restored from the mirror: a file copied back
(content, owner, mode, mtime), a link re-made with its target, a directory re-made (whatever
stood there is moved aside). New entries the agent added are left alone.

Interpreters. Each Python interpreter of the image (`<prefix>/bin/python3.X` beside a stdlib
`<prefix>/lib/python3.X/os.py`) is pointed at the mirror's copy, changed or not. Started by
absolute path or through a shebang, it then finds its prefix under the mirror: the image's
stdlib and packages, the `sitecustomize` that adds the agent's new packages after them, and
none of the container's `.pth` files (whose `import` lines would run the agent's code first).

Races. A background process of the agent may change an entry after it was restored. The
baseline is every entry's identity as the tests start (the manifest's for untouched entries,
what `restore` made for the others, whose contents it compares with the mirror only *after*
taking the baseline); `changed` lists every entry whose identity differs after the tests, and
the verifier then scores 0. So does a test that rewrites one of the image's programs itself.

Left out: the PATH directories' parents (`/usr`, `/usr/local`) are not restored; directories
are compared by inode only, so on an overlayfs with `redirect_dir=on` a process that renames a
whole PATH directory away and back during the tests goes unseen (Docker's overlay2 here runs
with it off); a storage driver without shared lower inodes (`vfs`) makes every entry look
changed, so everything is copied back on every verification (correct, slower).
"""

import filecmp
import json
import os
import shutil
import stat

MANIFEST = ".manifest.json"
"""The manifest's file name at the root of the pristine volume."""
KINDS = {stat.S_IFDIR: "d", stat.S_IFLNK: "l", stat.S_IFREG: "f"}


def _kind(st):
    return KINDS.get(stat.S_IFMT(st.st_mode))


def _lstat(path):
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def scan(bin_dirs, root=""):
    """The manifest of `bin_dirs` under `root`: one `[path, kind, ino, ctime_ns, uid, gid,
    mode, link target]` per directory, file and link (parents before children), and the
    image's Python interpreters."""
    entries = []

    def add(path):
        st = _lstat(root + path)
        kind = _kind(st) if st else None
        if kind is None:  # absent, or a device, fifo or socket (the mirror skips those too)
            return
        target = os.readlink(root + path) if kind == "l" else None
        entries.append(
            [
                path,
                kind,
                st.st_ino,
                st.st_ctime_ns,
                st.st_uid,
                st.st_gid,
                st.st_mode & 0o7777,
                target,
            ]
        )

    for top in bin_dirs:
        add(top)
        if not os.path.isdir(root + top) or os.path.islink(root + top):
            continue
        for base, dirs, files in os.walk(root + top):
            dirs.sort()
            for name in sorted(dirs + files):
                add(os.path.join(base, name)[len(root) :])
    kinds = {e[0]: e[1] for e in entries}
    interpreters = []
    for prefix in ("/usr", "/usr/local"):
        lib = root + prefix + "/lib"
        for name in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
            exe = prefix + "/bin/" + name
            if os.path.isfile(os.path.join(lib, name, "os.py")) and kinds.get(exe) in ("f", "l"):
                interpreters.append(exe)
    return {"entries": entries, "interpreters": interpreters}


def _identity(st):
    """What `changed` compares: the inode for a directory, inode and ctime for the rest."""
    if st is None:
        return None
    return [st.st_ino] if _kind(st) == "d" else [st.st_ino, st.st_ctime_ns]


def _put(real, make, tag):
    """Replace `real` by what `make(tmp)` creates beside it (a directory there moved aside)."""
    tmp = os.path.join(os.path.dirname(real), ".tbrl-restore-" + tag)
    if os.path.lexists(tmp):
        shutil.rmtree(tmp) if os.path.isdir(tmp) and not os.path.islink(tmp) else os.unlink(tmp)
    make(tmp)
    if os.path.isdir(real) and not os.path.islink(real):
        os.rename(real, real + ".agent-" + tag)
    os.rename(tmp, real)


def _restore_one(entry, mirror, tag, root):
    path, kind, _ino, _ctime, uid, gid, mode, target = entry
    real = root + path
    if kind == "d":
        if os.path.lexists(real):
            os.rename(real, real + ".agent-" + tag)
        os.mkdir(real)
        os.chown(real, uid, gid)
        os.chmod(real, mode)
    elif kind == "l":

        def link(tmp):
            os.symlink(target, tmp)
            os.lchown(tmp, uid, gid)

        _put(real, link, tag)
    else:
        source = root + mirror + path

        def copy(tmp):
            shutil.copyfile(source, tmp, follow_symlinks=False)
            os.chown(tmp, uid, gid)
            os.chmod(tmp, mode)  # after chown, which clears set-id bits
            st = os.stat(source)
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))

        _put(real, copy, tag)


def restore(manifest, mirror, tag, root=""):
    """Make the container's entries the image's again (see the module docstring).

    Returns `(baseline, restored, problems)`: the identity of every entry as the tests start,
    the paths restored (interpreters not counted), and what could not be restored or changed
    while being restored (the verifier scores 0 unless it is empty)."""
    baseline, restored, problems = {}, [], []
    interpreters = set(manifest["interpreters"])
    for entry in manifest["entries"]:
        path, kind, ino, ctime = entry[:4]
        real = root + path
        st = _lstat(real)
        try:
            if path in interpreters:
                want = mirror + path
                if not (st and _kind(st) == "l" and os.readlink(real) == want):
                    _put(real, lambda tmp, want=want: os.symlink(want, tmp), tag)
            elif kind == "d":
                if not (st and _kind(st) == "d"):
                    _restore_one(entry, mirror, tag, root)
                    restored.append(path)
            elif not (st and _kind(st) == kind and [st.st_ino, st.st_ctime_ns] == [ino, ctime]):
                _restore_one(entry, mirror, tag, root)
                restored.append(path)
        except OSError as exc:
            problems.append(f"could not restore {path}: {exc}")
        baseline[path] = _identity(_lstat(real))
    for path, kind, *_rest, target in manifest["entries"]:  # only now, after the baseline
        if path not in interpreters and path not in restored:
            continue
        real = root + path
        if path in interpreters:
            same = os.path.islink(real) and os.readlink(real) == mirror + path
        elif kind == "l":
            same = os.path.islink(real) and os.readlink(real) == target
        elif kind == "f":
            same = _kind(os.lstat(real)) == "f" and filecmp.cmp(real, root + mirror + path, False)
        else:
            same = os.path.isdir(real) and not os.path.islink(real)
        if not same:
            problems.append(f"{path} changed while it was being restored")
    return baseline, restored, problems


def changed(baseline, root=""):
    """The entries whose identity differs from `baseline` now."""
    return [path for path, ident in baseline.items() if _identity(_lstat(root + path)) != ident]


def load(mirror, root=""):
    """The manifest in the pristine volume mounted at `mirror`, or None (no volume)."""
    path = root + mirror + "/" + MANIFEST
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
