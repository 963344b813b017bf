"""The Python-hosted peers of the compare harness: CasADi export and the JAX arms.

Run by the harness (`compare/src/python.rs`), never by hand:

    peer.py info                          JSON: versions and where libcasadi.so lives
    peer.py casadi-export MODELS OUTDIR   builds each model's SX gradient Function; writes
                                          OUTDIR/<cid>.casadi (serialized) and <cid>.c
                                          (generated C); prints JSON describing them
    peer.py jax-serve MODELS              a JSON-lines server on stdin/stdout for the JAX arms

MODELS is the `models.json` the harness writes: each model's id, family, input count and
parameters. The JAX server answers:

    {"cmd": "gradients", "model": id, "points": [[...], ...]}
        -> {"jit": [...], "scan": [...], "vmap": [...]}: every variant's gradients, for the gate
    {"cmd": "load", "model": id, "points": [[...], ...], "batch": B}
        -> {"ok": true}: keeps the points (device arrays) for timing, compiles, warms up
    {"cmd": "time", "model": id, "variant": "jit"|"scan"|"vmap", "target_ms": T,
     "clock": "cpu"|"wall"}
        -> {"ns": per-point nanoseconds, "calls": count}

"cpu" reads `time.process_time_ns` (CPU time of the whole process, XLA's threads included,
so time the scheduler gives other processes is not counted); "wall" `time.perf_counter_ns`.

The JAX arms run the array spelling of a model where `models.py` has one (matrix-vector
products, as a JAX user writes it), else the scalar spelling traced as is.

How each JAX figure is taken (all `jax.jit`, CPU, float64, one thread):
- "jit":  `jit(grad(f))` called once per point from a Python loop, each result waited
          for with `block_until_ready`. Python's dispatch is in the figure (labelled so).
- "scan": `jit(lambda P: lax.map(grad(f), P))` over a batch: the same one-point-at-a-time
          gradient, looped inside XLA, so no Python call per point; per point = time / B.
- "vmap": `jit(vmap(grad(f)))` over a batch of B points; per point = time / B.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from models import ARRAY_FAMILIES, FAMILIES, CasadiOps, JaxOps, prepare_arrays  # noqa: E402


def info():
    out = {"python": sys.version.split()[0], "casadi": None, "casadi_dir": None,
           "jax": None, "jaxlib": None}
    try:
        import casadi
        out["casadi"] = casadi.__version__
        out["casadi_dir"] = os.path.dirname(casadi.__file__)
    except Exception as e:  # reported, not raised: the arm is then skipped
        out["casadi_error"] = repr(e)
    try:
        import jax
        import jaxlib
        out["jax"] = jax.__version__
        out["jaxlib"] = jaxlib.__version__
    except Exception as e:
        out["jax_error"] = repr(e)
    print(json.dumps(out))


def casadi_export(models_path, out_dir):
    import casadi as ca
    os.makedirs(out_dir, exist_ok=True)
    ops = CasadiOps()
    out = []
    for m in json.load(open(models_path)):
        n = m["n"]
        x = ca.SX.sym("x", n)
        f = FAMILIES[m["family"]](m, [x[i] for i in range(n)], ops)
        g = ca.gradient(f, x)
        cid = m["cid"]
        fun = ca.Function(cid, [x], [g], ["x"], ["g"])
        path = os.path.join(out_dir, cid + ".casadi")
        fun.save(path)
        gen = ca.CodeGenerator(cid + ".c", {"with_header": False})
        gen.add(fun)
        gen.generate(out_dir + os.sep)
        out.append({"id": m["id"], "cid": cid, "casadi": path,
                    "c": os.path.join(out_dir, cid + ".c"),
                    "instructions": fun.n_instructions()})
    print(json.dumps(out))


def jax_serve(models_path):
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    import numpy as np

    models = {m["id"]: m for m in json.load(open(models_path))}
    ops = JaxOps()
    compiled = {}
    pools = {}

    def variants(mid):
        if mid not in compiled:
            m = models[mid]
            n = m["n"]
            if m["family"] in ARRAY_FAMILIES:
                fam = ARRAY_FAMILIES[m["family"]]
                consts = prepare_arrays(m, np)

                def f(xv):
                    return fam(m, consts, xv, jnp)
            else:
                fam = FAMILIES[m["family"]]

                def f(xv):
                    return fam(m, [xv[i] for i in range(n)], ops)

            g = jax.grad(f)
            compiled[mid] = {
                "jit": jax.jit(g),
                "scan": jax.jit(lambda P: jax.lax.map(g, P)),
                "vmap": jax.jit(jax.vmap(g)),
            }
        return compiled[mid]

    def gradients(req):
        fs = variants(req["model"])
        P = jnp.asarray(np.array(req["points"], dtype=np.float64))
        return {
            "jit": [np.asarray(fs["jit"](p)).tolist() for p in P],
            "scan": np.asarray(fs["scan"](P)).tolist(),
            "vmap": np.asarray(fs["vmap"](P)).tolist(),
        }

    def load(req):
        fs = variants(req["model"])
        pts = np.array(req["points"], dtype=np.float64)
        batch = int(req["batch"])
        reps = -(-batch // len(pts))
        B = jnp.asarray(np.tile(pts, (reps, 1))[:batch])
        singles = [jnp.asarray(p) for p in pts]
        for p in singles[:4]:
            fs["jit"](p).block_until_ready()
        fs["scan"](B).block_until_ready()
        fs["vmap"](B).block_until_ready()
        pools[req["model"]] = (singles, B)
        return {"ok": True}

    def timed(req):
        fs = variants(req["model"])
        singles, B = pools[req["model"]]
        variant = req["variant"]
        target = req["target_ms"] * 1e6
        f = fs[variant]
        calls = 0
        clock = time.process_time_ns if req.get("clock") == "cpu" else time.perf_counter_ns
        if variant == "jit":
            k = len(singles)
            t0 = clock()
            while True:
                for _ in range(16):
                    f(singles[calls % k]).block_until_ready()
                    calls += 1
                elapsed = clock() - t0
                if elapsed >= target:
                    break
            return {"ns": elapsed / calls, "calls": calls}
        t0 = clock()
        while True:
            f(B).block_until_ready()
            calls += 1
            elapsed = clock() - t0
            if elapsed >= target:
                break
        return {"ns": elapsed / (calls * B.shape[0]), "calls": calls * B.shape[0]}

    handlers = {"gradients": gradients, "load": load, "time": timed}
    print(json.dumps({"ready": True, "jax": jax.__version__}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("cmd") == "quit":
            break
        try:
            resp = handlers[req["cmd"]](req)
        except Exception as e:  # the harness prints it and skips the arm
            resp = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(resp), flush=True)


def main(argv):
    if len(argv) >= 2 and argv[1] == "info":
        info()
    elif len(argv) == 4 and argv[1] == "casadi-export":
        casadi_export(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "jax-serve":
        jax_serve(argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
