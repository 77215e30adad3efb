import subprocess


def run(*args):
    return subprocess.run(["python3", "/app/convert.py", *args], capture_output=True, text=True, timeout=20)


def test_celsius_to_fahrenheit():
    assert run("100", "C").stdout.strip() == "212.00 F"
    assert run("-40", "c").stdout.strip() == "-40.00 F"
    assert run("37", "C").stdout.strip() == "98.60 F"


def test_fahrenheit_to_celsius():
    assert run("32", "F").stdout.strip() == "0.00 C"
    assert run("451", "f").stdout.strip() == "232.78 C"


def test_kelvin():
    r = run("0", "K")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "-273.15 C"
    assert run("300", "k").stdout.strip() == "26.85 C"


def test_unknown_unit():
    r = run("5", "X")
    assert r.returncode == 2 and r.stdout == "" and "unknown unit" in r.stderr
    assert run("100", "C").stdout.strip() == "212.00 F"
