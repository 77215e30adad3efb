import csv
import json
import math


def data():
    xs, ys = [], []
    with open("/app/measurements.csv") as f:
        for row in csv.DictReader(f):
            if not row or not row.get("time_s"):
                continue
            y = float(row["temperature_c"])
            if math.isnan(y):
                continue
            xs.append(float(row["time_s"]))
            ys.append(y)
    return xs, ys


def reference():
    xs, ys = data()
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_res = sum((y - (slope * x + intercept)) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return {"slope": slope, "intercept": intercept, "r_squared": 1 - ss_res / ss_tot, "n": n}


def test_n_rows():
    assert json.load(open("/app/fit.json"))["n"] == reference()["n"] == 60


def test_coefficients():
    got, ref = json.load(open("/app/fit.json")), reference()
    assert math.isclose(got["slope"], ref["slope"], rel_tol=1e-6)
    assert math.isclose(got["intercept"], ref["intercept"], rel_tol=1e-6)


def test_r_squared():
    got, ref = json.load(open("/app/fit.json")), reference()
    assert math.isclose(got["r_squared"], ref["r_squared"], rel_tol=1e-6)
