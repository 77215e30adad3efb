"""The offline base images: present, labelled as substitutes, and behaving like the images
they stand for - judged by what Dockerfiles written for those do (pin, upgrade, uninstall
with pip; install with apt) - whatever tag a Dockerfile names."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

import pytest

from tbrl_lib.docker import base_images

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
    out = _run(docker_client, name, "for t in python3 git curl tmux bash; do command -v $t; done")
    assert len(out.split()) == 5, out


@pytest.mark.parametrize("image", [base_images.BASE_IMAGE, base_images.UBUNTU_IMAGE])
def test_no_family_carries_a_python_test_runner(docker_client, base_image, image):
    """Neither original has pytest: a Dockerfile's `pip install pytest==X` has nothing to
    replace (Debian's python3-pytest, which pip cannot uninstall, broke every such build)."""
    out = _run(
        docker_client,
        image,
        "python3 -c 'import pytest' 2>&1 | tail -1; command -v pytest || echo no-pytest; "
        "dpkg-query -W -f='${Package}\\n' 'python3-*' | grep -v -- '-whl$' | sort | tr '\\n' ' '",
    )
    assert "No module named 'pytest'" in out and "no-pytest" in out, out
    debian_python = set(out.strip().splitlines()[-1].split())
    assert not {"python3-pytest", "python3-pluggy", "python3-iniconfig"} & debian_python, out


def test_python_family_packages_are_pips_to_manage(docker_client, base_image):
    """As in the python images: pip itself is a pip-installed package (so `pip install -U pip`
    works), and no Python package is Debian's; a package installs, upgrades and uninstalls."""
    v1, v2 = (base64.b64encode(_tiny_wheel(v)).decode() for v in ("1.0", "2.0"))
    quiet = "-q --root-user-action=ignore"
    out = _run(
        docker_client,
        "ghcr.io/laude-institute/t-bench/python-3-13:latest",
        "python --version && pip --version && echo debian-python-packages="
        "$(dpkg -l python3-pip python3-wheel python3-packaging 2>/dev/null | grep -c ^ii) ; "
        f"echo {v1} | base64 -d > /tmp/tbrl_probe-1.0-py3-none-any.whl && "
        f"echo {v2} | base64 -d > /tmp/tbrl_probe-2.0-py3-none-any.whl && "
        f"pip install {quiet} --no-index /tmp/tbrl_probe-1.0-py3-none-any.whl && "
        f"pip install {quiet} --no-index /tmp/tbrl_probe-2.0-py3-none-any.whl && "
        f"pip show tbrl-probe | grep ^Version && pip uninstall {quiet} -y tbrl-probe && "
        f"pip uninstall {quiet} -y pip && echo pip-uninstalled",
    )
    assert "Python 3.13" in out and "/usr/local/lib/python3.13/dist-packages/pip" in out, out
    assert (
        "debian-python-packages=0" in out and "Version: 2.0" in out and "pip-uninstalled" in out
    ), out


def test_ubuntu_family_is_shaped_like_the_published_image(docker_client, base_image):
    """No `python` alias (Dockerfiles add it), python3-pip installs with no network (it is
    there and so are the package lists), the PEP 668 guard is kept as on Ubuntu, and the
    tools the original lacks (jq, the sqlite3 CLI) are absent."""
    out = _run(
        docker_client,
        "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest",
        "command -v python || echo no-python-alias; ln -s /usr/bin/python3 /usr/bin/python "
        "&& python --version; apt-get update >/dev/null 2>&1; "
        "apt-get install -y python3-pip >/dev/null && echo pip-installed; "
        "pip install --no-index nothing 2>&1 | grep -c externally-managed; "
        "for t in curl git tmux; do command -v $t; done; "
        "command -v jq sqlite3 || echo no-jq-sqlite3",
    )
    assert "no-python-alias" in out and "Python 3.13" in out and "pip-installed" in out, out
    assert "\n1\n" in out and "/usr/bin/tmux" in out and "no-jq-sqlite3" in out, out


def test_any_tag_of_a_family_resolves_to_its_image(docker_client, base_image):
    """A FROM of any tag builds on the family's image; nothing is tagged on the way, so a
    shared engine's public names do not matter; a real image under a family name wins."""
    name = "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20990101"  # a tag nobody made
    assert base_images.resolve(docker_client, name) == base_images.UBUNTU_IMAGE
    assert name not in base_images.substitutes(docker_client)
    assert base_images.resolve(docker_client, base_image) == base_image  # no family
    real = "ghcr.io/laude-institute/t-bench/python-3-13:20990102"
    docker_client.images.get(base_image).tag(real)  # unlabelled: as if pulled
    try:
        assert base_images.resolve(docker_client, real) == real
    finally:
        docker_client.images.remove(real)


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
        assert name in base_images.bootstrap(docker_client, log=lambda _msg: None)
        labels = docker_client.images.get(name).labels
        assert labels[base_images.LABEL_SOURCE_ID] == docker_client.images.get(base_image).id
        assert base_images.resolve(docker_client, name) == base_image  # a substitute: resolved
    finally:
        docker_client.images.remove(name, force=True)


def test_digests_of_a_family_are_refused_as_the_tasks_to_fix(docker_client, base_image):
    with pytest.raises(base_images.SubstituteError, match="use a tag instead") as info:
        base_images.resolve(
            docker_client, "ghcr.io/laude-institute/t-bench/python-3-13@sha256:" + "0" * 64
        )
    assert info.value.task_fault


def _tiny_wheel(version: str = "1.0") -> bytes:
    """A minimal valid wheel, built here so the test needs no network."""
    info = f"tbrl_probe-{version}.dist-info"
    files = {
        "tbrl_probe.py": b"ANSWER = 42\n",
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: tbrl-probe\nVersion: {version}\n".encode()
        ),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tbrl\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
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
