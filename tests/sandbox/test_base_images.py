"""The offline base images: present, labelled as substitutes, and behaving like the images
they stand for (so upstream Dockerfiles build unchanged), whatever tag a Dockerfile names."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

import pytest

from tbrl_lib.sandbox import base_images

pytestmark = pytest.mark.docker


def _run(client, image: str, script: str) -> str:
    out = client.containers.run(
        image, ["bash", "-c", script], remove=True, network_mode="none", stderr=True
    )
    return out.decode()


def test_status_lists_family_images_and_every_public_name(docker_client, base_image):
    rows = {row.name: row for row in base_images.status(docker_client)}
    assert {base_images.BASE_IMAGE, base_images.UBUNTU_IMAGE, *base_images.PRETAGGED} <= set(rows)
    assert all(row.present for row in rows.values())
    for name in base_images.PRETAGGED:
        assert rows[name].substitute, f"{name} should be labelled as a local substitute"
        labels = docker_client.images.get(name).labels
        assert labels[base_images.LABEL_SUBSTITUTE] == name
        assert labels[base_images.LABEL_RECIPE] == base_images.recipe_hash()


def test_bootstrap_is_a_noop_when_images_are_current(docker_client, base_image):
    assert base_images.bootstrap(docker_client, log=lambda _msg: None) == []


@pytest.mark.parametrize("name", sorted(base_images.PRETAGGED))
def test_substitute_has_the_tools_upstream_dockerfiles_use(docker_client, base_image, name):
    out = _run(
        docker_client, name, "for t in python3 pytest git curl tmux bash; do command -v $t; done"
    )
    assert len(out.split()) == 6, out


def test_python_family_has_python_and_pip_on_path(docker_client, base_image):
    out = _run(
        docker_client,
        "ghcr.io/laude-institute/t-bench/python-3-13:latest",
        "python --version && pip --version && python3 -c 'import sys; print(sys.version_info[:2])'",
    )
    assert "Python 3.13" in out and "(3, 13)" in out, out


def test_ubuntu_family_is_shaped_like_the_published_image(docker_client, base_image):
    """No `python` alias (Dockerfiles add it), python3-pip installs with no network (it is
    there and so are the package lists), and the PEP 668 guard is kept as on Ubuntu."""
    out = _run(
        docker_client,
        "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest",
        "command -v python || echo no-python-alias; ln -s /usr/bin/python3 /usr/bin/python "
        "&& python --version; apt-get update >/dev/null 2>&1; "
        "apt-get install -y python3-pip >/dev/null && echo pip-installed; "
        "pip install --no-index nothing 2>&1 | grep -c externally-managed; "
        "for t in curl git tmux; do command -v $t; done",
    )
    assert "no-python-alias" in out and "Python 3.13" in out and "pip-installed" in out, out
    assert "\n1\n" in out and "/usr/bin/tmux" in out, out


def test_any_tag_of_a_family_is_substituted_on_demand(docker_client, base_image):
    name = "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20990101"  # a tag nobody pre-tagged
    try:
        assert base_images.ensure_substitutes(docker_client, [name, "tbrl/base:trixie"]) == [name]
        labels = docker_client.images.get(name).labels
        assert labels[base_images.LABEL_SUBSTITUTE] == name
        assert labels["tbrl.source"] == base_images.UBUNTU_IMAGE
        assert name in base_images.substitutes(docker_client)
        assert base_images.ensure_substitutes(docker_client, [name]) == []  # present: left alone
    finally:
        docker_client.images.remove(name, force=True)


def test_a_substitute_of_a_rebuilt_image_is_made_again(docker_client, base_image):
    name = "ghcr.io/laude-institute/t-bench/python-3-13:20990101"
    old = {
        base_images.LABEL_SUBSTITUTE: name,
        base_images.LABEL_RECIPE: base_images.recipe_hash(),
        base_images.LABEL_SOURCE_ID: "sha256:an-image-since-rebuilt",
    }
    try:
        base_images._build(docker_client, f"FROM {base_images.BASE_IMAGE}\n", name, old)
        assert "stale" in {r.name: r.detail for r in base_images.status(docker_client)}[name]
        assert base_images.ensure_substitutes(docker_client, [name]) == [name]
        labels = docker_client.images.get(name).labels
        assert labels[base_images.LABEL_SOURCE_ID] == docker_client.images.get(base_image).id
    finally:
        docker_client.images.remove(name, force=True)


def test_names_of_no_family_are_left_alone_and_digests_are_refused(docker_client, base_image):
    assert base_images.ensure_substitutes(docker_client, ["example.org/some/image:1"]) == []
    with pytest.raises(base_images.SubstituteError, match="use a tag instead"):
        base_images.ensure_substitutes(
            docker_client, ["ghcr.io/laude-institute/t-bench/python-3-13@sha256:" + "0" * 64]
        )


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
    out = _run(
        docker_client,
        base_image,
        f"echo {wheel} | base64 -d > /tmp/tbrl_probe-1.0-py3-none-any.whl && "
        "pip install -q --no-index /tmp/tbrl_probe-1.0-py3-none-any.whl && "
        "cd / && python -c 'import tbrl_probe; print(tbrl_probe.ANSWER)'",
    )
    assert out.strip().endswith("42"), out
