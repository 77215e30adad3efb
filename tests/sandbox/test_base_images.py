"""The offline base images: present, labelled as substitutes, and behaving like the images
they stand for (so upstream Dockerfiles build unchanged)."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

import pytest

from tbrl_lib.sandbox import base_images

pytestmark = pytest.mark.docker


def _run(client, image: str, script: str) -> str:
    out = client.containers.run(image, ["bash", "-c", script], remove=True,
                                network_mode="none", stderr=True)
    return out.decode()


def test_status_lists_base_and_every_public_name(docker_client, base_image):
    rows = {row.name: row for row in base_images.status(docker_client)}
    assert set(rows) == {base_images.BASE_IMAGE, *base_images.SUBSTITUTES}
    assert all(row.present for row in rows.values())
    for name in base_images.SUBSTITUTES:
        assert rows[name].substitute, f"{name} should be labelled as a local substitute"
        labels = docker_client.images.get(name).labels
        assert labels[base_images.LABEL_SUBSTITUTE] == name
        assert labels[base_images.LABEL_RECIPE] == base_images.recipe_hash()


def test_bootstrap_is_a_noop_when_images_are_current(docker_client, base_image):
    assert base_images.bootstrap(docker_client, log=lambda _msg: None) == []


@pytest.mark.parametrize("name", sorted(base_images.SUBSTITUTES))
def test_substitute_has_the_tools_upstream_dockerfiles_use(docker_client, base_image, name):
    out = _run(docker_client, name,
               "for t in python python3 pip pytest git curl tmux bash; do command -v $t; done")
    assert len(out.split()) == 8, out


def _tiny_wheel() -> bytes:
    """A minimal valid wheel, built here so the test needs no network."""
    files = {
        "tbrl_probe.py": b"ANSWER = 42\n",
        "tbrl_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tbrl-probe\nVersion: 1.0\n",
        "tbrl_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: tbrl\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append("tbrl_probe-1.0.dist-info/RECORD,,")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr("tbrl_probe-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return buf.getvalue()


def test_pip_installs_system_wide(docker_client, base_image):
    """The PEP 668 guard is lifted, as in the python images upstream tasks expect."""
    wheel = base64.b64encode(_tiny_wheel()).decode()
    out = _run(docker_client, base_image,
               f"echo {wheel} | base64 -d > /tmp/tbrl_probe-1.0-py3-none-any.whl && "
               "pip install -q --no-index /tmp/tbrl_probe-1.0-py3-none-any.whl && "
               "cd / && python -c 'import tbrl_probe; print(tbrl_probe.ANSWER)'")
    assert out.strip().endswith("42"), out
