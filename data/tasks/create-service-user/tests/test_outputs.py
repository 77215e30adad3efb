import grp
import os
import pwd
import stat


def test_group_ops():
    assert grp.getgrnam("ops").gr_gid == 2000


def test_user_deploy():
    u = pwd.getpwnam("deploy")
    assert u.pw_uid == 1500
    assert u.pw_shell == "/bin/bash"
    assert u.pw_dir == "/home/deploy"
    assert grp.getgrgid(u.pw_gid).gr_name == "deploy"
    assert "deploy" in grp.getgrnam("ops").gr_mem


def test_home_exists():
    st = os.stat("/home/deploy")
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 1500


def test_srv_app_ownership_and_mode():
    st = os.stat("/srv/app")
    assert st.st_uid == pwd.getpwnam("deploy").pw_uid
    assert st.st_gid == grp.getgrnam("ops").gr_gid
    assert stat.S_IMODE(st.st_mode) == 0o2775
    f = os.stat("/srv/app/README")
    assert f.st_uid == 1500 and f.st_gid == 2000
