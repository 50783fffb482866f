"""Per-element user laws (mbd:userLaw): several Warp laws in one model, each element following
its own (scipy reference of the same law in NumPy), the CLI's --laws, and the errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from reference import user_laws as U
from sim_helpers import DEG, angle_about, body, stage, v3
from usdphys.cli import main
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate

M, K, D, A = 2.0, 200.0, 4.0, 0.05  # mass, stiffness, damping, initial stretch (SI)
IZ, KR, CR, W0 = 0.5, 3.0, 0.2, 90.0  # RSDA body inertia, stiffness, damping per rad, spin deg/s
DURATION, DT, FPS = 1.0, 1e-4, 100


def axial(name, b1, law, pos=(0, 0, 0)):
    return f'''def MbdAxialSpringDamper "{name}" {{
    rel mbd:body1 = </{b1}>
    point3d mbd:localPos0 = {v3(pos)}
    vector3d mbd:axis = (1, 0, 0)
    double mbd:stiffness = {K}
    double mbd:damping = {D}
    double mbd:offset = 0.5
    uniform token mbd:userLaw = "{law}"
}}
'''


def model_text(law_a="hardening", law_b="pulsing", law_c="saturating"):
    # three free bodies, no gravity: A and B pulled along x from y = 0 and y = 1, C spun about z
    txt = body("A", pos=(0.5 + A, 0, 0), mass=M) + axial("SA", "A", law_a)
    txt += body("B", pos=(0.5 + A, 1, 0), mass=M) + axial("SB", "B", law_b, pos=(0, 1, 0))
    txt += body("C", pos=(0, 3, 0), mass=1.0, inertia=(1, 1, IZ), angvel_deg=(0, 0, W0))
    txt += f'''def MbdRotationalSpringDamper "SC" {{
    rel mbd:body1 = </C>
    point3d mbd:localPos0 = (0, 3, 0)
    double mbd:stiffness = {KR / DEG}
    double mbd:damping = {CR / DEG}
    uniform token mbd:userLaw = "{law_c}"
}}
'''
    return txt


def reference(law, x0, v0, inertia, k, d, offset, times):
    sol = solve_ivp(lambda t, y: [y[1], -law(t, y[0], y[1], k, d, offset) / inertia], (0, times[-1]), [x0, v0],
                    t_eval=times, rtol=1e-12, atol=1e-14)
    return sol.y[0]


def test_each_element_follows_its_own_law():
    r = simulate(stage(model_text()), duration=DURATION, dt=DT, fps=FPS, laws=U.LAWS)
    xa = r.positions[:, 0, 0, 0]
    xb = r.positions[:, 0, 1, 0]
    theta = angle_about(r.orientations[:, 0, 2], 2)
    ra = reference(U.hardening_np, 0.5 + A, 0.0, M, K, D, 0.5, r.times)
    rb = reference(U.pulsing_np, 0.5 + A, 0.0, M, K, D, 0.5, r.times)
    rc = reference(U.saturating_np, 0.0, math.radians(W0), IZ, KR, CR, 0.0, r.times)
    # second order at h = 1e-4 (the law's slopes only shape the Newton matrix): 1e-5, as the
    # single-law test of test_forces_sim
    assert np.max(np.abs(xa - ra)) <= 1e-5
    assert np.max(np.abs(xb - rb)) <= 1e-5
    assert np.max(np.abs(theta - rc)) <= 1e-5
    # and the laws really differ here: swapping A's and B's would be caught
    assert np.max(np.abs(ra - rb)) > 1e-3


def test_unknown_law_names_the_prim():
    with pytest.raises(UsdphysError, match=r"/SB: mbd:userLaw = 'nope' is not a law given.*cubic, hardening, pulsing, saturating"):
        simulate(stage(model_text(law_b="nope")), duration=0.01, laws=U.LAWS)
    with pytest.raises(UsdphysError, match=r"/SA: mbd:userLaw = 'hardening' is not a law given to the simulation \(given: none"):
        simulate(stage(model_text()), duration=0.01)
    with pytest.raises(UsdphysError, match=r"law 'x' must be a Warp function"):
        simulate(stage(model_text()), duration=0.01, laws={"x": lambda *a: 0.0})


def test_cli_laws_module(tmp_path, capsys):
    src = tmp_path / "laws.usda"
    st = stage(model_text())  # held: the root layer lives as long as its stage
    st.GetRootLayer().Export(str(src))
    out = tmp_path / "laws_sim.usda"
    args = ["simulate", str(src), "-o", str(out), "--duration", "0.1", "--dt", str(DT), "--fps", str(FPS)]
    assert main(args + ["--laws", "reference.user_laws"]) == 0
    api = simulate(str(src), duration=0.1, dt=DT, fps=FPS, laws=U.LAWS)
    from pxr import Usd

    res = Usd.Stage.Open(str(out))
    xa = res.GetPrimAtPath("/A").GetAttribute("xformOp:translate").Get(10)[0]
    assert xa == pytest.approx(api.positions[10, 0, 0, 0], abs=1e-12)
    capsys.readouterr()
    assert main(args + ["--laws", "no.such.module"]) == 1
    err = capsys.readouterr().err.strip()
    assert "--laws no.such.module: cannot import it" in err and "\n" not in err


def test_a_law_that_does_not_compile_is_one_line():
    with pytest.raises(UsdphysError, match=r"a user force law does not compile: .*broken.*") as info:
        simulate(stage(model_text(law_b="broken")), duration=0.01, laws={**U.LAWS, "broken": U.broken})
    assert "\n" not in str(info.value)


def test_solvers_with_other_laws_stepped_in_turn_keep_their_own():
    """The user laws are compiled into the step module, one variant per set of laws, and the
    driver replays a recorded frame launch on the CPU: a solver whose calls alternate with those
    of a solver without the laws must still run its own variant, as in one call."""
    from usdphys.solver import Solver
    from usdphys.usd.reader import read_stage

    with_laws = read_stage(stage(model_text()))[0]
    without = read_stage(stage(body("A", pos=(0.5, 0, 0), mass=M)))[0]
    whole = Solver(with_laws, "cpu", laws=U.LAWS).run(30, 10, DT).pos
    own, other = Solver(with_laws, "cpu", laws=U.LAWS), Solver(without, "cpu")
    parts = []
    for _ in range(3):
        parts.append(own.run(10, 10, DT).pos)
        other.run(2, 10, DT)
    np.testing.assert_array_equal(np.concatenate([parts[0]] + [p[1:] for p in parts[1:]]), whole)
    assert np.abs(whole[-1] - whole[0]).max() > 1e-3  # the laws move the bodies
