"""A scripted proposer/builder/critic for the offline pipeline test, answering through the
loopback server in the Anthropic wire format (forced tool calls).

Three task requests, told apart by category:
- `text-processing`: a good task, accepted on the first build;
- `file-operations`: the first build's solution is wrong (validation fails), the repair
  passes validation but the critic finds a gap, the third build is accepted;
- `debugging`: every build's image fails to build (its Dockerfile checks for a file
  that is not there), so validation fails every round and the task is rejected.
"""

from __future__ import annotations

import json

from tbrl_lib.fake_llm_server.llm_server import RecordedRequest, Reply
from tbrl_lib.synth.families.base import BASE_IMAGE

DOCKERFILE = f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY data/ /app/data/\n"


def _task(instruction: str, files: dict, tests: str, weights: dict, solution: str) -> dict:
    return {
        "instruction": instruction,
        "dockerfile": DOCKERFILE,
        "files": {f"data/{k}": v for k, v in files.items()},
        "tests_py": tests,
        "weights": weights,
        "solution_sh": solution,
        "tags": ["scripted"],
    }


GOOD = _task(
    "Count the lines of /app/data/words.txt and write the number to /app/count.txt.",
    {"words.txt": "alpha\nbeta\ngamma\ndelta\n"},
    "from pathlib import Path\n\ndef test_count():\n"
    "    assert Path('/app/count.txt').read_text().strip() == '4'\n",
    {"test_count": 1.0},
    "wc -l < /app/data/words.txt > /app/count.txt\n",
)

SUM_TESTS = (
    "from pathlib import Path\n\ndef test_sum():\n"
    "    assert Path('/app/sum.txt').read_text().strip() == '60'\n"
)
SUM_INSTRUCTION = (
    "Add up the numbers in /app/data/nums.txt (one per line); write the total to /app/sum.txt."
)
REPAIR = [
    _task(
        SUM_INSTRUCTION,
        {"nums.txt": "10\n20\n30\n"},
        SUM_TESTS,
        {"test_sum": 1.0},
        "echo 0 > /app/sum.txt\n",
    ),  # wrong solution: validation fails
    _task(
        SUM_INSTRUCTION,
        {"nums.txt": "10\n20\n30\n"},
        SUM_TESTS + "\ndef test_no_trailing_text():\n"
        "    assert Path('/app/sum.txt').read_text() == '60\\n'\n",
        {"test_sum": 1.0, "test_no_trailing_text": 1.0},
        "awk '{s+=$1} END {print s}' /app/data/nums.txt > /app/sum.txt\n",
    ),  # critic: unstated
    _task(
        SUM_INSTRUCTION.replace("/app/sum.txt.", "/app/sum.txt as a single line."),
        {"nums.txt": "10\n20\n30\n"},
        SUM_TESTS,
        {"test_sum": 1.0},
        "awk '{s+=$1} END {print s}' /app/data/nums.txt > /app/sum.txt\n",
    ),
]

REJECT = {
    **_task(
        "Write the value of x from /app/data/config.txt to /app/x.txt.",
        {"config.txt": "x=1\n"},
        "from pathlib import Path\n\ndef test_x():\n    assert Path('/app/x.txt').read_text().strip() == '1'\n",
        {"test_x": 1.0},
        "cut -d= -f2 /app/data/config.txt > /app/x.txt\n",
    ),
    "dockerfile": DOCKERFILE + "RUN test -f /app/data/settings.ini\n",
}

PROPOSALS = {
    "text-processing": {
        "title": "Count lines",
        "summary": "count lines of a file",
        "starting_state": "a words file",
        "success_check": "count.txt",
    },
    "file-operations": {
        "title": "Sum numbers",
        "summary": "sum numbers in a file",
        "starting_state": "a numbers file",
        "success_check": "sum.txt",
    },
    "debugging": {
        "title": "Config presence",
        "summary": "config exists",
        "starting_state": "a config",
        "success_check": "exists",
    },
}


def answer(request: RecordedRequest) -> Reply:
    """The scripted reply for one request (stateless: decided by what the request says)."""
    tool = request.body["tool_choice"]["name"]
    user = request.body["messages"][-1]["content"]
    if tool == "propose_task":
        category = user.split("Category: ")[1].split("\n")[0]
        return Reply(json=PROPOSALS[category])
    if tool == "build_task":
        title = json.loads(user.split("Proposal:\n")[1].split("\n\n")[0])["title"]
        if title == "Count lines":
            return Reply(json=GOOD)
        if title == "Config presence":
            return Reply(json=REJECT)
        previous = user.split("Your previous version:\n")[1] if "previous version" in user else ""
        version = 2 if "test_no_trailing_text" in previous else (1 if previous else 0)
        return Reply(json=REPAIR[version])
    if tool == "review_task":
        if "test_no_trailing_text" in user:
            return Reply(
                json={
                    "aligned": False,
                    "issues": [
                        "test_no_trailing_text requires exactly one trailing newline, which the "
                        "instruction never states: say 'as a single line' or drop the test"
                    ],
                }
            )
        return Reply(json={"aligned": True, "issues": [], "summary": "tests match the instruction"})
    raise AssertionError(f"unexpected tool {tool}")
