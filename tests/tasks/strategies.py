"""Hypothesis strategies for `Task`s that exercise every field the formats must carry."""

from __future__ import annotations

from hypothesis import strategies as st

from tbrl_lib.tasks.model import Difficulty, Task

# Any text a file or field may hold (no lone surrogates: they are not encodable as UTF-8).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
NON_BLANK = TEXT.filter(lambda s: s.strip() != "")
NAME = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
REL_PATH = st.builds(
    lambda d, f, ext: (f"{d}/" if d else "") + f + ext,
    st.none() | NAME,
    NAME,
    st.sampled_from(["", ".txt", ".py", ".sh", ".json"]),
)
TAG = TEXT.filter(lambda s: s and s == s.strip() and "|" not in s)
# Reserved by some format for its own keys: metadata keys get a prefix so they never clash.
META_VALUE = st.recursive(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)
    | st.integers(-(2**62), 2**62)
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAME, inner, max_size=2),
    max_leaves=5,
)


def _is_tree(files: dict[str, str]) -> bool:
    """No path is both a file and a directory (no filesystem can hold that; writers refuse it)."""
    return not any(other.startswith(rel + "/") for rel in files for other in files)


POSITIVE = st.floats(min_value=0.001, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def tests_strategy(draw):
    names = draw(
        st.lists(st.from_regex(r"test_[a-z0-9_]{1,8}", fullmatch=True), max_size=4, unique=True)
    )
    has_pytest = draw(st.booleans()) or not names
    pytest = None
    if has_pytest:
        header = draw(st.sampled_from(["", "import os\n\n", "# comment\n"]))
        functions = "".join(f"def {n}():\n    assert True\n\n" for n in names)
        pytest = header + (functions or "def test_only():\n    pass\n")  # a test file defines tests
    script = draw(st.none() | NON_BLANK) if has_pytest else draw(NON_BLANK)
    defined = names or (["test_only"] if pytest and "test_only" in pytest else [])
    weighted = draw(st.lists(st.sampled_from(defined), unique=True)) if defined and pytest else []
    weights = {n: draw(POSITIVE) for n in weighted}
    files = draw(
        st.dictionaries(
            REL_PATH.filter(lambda p: p not in ("test_outputs.py", "test.sh", "test_weights.json")),
            TEXT,
            max_size=2,
        ).filter(_is_tree)
    )
    return {"pytest": pytest, "script": script, "weights": weights, "files": files}


@st.composite
def tasks(draw) -> Task:
    dockerfile = draw(st.none() | st.builds(lambda extra: f"FROM tbrl/base:trixie\n{extra}", TEXT))
    image = (
        draw(st.from_regex(r"[a-z]{1,8}/[a-z]{1,8}:[a-z0-9]{1,4}", fullmatch=True))
        if dockerfile is None
        else draw(st.none() | st.just("tbrl/base:trixie"))
    )
    context_path = REL_PATH.filter(
        lambda p: p.split("/")[0].split(".")[0] not in ("Dockerfile", "tests", "task", "solution")
    )
    env_files = draw(st.dictionaries(context_path, TEXT, max_size=3).filter(_is_tree))
    # Bytes that are not UTF-8 (0xff never is), as a Parquet or PNG file would be.
    binary = draw(
        st.dictionaries(
            context_path.map(lambda p: p + ".bin"),
            st.binary(max_size=24).map(lambda b: b"\xff" + b),
            max_size=2,
        )
    )
    binary = {p: b for p, b in binary.items() if _is_tree({**env_files, p: ""})}
    return Task.model_validate(
        {
            "id": draw(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,15}", fullmatch=True)),
            "instruction": draw(NON_BLANK),
            "difficulty": draw(st.sampled_from(list(Difficulty))),
            "category": draw(TEXT),
            "tags": draw(st.lists(TAG, max_size=3)),
            "title": draw(st.none() | TEXT),
            "use_case_category": draw(st.none() | TEXT),
            "environment": {
                "dockerfile": dockerfile,
                "image": image,
                "files": env_files,
                "binary_files": binary,
            },
            "tests": draw(tests_strategy()),
            "solution": draw(st.none() | TEXT),
            "limits": {
                "agent_timeout_sec": draw(POSITIVE),
                "test_timeout_sec": draw(POSITIVE),
                "build_timeout_sec": draw(POSITIVE),
                "cpus": draw(POSITIVE),
                "memory_mb": draw(st.integers(1, 1 << 20)),
                "storage_mb": draw(st.none() | st.integers(1, 1 << 20)),
                "pids": draw(st.integers(1, 10_000)),
                "allow_internet": draw(st.booleans()),
            },
            "provenance": {
                "created_at": draw(st.none() | st.just("2025-07-22T10:02:46.844265+00:00"))
            },
            "metadata": draw(st.dictionaries(NAME.map(lambda n: f"x_{n}"), META_VALUE, max_size=3)),
        }
    )
