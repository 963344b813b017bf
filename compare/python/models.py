"""The benchmark models in Python, for CasADi and JAX.

Each function mirrors the native Rust spelling in `crates/ddx-models` operation for
operation (same order of sums, same constants), over an operations namespace `o`
(`CasadiOps` or `JaxOps`) and a list `x` of scalars. The parameters come from the harness
(`models.json`), so synthetic parameters are never re-derived here. The harness's gate
compares every arm's gradient before anything is timed, so a transcription slip here
stops the run instead of skewing a number.
"""

import math


def _sum_from(first, terms):
    acc = first
    for t in terms:
        acc = acc + t
    return acc


def regular(p, x, o):
    n = p["n"]
    w = p["w"]
    ideal = x[0] * o.log(x[0])
    for xi in x[1:n]:
        ideal = ideal + xi * o.log(xi)
    g = ideal * p["rt"]
    for i in range(n - 1):
        row = w[i * n:(i + 1) * n]
        s = x[i + 1] * row[i + 1]
        for j in range(i + 2, n):
            s = s + x[j] * row[j]
        g = g + x[i] * s
    return g


def uniquac(p, x, o):
    r, q, tau, half_z = p["r"], p["q"], p["tau"], p["half_z"]
    n = len(r)
    rsum = x[0] * r[0]
    qsum = x[0] * q[0]
    for i in range(1, n):
        rsum = rsum + x[i] * r[i]
        qsum = qsum + x[i] * q[i]
    phi = [x[i] * r[i] / rsum for i in range(n)]
    theta = [x[i] * q[i] / qsum for i in range(n)]
    g = None
    for i in range(n):
        qx = x[i] * q[i]
        s = theta[0] * tau[i]
        for j in range(1, n):
            s = s + theta[j] * tau[j * n + i]
        comb = x[i] * o.log(phi[i] / x[i]) + qx * o.log(theta[i] / phi[i]) * half_z
        term = comb - qx * o.log(s)
        g = term if i == 0 else g + term
    return g


def peng_robinson(p, inp, o):
    a, b = p["a"], p["b"]
    n = len(b)
    z = inp[n - 1]
    x = list(inp[:n - 1])
    total = _sum_from(x[0], x[1:])
    x.append(1.0 - total)
    ideal = x[0] * o.log(x[0])
    bm = x[0] * b[0]
    for i in range(1, n):
        ideal = ideal + x[i] * o.log(x[i])
        bm = bm + x[i] * b[i]
    am = None
    for i in range(n):
        row = a[i * n:(i + 1) * n]
        s = x[i] * row[i]
        off = None
        for j in range(i + 1, n):
            off = x[j] * row[j] if j == i + 1 else off + x[j] * row[j]
        if i + 1 < n:
            s = s + off * 2.0
        am = x[i] * s if i == 0 else am + x[i] * s
    c_plus = 1.0 + math.sqrt(2.0)
    c_minus = 1.0 - math.sqrt(2.0)
    two_sqrt_2 = 2.0 * math.sqrt(2.0)
    log_ratio = o.log((z + bm * c_plus) / (z + bm * c_minus))
    return ideal + z - 1.0 - o.log(z - bm) - am / (bm * two_sqrt_2) * log_ratio


def electrolyte(p, x, o):
    solv, charge, size, b, c = p["solvents"], p["charge"], p["size"], p["b"], p["c"]
    ns = len(solv)
    n = ns + len(charge)
    water = p["water"]
    s0 = solv[0]
    xsum = x[0]
    eps = x[0] * s0["permittivity"]
    rho = x[0] * s0["density"]
    mm = x[0] * s0["molar_mass"]
    for s, xk in list(zip(solv, x))[1:]:
        xsum = xsum + xk
        eps = eps + xk * s["permittivity"]
        rho = rho + xk * s["density"]
        mm = mm + xk * s["molar_mass"]
    eps = eps / xsum
    rho = rho / xsum
    mm = mm / xsum
    zx = x[ns] * (charge[0] * charge[0])
    for i in range(1, n - ns):
        zx = zx + x[ns + i] * (charge[i] * charge[i])
    ionic = zx * 0.5 / (xsum * mm / 1000.0)
    sqrt_i = o.sqrt(ionic)
    ratio = water["permittivity"] / eps
    dens = o.sqrt(rho / water["density"])
    a = o.pow(ratio, 1.5) * dens * p["dh_a"]
    bsi = o.sqrt(ratio) * dens * p["dh_b"] * sqrt_i
    lr = None
    for i in range(n - ns):
        zz = charge[i] * charge[i]
        t = x[ns + i] * zz / (bsi * size[i] + 1.0)
        lr = t if i == 0 else lr + t
    g_lr = -(a * sqrt_i * lr)
    e = o.exp(-o.sqrt(ionic + p["sr_a1"]))
    ideal = x[0] * o.log(x[0])
    for xk in x[1:]:
        ideal = ideal + xk * o.log(xk)
    g_sr = None
    for k in range(n - 1):
        brow = b[k * n:(k + 1) * n]
        crow = c[k * n:(k + 1) * n]
        sb = x[k + 1] * brow[k + 1]
        sc = x[k + 1] * crow[k + 1]
        for l in range(k + 2, n):
            sb = sb + x[l] * brow[l]
            sc = sc + x[l] * crow[l]
        t = x[k] * (sb + e * sc)
        g_sr = t if k == 0 else g_sr + t
    return ideal + g_lr + g_sr


def coverage(p, x, o):
    n = p["n"]
    f = None
    for i in range(n):
        a, b = x[i], x[(i + 1) % n]
        g = i % 4
        if g == 0:
            t = (o.sin(a) * o.cos(b) + o.tan(a) + o.exp(-b) + o.log(b)
                 + o.log10(a + b))
        elif g == 1:
            t = (o.sqrt(a) + o.cbrt(b) + o.abs(a - b) + o.sign(a - b) * a
                 + o.asin(a * 0.9) + o.acos(b * 0.9) + o.atan(a - b))
        elif g == 2:
            t = (o.sinh(a) + o.cosh(b) + o.tanh(a * b) + o.asinh(a)
                 + o.acosh(b + 1.0) + o.atanh(a * 0.9) + o.erf(a - b))
        else:
            t = (o.pow(a, b) + o.atan2(a, b) + o.hypot(a, b) + o.max(a, b)
                 + o.min(a, b) + o.select(o.lt(a, b), a * b, a / b)
                 + o.le(a, b) * a + o.gt(a, b) * b
                 + o.select(o.ge(a, b), a - b, b - a) * 0.5
                 + o.eq(a, b) + o.ne(a, b) * b)
        f = t if i == 0 else f + t
    return f


FAMILIES = {
    "regular": regular,
    "uniquac": uniquac,
    "peng-robinson": peng_robinson,
    "electrolyte": electrolyte,
    "coverage": coverage,
}


# --- Array spellings for JAX -------------------------------------------------------------
#
# The same equations written the way a JAX user writes them: matrix-vector products over
# `jnp` arrays. Tracing the scalar spellings above through `jax.grad` unrolls every sum
# into its own operation, which XLA then takes minutes to compile for the larger models;
# these compile in about a second. They sum in a different order than the Rust code, which
# the gate's tolerance allows for (and checks). The coverage function has no such form and
# is traced from its scalar spelling.


def _upper(flat, n, np):
    """The strict upper triangle of a row-major n x n list, as an array."""
    return np.triu(np.asarray(flat, dtype=np.float64).reshape(n, n), 1)


def prepare_arrays(p, np):
    """Precomputes (in NumPy, once) the constant arrays of an array spelling."""
    fam, n = p["family"], p["n"]
    if fam == "regular":
        return {"w": _upper(p["w"], n, np)}
    if fam == "uniquac":
        return {"r": np.asarray(p["r"]), "q": np.asarray(p["q"]),
                "tau": np.asarray(p["tau"]).reshape(n, n)}
    if fam == "peng-robinson":
        return {"a": np.asarray(p["a"]).reshape(n, n), "b": np.asarray(p["b"])}
    if fam == "electrolyte":
        solv = p["solvents"]
        z = np.asarray(p["charge"])
        return {"eps": np.asarray([s["permittivity"] for s in solv]),
                "rho": np.asarray([s["density"] for s in solv]),
                "mm": np.asarray([s["molar_mass"] for s in solv]),
                "zz": z * z, "size": np.asarray(p["size"]),
                "b": _upper(p["b"], n, np), "c": _upper(p["c"], n, np)}
    return None


def regular_array(p, c, x, jnp):
    return jnp.sum(x * jnp.log(x)) * p["rt"] + x @ (c["w"] @ x)


def uniquac_array(p, c, x, jnp):
    r, q = c["r"], c["q"]
    phi = x * r / (r @ x)
    theta = x * q / (q @ x)
    s = theta @ c["tau"]
    qx = x * q
    return jnp.sum(x * jnp.log(phi / x) + qx * jnp.log(theta / phi) * p["half_z"]
                   - qx * jnp.log(s))


def peng_robinson_array(p, c, inp, jnp):
    z = inp[-1]
    x = jnp.concatenate([inp[:-1], jnp.reshape(1.0 - jnp.sum(inp[:-1]), (1,))])
    bm = c["b"] @ x
    am = x @ (c["a"] @ x)
    c_plus = 1.0 + math.sqrt(2.0)
    c_minus = 1.0 - math.sqrt(2.0)
    log_ratio = jnp.log((z + bm * c_plus) / (z + bm * c_minus))
    return (jnp.sum(x * jnp.log(x)) + z - 1.0 - jnp.log(z - bm)
            - am / (bm * (2.0 * math.sqrt(2.0))) * log_ratio)


def electrolyte_array(p, c, x, jnp):
    ns = len(p["solvents"])
    water = p["water"]
    xs, xi = x[:ns], x[ns:]
    xsum = jnp.sum(xs)
    eps = (xs @ c["eps"]) / xsum
    rho = (xs @ c["rho"]) / xsum
    mm = (xs @ c["mm"]) / xsum
    ionic = (xi @ c["zz"]) * 0.5 / (xsum * mm / 1000.0)
    sqrt_i = jnp.sqrt(ionic)
    ratio = water["permittivity"] / eps
    dens = jnp.sqrt(rho / water["density"])
    a = jnp.power(ratio, 1.5) * dens * p["dh_a"]
    bsi = jnp.sqrt(ratio) * dens * p["dh_b"] * sqrt_i
    g_lr = -(a * sqrt_i * jnp.sum(xi * c["zz"] / (bsi * c["size"] + 1.0)))
    e = jnp.exp(-jnp.sqrt(ionic + p["sr_a1"]))
    g_sr = x @ (c["b"] @ x) + e * (x @ (c["c"] @ x))
    return jnp.sum(x * jnp.log(x)) + g_lr + g_sr


ARRAY_FAMILIES = {
    "regular": regular_array,
    "uniquac": uniquac_array,
    "peng-robinson": peng_robinson_array,
    "electrolyte": electrolyte_array,
}


class CasadiOps:
    """CasADi SX scalar operations with ddx's spellings."""

    def __init__(self):
        import casadi as ca
        self.ca = ca
        for name in ("sin", "cos", "tan", "exp", "log", "log10", "sqrt", "sign", "asin",
                     "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                     "erf", "atan2", "hypot", "lt", "le", "gt", "ge", "eq", "ne"):
            setattr(self, name, getattr(ca, name))
        self.abs = ca.fabs
        self.max = ca.fmax
        self.min = ca.fmin

    def cbrt(self, v):
        # CasADi has no cbrt; the coverage function only takes it of positive numbers.
        return v ** (1.0 / 3.0)

    def pow(self, a, b):
        return a ** b

    def select(self, c, t, f):
        return self.ca.if_else(c, t, f)


class JaxOps:
    """jax.numpy scalar operations with ddx's spellings (comparisons answer 1.0 or 0.0)."""

    def __init__(self):
        import jax.numpy as jnp
        import jax.scipy.special as jsp
        self.jnp = jnp
        for name in ("sin", "cos", "tan", "exp", "log", "log10", "sqrt", "cbrt", "sign",
                     "abs", "sinh", "cosh", "tanh", "hypot"):
            setattr(self, name, getattr(jnp, name))
        self.asin, self.acos, self.atan = jnp.arcsin, jnp.arccos, jnp.arctan
        self.asinh, self.acosh, self.atanh = jnp.arcsinh, jnp.arccosh, jnp.arctanh
        self.atan2 = jnp.arctan2
        self.erf = jsp.erf
        self.max, self.min = jnp.maximum, jnp.minimum
        self.pow = jnp.power

    def _truth(self, c):
        return c.astype(self.jnp.float64)

    def lt(self, a, b):
        return self._truth(a < b)

    def le(self, a, b):
        return self._truth(a <= b)

    def gt(self, a, b):
        return self._truth(a > b)

    def ge(self, a, b):
        return self._truth(a >= b)

    def eq(self, a, b):
        return self._truth(a == b)

    def ne(self, a, b):
        return self._truth(a != b)

    def select(self, c, t, f):
        return self.jnp.where(c != 0.0, t, f)
