"""Convert temperatures: python convert.py VALUE UNIT  (UNIT is C, F or K)."""
import sys


def c_to_f(c):
    return c * 5 / 9 + 32


def f_to_c(f):
    return (f - 32) * 5 / 9


def main(argv):
    value, unit = float(argv[1]), argv[2].upper()
    if unit == "C":
        print(f"{c_to_f(value):.2f} F")
    elif unit == "F":
        print(f"{f_to_c(value):.2f} C")
    elif unit == "K":
        print(f"{kelvin_to_c(value):.2f} C")
    else:
        print(f"unknown unit {unit}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
