"""Every shipped Chrono MBS model (assets/chrono-yaml, verbatim copies of Chrono's files)
converts and simulates 2 s without error or NaN. Coarse output (10 fps), one
world, the stage's time step (mbd:timeStep) or 1 ms. Motor-driven models are also checked
against their motor functions (Chrono's sign convention: body1 relative to body2)."""
from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest

from sim_helpers import angle_about
from usdphys.types.timefunc import TimeFunction
from reference.timefunc import evaluate

DATA = Path(__file__).resolve().parents[2] / "assets" / "chrono-yaml" / "data"
MODELS = sorted(
    [*DATA.glob("yaml/mbs/model_*.yaml"), DATA / "yaml/mbs/mbs.yaml", *DATA.glob("yaml/fsi/*/model_mbs.yaml"),
     *DATA.glob("precice/*/*/mbs_model.yaml")]
)


def run(path: Path, duration=2.0, fps=10.0):
    from usdphys.converters.chrono import convert
    from usdphys.simulate import simulate

    stage = convert(path, [])
    return simulate(stage, duration=duration, fps=fps)


@pytest.mark.parametrize("path", MODELS, ids=[str(p.relative_to(DATA)) for p in MODELS])
def test_chrono_model_simulates_two_seconds(path, caplog):
    with caplog.at_level(logging.ERROR, logger="usdphys"):
        r = run(path)
    assert r.positions.shape[0] == 21
    assert np.all(np.isfinite(r.positions)) and np.all(np.isfinite(r.orientations))
    assert "not simulated yet" not in caplog.text
    # joints stay assembled (Newton tolerance 1e-12; bushings are compliant, not rows)
    assert r.max_constraint_error.max() <= 1e-9


def body(r, name):
    return [i for i, p in enumerate(r.body_paths) if p.rsplit("/", 1)[-1] == name][0]


def test_chrono_motors_follow_their_functions():
    """model_motors.yaml: B1 position x = 1.6 sin(pi t), B2 speed 5.0265 sin(pi t + 1.5708)
    (x = its integral), A1 speed 1.57 rad/s about +Y, A2 position 3.14 sin(0.1 pi t) rad."""
    r = run(DATA / "yaml/mbs/model_motors.yaml", fps=50)
    t = r.times
    s1, s2 = body(r, "slider1"), body(r, "slider2")
    np.testing.assert_allclose(r.positions[:, 0, s1, 0], 1.6 * np.sin(math.pi * t), atol=1e-9)
    A, ph = 5.0265, 1.5708
    x2 = A / math.pi * (math.cos(ph) - np.cos(math.pi * t + ph))  # Simpson per step: O(h^4)
    np.testing.assert_allclose(r.positions[:, 0, s2, 0], x2, atol=1e-9)
    a1 = angle_about(r.orientations[:, 0, body(r, "rotor1")], 1)
    np.testing.assert_allclose(a1, 1.57 * t, atol=1e-9)
    a2 = angle_about(r.orientations[:, 0, body(r, "rotor2")], 1)
    np.testing.assert_allclose(a2, 3.14 * np.sin(2 * math.pi * 0.05 * t), atol=1e-9)


def test_chrono_slider_crank_crank_angle_is_the_integral_of_its_speed_profile():
    """mbs.yaml (the slider-crank with its SPEED motor, data function with repeat). The motor
    has body1 = ground, body2 = crank, and Chrono actuates body1 relative to body2: the crank
    turns by MINUS the integral about +Y."""
    r = run(DATA / "yaml/mbs/mbs.yaml", fps=50)
    data = [(0.0, 0.0), (1.0, 3.14), (4.0, 3.14), (5.0, 0.0), (8.0, 0.0), (9.0, -3.14), (12.0, -3.14), (13.0, 0.0)]
    spec = TimeFunction(type="data", data=data, repeat=True, repeatStart=0.0, repeatWidth=16.0, repeatShift=16.0)
    fine = np.linspace(0.0, 2.0, 20001)
    u = evaluate(spec, fine)
    integral = np.concatenate([[0.0], np.cumsum(0.5 * (u[1:] + u[:-1]) * np.diff(fine))])
    crank = angle_about(r.orientations[:, 0, body(r, "crank")], 1)
    np.testing.assert_allclose(crank, -np.interp(r.times, fine, integral), atol=1e-9)
