"""Fixed-step ODE integration. Implement rk4."""


def euler(f, t0, y0, t1, steps):
    h = (t1 - t0) / steps
    t, y = t0, list(y0)
    for _ in range(steps):
        dy = f(t, y)
        y = [yi + h * di for yi, di in zip(y, dy)]
        t += h
    return y


def rk4(f, t0, y0, t1, steps):
    raise NotImplementedError
