"""usdphys sweep: variants against the analytic pendulum period, per-world batching (one
simulate call, bit-identical to single runs), resuming, failures as rows, spec errors."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import usdphys.simulate as simulate_module
import usdphys.sweep as sweep_module
from usdphys.cli import main
from usdphys.errors import UsdphysError
from usdphys.sweep import read_results, sweep

G = 9.81
I_C = 1.0e-3  # the bob's own moment of inertia about its centre of mass (kg m^2); mass 1 kg

# A physical pendulum whose prim sits on the pivot: the length is the centre of mass's offset
# (a geometry override: its own model per variant) and the amplitude the bob's start rotation.
PENDULUM = f'''#usda 1.0
(
    metersPerUnit = 1
    kilogramsPerUnit = 1
    upAxis = "Z"
    defaultPrim = "World"
)
def Xform "World" {{
    def PhysicsScene "Scene" {{
        vector3f physics:gravityDirection = (0, 0, -1)
        float physics:gravityMagnitude = {G}
    }}
    def Xform "bob" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] ) {{
        float xformOp:rotateY = 10
        uniform token[] xformOpOrder = ["xformOp:rotateY"]
        float physics:mass = 1
        point3f physics:centerOfMass = (0, 0, -1)
        float3 physics:diagonalInertia = ({I_C}, {I_C}, {I_C})
    }}
    def PhysicsRevoluteJoint "hinge" {{
        rel physics:body1 = </World/bob>
        point3f physics:localPos0 = (0, 0, 0)
        point3f physics:localPos1 = (0, 0, 0)
        uniform token physics:axis = "Y"
    }}
}}
'''
ANGLE = "/World/hinge.coordinate:angle"
GRAVITY = "/World/Scene.physics:gravityMagnitude"
MASS = "/World/bob.physics:mass"


@pytest.fixture
def pendulum(tmp_path):
    path = tmp_path / "pendulum.usda"
    path.write_text(PENDULUM)
    return path


@pytest.fixture
def calls(monkeypatch):
    """The worlds of every simulate call the sweep makes."""
    seen = []
    real = simulate_module.simulate

    def spy(*args, **kwargs):
        seen.append(kwargs.get("worlds", 1))
        return real(*args, **kwargs)

    monkeypatch.setattr(simulate_module, "simulate", spy)
    return seen


def _half_periods(t, angle):
    """Times between successive zero crossings (linear interpolation between frames)."""
    s = np.flatnonzero(np.sign(angle[:-1]) != np.sign(angle[1:]))
    tz = t[s] - angle[s] * (t[s + 1] - t[s]) / (angle[s + 1] - angle[s])
    return np.diff(tz)


def test_pendulum_length_and_amplitude_sweep_matches_the_exact_period(pendulum, tmp_path, calls):
    from scipy.special import ellipk

    fps, duration = 500.0, 2.0
    spec = {"run": {"duration": duration, "dt": 1e-3, "fps": fps},
            "grid": {"/World/bob.physics:centerOfMass[2]": {"linspace": [-0.5, -1.0, 2]},
                     "/World/bob.xformOp:rotateY": [10.0, 60.0]},
            "metrics": [{"kind": "joint", "prim": "/World/hinge", "coordinate": "angle", "stats": ["max", "series"]},
                        {"kind": "residual"}]}
    s = sweep(pendulum, spec, tmp_path / "out", workers=1)
    assert (s.variants, s.ran, s.failed) == (4, 4, 0)
    assert calls == [1, 1, 1, 1]  # a centre of mass is geometry: one model (one call) per variant
    rows = read_results(s.table)
    assert len(rows) == 4
    t = np.arange(int(duration * fps) + 1) / fps
    for row in rows:
        length = -float(row["/World/bob.physics:centerOfMass[2]"])
        theta0 = math.radians(float(row["/World/bob.xformOp:rotateY"]))
        assert row["status"] == "ok" and float(row["max constraint residual [m or rad]"]) < 1e-9
        # exact period of a physical pendulum: 4 sqrt(I_pivot / (m g L)) K(sin^2(theta0 / 2))
        i_pivot = I_C + length ** 2
        exact = 4.0 * math.sqrt(i_pivot / (G * length)) * ellipk(math.sin(theta0 / 2) ** 2)
        angle = np.asarray(json.loads(row[f"{ANGLE}.series [deg]"]))
        halves = _half_periods(t, angle)
        assert len(halves) >= 1
        # The integrator's period error is O((omega dt)^2) ~ 1e-6 relative at omega <= 4.4 rad/s,
        # dt = 1 ms (measured: 0.4e-6 to 1.9e-6), and interpolating a crossing between frames 2 ms
        # apart errs by ~1e-7 s (the angle is nearly linear there). 2e-5 relative leaves 10x room
        # and still tells the exact period from the first amplitude correction (1 + theta0^2 / 16),
        # which is off by 4e-3 at 60 degrees.
        np.testing.assert_allclose(2.0 * halves, exact, rtol=2e-5)
        assert float(row[f"{ANGLE}.max [deg]"]) == pytest.approx(math.degrees(theta0), rel=1e-9)


def test_per_world_parameters_run_as_worlds_of_one_call_and_equal_single_runs(pendulum, tmp_path, calls):
    spec = {"run": {"duration": 0.5, "dt": 1e-3, "fps": 100},
            "grid": {GRAVITY: [9.81, 1.62, 3.71], MASS: [1.0, 2.5]},
            "tasks": {"size": 6},
            "metrics": [{"kind": "pose", "prim": "/World/bob"},
                        {"kind": "joint", "prim": "/World/hinge", "coordinate": "angle", "stats": ["final", "series"]}]}
    s = sweep(pendulum, spec, tmp_path / "out", workers=1, layers=True)
    assert calls == [6]  # six variants, one simulate call with six worlds
    calls.clear()
    rows = read_results(s.table)
    assert [r["status"] for r in rows] == ["ok"] * 6
    assert len({r[f"{ANGLE}.final [deg]"] for r in rows}) == 6  # the worlds really differ
    for row in rows:
        overrides = {GRAVITY: float(row[GRAVITY]), MASS: float(row[MASS])}
        one = simulate_module.simulate(pendulum, duration=0.5, dt=1e-3, fps=100, overrides=overrides, record="joints")
        assert json.loads(row[f"{ANGLE}.series [deg]"]) == one.channel("/World/hinge", "coordinate:angle")[:, 0].tolist()
        pose = [float(row[f"/World/bob.{q}.{c}" + (" [m]" if q == "position" else "")])
                for q, comps in (("position", "xyz"), ("orientation", "xyzw")) for c in comps]
        assert pose == one.positions[-1, 0, 0].tolist() + one.orientations[-1, 0, 0].tolist()  # bit for bit

    # the variant's layer carries its overrides over the input, and its motion
    from pxr import Usd

    stage = Usd.Stage.Open(str(tmp_path / "out" / "layers" / "variant-000005.usda"))
    assert stage.GetAttributeAtPath(GRAVITY).Get() == pytest.approx(float(rows[5][GRAVITY]))
    assert stage.GetAttributeAtPath(MASS).Get() == pytest.approx(float(rows[5][MASS]))
    assert stage.GetAttributeAtPath("/World/bob.xformOp:orient").GetNumTimeSamples() == 51


def test_an_interrupted_sweep_resumes_without_recomputing(pendulum, tmp_path, calls, monkeypatch):
    spec = {"run": {"duration": 0.2, "dt": 1e-3, "fps": 50}, "grid": {MASS: [1.0, 2.0, 3.0, 4.0]},
            "tasks": {"size": 2}, "metrics": [{"kind": "residual"}, {"kind": "pose", "prim": "/World/bob"}]}
    real_task = sweep_module.run_task
    started = []

    def interrupted_after_one_task(task):
        started.append(task)
        if len(started) == 2:
            raise KeyboardInterrupt  # Ctrl-C while the second task runs
        return real_task(task)

    monkeypatch.setattr(sweep_module, "run_task", interrupted_after_one_task)
    with pytest.raises(KeyboardInterrupt):
        sweep(pendulum, spec, tmp_path / "out", workers=1)
    first = read_results(tmp_path / "out" / "results.csv")
    assert [r["variant"] for r in first] == ["0", "1"]  # the finished task's rows were written

    monkeypatch.setattr(sweep_module, "run_task", real_task)
    calls.clear()
    s = sweep(pendulum, spec, tmp_path / "out", workers=1)
    assert (s.skipped, s.ran, calls) == (2, 2, [2])  # only the unfinished task ran
    rows = read_results(s.table)
    assert rows[:2] == first and [r["variant"] for r in rows] == ["0", "1", "2", "3"]

    calls.clear()
    again = sweep(pendulum, spec, tmp_path / "out", workers=1)
    assert (again.ran, again.skipped, calls) == (0, 4, [])
    assert read_results(again.table) == rows

    # other run settings are another sweep: its rows would be mixed with these
    with pytest.raises(UsdphysError, match=r"results.csv: 4 row\(s\) belong to another sweep"):
        sweep(pendulum, dict(spec, run={"duration": 0.3, "dt": 1e-3, "fps": 50}), tmp_path / "out", workers=1)


def test_a_failing_variant_is_a_row_and_the_sweep_goes_on(pendulum, tmp_path):
    spec = {"run": {"duration": 0.1, "dt": 1e-3, "fps": 50}, "grid": {MASS: [1.0, -1.0, 2.0]},
            "tasks": {"size": 3}}
    s = sweep(pendulum, spec, tmp_path / "out", workers=1)
    rows = read_results(s.table)
    assert [r["status"] for r in rows] == ["ok", "error", "ok"] and s.failed == 1
    assert "body.mass" in rows[1]["error"] and "positive" in rows[1]["error"]
    assert rows[0]["error"] == rows[2]["error"] == ""


def _spec_file(tmp_path, text):
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, expected", [
    ("grid:\n  /World/bob.physics:mass: [1, 2]\nrun:\n  durration: 1\n", r"sweep.yaml:4: run.durration: unknown key"),
    ("grid:\n  /World/bob.physics:mass: {linspace: [1, 2]}\n", r"sweep.yaml:2: grid./World/bob.physics:mass.linspace: "
                                                               r"expected 3 items"),
    ("grid:\n  /World/bob.physics:mass: fast\n", r"sweep.yaml:2: grid./World/bob.physics:mass: expected a list"),
    ("grid:\n  World/bob.mass: [1]\n", r"sweep.yaml:2: grid.World/bob.mass: expected a prim path and an attribute"),
    ("run: {fps: 0}\ngrid:\n  /World/bob.physics:mass: [1]\n", r"sweep.yaml:1: run.fps: must be > 0"),
    ("samples: {method: sobol, count: 3, ranges: {/World/bob.physics:mass: [1, 2]}}\n",
     r"sweep.yaml:1: samples.method: "),
    ("samples: {method: uniform, count: 3, ranges: {/World/bob.physics:mass: [2, 1]}}\n",
     r"sweep.yaml:1: samples.ranges./World/bob.physics:mass: range \[2, 1\]"),
    ("grid:\n  /World/bob.physics:mass: [1]\nmetrics:\n  - {kind: pose}\n", r"sweep.yaml:4: metrics\[0\].prim: "),
    ("run: {duration: 1}\n", r"sweep.yaml:1: \(document\): nothing to vary: give a grid"),
    # checked against the stage: still the spec's line and key
    ("grid:\n  /World/bob.physics:density: [1]\n", r"sweep.yaml:2: /World/bob.physics:density: /World/bob has no "
                                                   r"authored attribute physics:density"),
    ("grid:\n  /World/bob.physics:centerOfMass: [1]\n", r"sweep.yaml:2: .*not a number; name one component"),
    ("grid:\n  /World/bob.physics:mass: [1]\nmetrics:\n  - {kind: pose, prim: /World/hinge}\n",
     r"sweep.yaml:4: metrics\[0\].prim: /World/hinge is not a simulated body"),
])
def test_spec_errors_are_one_line_naming_the_key(pendulum, tmp_path, capsys, text, expected):
    spec = _spec_file(tmp_path, text)
    with pytest.raises(UsdphysError, match=expected) as info:
        sweep(pendulum, spec, tmp_path / "out", workers=1)
    assert "\n" not in str(info.value)
    assert main(["sweep", str(pendulum), "--spec", str(spec), "-o", str(tmp_path / "out"), "--workers", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("usdphys sweep: error: ") and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing written for a bad spec


def test_samples_are_reproducible_and_inside_their_ranges():
    from usdphys.sweepspec import load_spec

    for method in ("uniform", "latin_hypercube"):
        spec = {"samples": {"method": method, "count": 8, "seed": 3,
                            "ranges": {MASS: [1.0, 2.0], GRAVITY: [1.0, 10.0]}}}
        a, b = load_spec(spec).variants, load_spec(spec).variants
        assert a == b and len(a) == 8
        m = np.array([v[MASS] for v in a])
        assert np.all((m >= 1.0) & (m <= 2.0))
        if method == "latin_hypercube":  # one sample in each of the 8 equal strata of every range
            assert sorted(np.floor((m - 1.0) * 8).astype(int)) == list(range(8))


@pytest.mark.slow
def test_ray_and_the_local_pool_write_the_same_table(pendulum, tmp_path):
    pytest.importorskip("ray")
    spec = {"run": {"duration": 0.5, "dt": 1e-3, "fps": 100},
            "grid": {MASS: [1.0, 2.0], "/World/bob.xformOp:rotateY": [10.0, 20.0]},
            "metrics": [{"kind": "joint", "prim": "/World/hinge", "coordinate": "angle", "stats": ["min", "series"]}]}
    inline = sweep(pendulum, spec, tmp_path / "inline", workers=1)
    pool = sweep(pendulum, spec, tmp_path / "pool", workers=2)
    ray = sweep(pendulum, spec, tmp_path / "ray", backend="ray", workers=2)
    text = inline.table.read_text()
    assert pool.table.read_text() == text and ray.table.read_text() == text


@pytest.mark.parametrize("extra, expected", [
    (["--workers", "0"], "workers must be a whole number >= 1, got 0"),
    (["--address", "ray://head:10001"], "an address is for the ray backend"),
])
def test_bad_arguments_are_one_line(pendulum, tmp_path, capsys, extra, expected):
    spec = _spec_file(tmp_path, "grid:\n  /World/bob.physics:mass: [1]\n")
    assert main(["sweep", str(pendulum), "--spec", str(spec), "-o", str(tmp_path / "out")] + extra) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"usdphys sweep: error: {expected}" or (err.startswith("usdphys sweep: error: " + expected)
                                                          and "\n" not in err)
    assert not (tmp_path / "out").exists()


def test_warnings_land_in_their_variants_row(pendulum, tmp_path, capsys):
    spec = {"run": {"duration": 0.05, "dt": 1e-3, "fps": 20}, "grid": {"/World/hinge.physics:localPos1[2]": [0.0, 0.01]}}
    s = sweep(pendulum, spec, tmp_path / "out", workers=1)
    rows = read_results(s.table)
    assert rows[0]["warnings"] == "" and s.warned == 1
    assert rows[1]["warnings"].startswith("/World/hinge: the joint's two frames do not coincide in the input")
    assert "do not coincide" not in capsys.readouterr().err  # in the table, not repeated on stderr


def test_the_ray_backend_without_ray_is_one_line(pendulum, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: import ray raises ImportError
    spec = {"grid": {MASS: [1.0]}, "run": {"duration": 0.05}}
    with pytest.raises(UsdphysError, match=r"^--backend ray needs Ray \(pip install 'usdphys\[ray\]'\)$"):
        sweep(pendulum, spec, tmp_path / "out", backend="ray")
    assert not (tmp_path / "out").exists()


def test_a_model_override_times_per_world_parameters_is_one_call_per_model(pendulum, tmp_path, calls):
    com = "/World/bob.physics:centerOfMass[2]"
    spec = {"run": {"duration": 0.3, "dt": 1e-3, "fps": 50}, "grid": {com: [-0.5, -1.0], MASS: [1.0, 2.0, 3.0]},
            "metrics": [{"kind": "joint", "prim": "/World/hinge", "coordinate": "angle", "stats": ["series"]}]}
    s = sweep(pendulum, spec, tmp_path / "out", workers=1, task_size=6)
    assert calls == [3, 3]  # two models (centre of mass), each with its three masses as worlds
    calls.clear()
    from usdphys.usd.overrides import override_in_session
    from usdphys.usd.stage import open_stage

    for row in read_results(s.table):
        stage = open_stage(pendulum)
        override_in_session(stage, {com: float(row[com])})
        one = simulate_module.simulate(stage, duration=0.3, dt=1e-3, fps=50, record="joints",
                                       overrides={MASS: float(row[MASS])})
        assert json.loads(row[f"{ANGLE}.series [deg]"]) == one.channel("/World/hinge", "coordinate:angle")[:, 0].tolist()


@pytest.mark.slow
def test_a_terminated_cli_sweep_resumes_where_it_stopped(pendulum, tmp_path):
    """A real interruption: SIGTERM to `usdphys sweep` once the first tasks are in the table."""
    import signal
    import subprocess
    import sys
    import time

    spec = _spec_file(tmp_path, "run: {duration: 1.0, dt: 0.0005, fps: 20}\ntasks: {size: 1}\n"
                                "grid:\n  /World/bob.xformOp:rotateY: {linspace: [5, 60, 12]}\n")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "usdphys.cli", "sweep", str(pendulum), "--spec", str(spec), "-o", str(out),
           "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not ((out / "results.csv").exists() and len(read_results(out / "results.csv")) >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.strip().endswith("usdphys sweep: terminated")
    done = read_results(out / "results.csv")
    assert 2 <= len(done) < 12
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{12 - len(done)} run" in again.stdout and f"{len(done)} already done" in again.stdout
    rows = read_results(out / "results.csv")
    assert [r["variant"] for r in rows] == [str(i) for i in range(12)]
    assert [r for r in rows if r["hash"] in {d["hash"] for d in done}] == done  # kept as they were


def test_a_variant_that_removes_a_row_runs_as_a_model_of_its_own(tmp_path, calls):
    """A drive's stiffness swept through 0 (damping 0: the drive row goes) cannot be a world of
    the stage's model, which has the row: that variant runs as its own model, with its override
    authored, and every variant ends where the stage authored with its value ends, bit for bit."""
    drive = ('    def PhysicsRevoluteJoint "hinge" (prepend apiSchemas = ["PhysicsDriveAPI:angular"]) {{\n'
             '        float drive:angular:physics:stiffness = {k}\n        float drive:angular:physics:damping = 0\n'
             '        float drive:angular:physics:targetPosition = 0\n')

    def text(k):
        return PENDULUM.replace('    def PhysicsRevoluteJoint "hinge" {\n', drive.format(k=k))

    path = tmp_path / "driven.usda"
    path.write_text(text(10.0))
    key = "/World/hinge.drive:angular:physics:stiffness"
    spec = {"run": {"duration": 0.3, "dt": 1e-3, "fps": 50}, "grid": {key: [0.0, 5.0, 10.0]}, "tasks": {"size": 3},
            "metrics": [{"kind": "pose", "prim": "/World/bob"}]}
    rows = read_results(sweep(path, spec, tmp_path / "out", workers=1).table)
    assert [(r["status"], r["error"]) for r in rows] == [("ok", "")] * 3
    # the batch refused (world 0 loses its drive): that variant as its own model, the others a batch again
    assert calls == [3, 1, 2]
    for row in rows:
        authored = tmp_path / f"k{row[key]}.usda"
        authored.write_text(text(float(row[key])))
        one = simulate_module.simulate(str(authored), duration=0.3, dt=1e-3, fps=50)
        pose = [float(row[f"/World/bob.{q}.{c}" + (" [m]" if q == "position" else "")])
                for q, comps in (("position", "xyz"), ("orientation", "xyzw")) for c in comps]
        assert pose == one.positions[-1, 0, 0].tolist() + one.orientations[-1, 0, 0].tolist()
    assert len({r["/World/bob.position.x [m]"] for r in rows}) == 3
