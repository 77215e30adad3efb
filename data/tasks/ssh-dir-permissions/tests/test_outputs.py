import hashlib
import os
import stat

SSH = "/root/.ssh"


def mode(name):
    return stat.S_IMODE(os.stat(os.path.join(SSH, name) if name else SSH).st_mode)


def test_directory_mode():
    assert mode("") == 0o700


def test_private_files():
    for name in ["id_ed25519", "deploy_key", "authorized_keys", "config"]:
        assert mode(name) == 0o600, name


def test_public_key():
    assert mode("id_ed25519.pub") == 0o644
    assert mode("id_ed25519") == 0o600


def test_contents_intact():
    assert sorted(os.listdir(SSH)) == ["authorized_keys", "config", "deploy_key", "id_ed25519", "id_ed25519.pub"]
    a = open(os.path.join(SSH, "id_ed25519"), "rb").read()
    assert a == open(os.path.join(SSH, "deploy_key"), "rb").read()
    assert hashlib.sha256(a).hexdigest() and a.startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    assert mode("") == 0o700
