import csv
import json
import statistics


def expected():
    groups = {}
    for row in csv.DictReader(open("/app/weather.csv")):
        g = groups.setdefault(row["city"], {"n": 0, "t": [], "h": []})
        g["n"] += 1
        if row["temp_c"].strip():
            g["t"].append(float(row["temp_c"]))
        if row["humidity"].strip() not in ("", "n/a"):
            g["h"].append(float(row["humidity"]))
    return {c: {"readings": g["n"], "mean_temp": round(statistics.mean(g["t"]), 2),
                "max_temp": max(g["t"]), "median_humidity": statistics.median(g["h"])} for c, g in groups.items()}


def test_cities_and_counts():
    got, want = json.load(open("/app/summary.json")), expected()
    assert {c: v["readings"] for c, v in got.items()} == {c: v["readings"] for c, v in want.items()}


def test_temperatures():
    got, want = json.load(open("/app/summary.json")), expected()
    for c, v in want.items():
        assert abs(got[c]["mean_temp"] - v["mean_temp"]) < 1e-9 and abs(got[c]["max_temp"] - v["max_temp"]) < 1e-9


def test_median_humidity():
    got, want = json.load(open("/app/summary.json")), expected()
    for c, v in want.items():
        assert abs(got[c]["median_humidity"] - v["median_humidity"]) < 1e-9
