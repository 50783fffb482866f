"""What a new set of user laws (mbd:userLaw) costs: the solver kernel is rebuilt once per set.

    python benchmarks/user_law_compile.py

Writes a law with a fresh constant to a temporary module (so Warp's kernel cache cannot have
it), then times: a run with no user law (kernel cached), the first run with the new law
(code generation + C++ compile), the same run again in-process (module variant kept), and the
first law set again (switching back: no rebuild)."""
from __future__ import annotations

import importlib.util
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sim_helpers import body, stage  # noqa: E402
from usdphys.simulate import simulate  # noqa: E402

LAW = '''import warp as wp

@wp.func
def fresh(t: wp.float64, dx: wp.float64, dv: wp.float64, k: wp.float64, d: wp.float64,
          offset: wp.float64) -> wp.float64:
    return k * (dx - offset) + d * dv + wp.float64({c!r}) * (dx - offset) * (dx - offset) * (dx - offset)
'''

TEXT = body("A", pos=(0.55, 0, 0), mass=2.0) + '''def MbdAxialSpringDamper "S" {
    rel mbd:body1 = </A>
    double mbd:stiffness = 200
    double mbd:offset = 0.5
    uniform token mbd:userLaw = "fresh"
}
'''
PLAIN = TEXT.replace('uniform token mbd:userLaw = "fresh"', "")


def timed(label, **kw):
    t0 = time.perf_counter()
    simulate(stage(kw.pop("text", TEXT)), duration=0.01, dt=1e-3, fps=100, **kw)
    print(f"{label:45s} {time.perf_counter() - t0:8.2f} s")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fresh_law.py"
        path.write_text(LAW.format(c=random.uniform(1.0, 2.0)))
        spec = importlib.util.spec_from_file_location("fresh_law", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        timed("no user law (kernel cached)", text=PLAIN)
        timed("new law set, first run (generate + compile)", laws={"fresh": mod.fresh})
        timed("same law set again (in-process variant)", laws={"fresh": mod.fresh})
        timed("back to no user law (cached variant)", text=PLAIN)


if __name__ == "__main__":
    main()
