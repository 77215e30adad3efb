import json
import re
import subprocess
import sys
import tempfile
from collections import Counter

sys.path.insert(0, "/app")


def reference(text):
    words = re.findall(r"(?:[^\W_]|')+", text.lower())
    counts = Counter(words)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    avg = round(sum(map(len, words)) / len(words), 2) if words else 0.0
    return {"words": len(words), "unique": len(counts), "top": [list(t) for t in top], "avg_word_length": avg}


def run_cli(path):
    r = subprocess.run([sys.executable, "-m", "textstats", path], cwd="/app", capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_module_runs():
    out = run_cli("/app/sample.txt")
    assert set(out) == {"words", "unique", "top", "avg_word_length"}


def test_import_api():
    r = subprocess.run([sys.executable, "-c", "from textstats import count_words; print(count_words('A a b'))"],
                       cwd="/app", capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "{'a': 2, 'b': 1}"


def test_sample_numbers():
    assert run_cli("/app/sample.txt") == reference(open("/app/sample.txt", encoding="utf-8").read())


def test_other_text_and_empty():
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("Zoë's zoë's ZOË's!\tnaïve\n\nnaïve naïve, 3 3 3")
    assert run_cli(f.name) == reference(open(f.name, encoding="utf-8").read())
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("  \n ")
    assert run_cli(f.name) == {"words": 0, "unique": 0, "top": [], "avg_word_length": 0.0}
