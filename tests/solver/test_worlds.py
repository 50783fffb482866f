"""Many worlds of one model: per-world parameters (usdphys.types.params), world ranges on CPU
threads, the world-minor layout. CPU.

A world of a multi-world run must be the single-world run of a model built with that world's
values: same kernels, same arithmetic, so the comparison is bit for bit (array_equal), except
where the single-world model is derived along another path (noted where it is)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import warp as wp
from scipy.special import ellipk

from sim_helpers import body, joint, stage
from test_solver import REVOLUTE_Y, pendulum_model, swing_angle
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate
from usdphys.solver import Solver, io
from usdphys.types.model import Model

G = 9.81


def run(model, frames=40, substeps=5, dt=1e-3, **kw):
    solver = Solver(model, **kw)
    out = solver.run(frames, substeps, dt)
    return out.pos, out.rot


def driven_pendulum(mass=1.0, gravity=G, k=0.0, c=0.0, upper=None):
    """Pendulum released at 40 deg with a drive (k, c) towards 10 deg and an upper rotY limit."""
    drive = dict(drive_stiffness=[0, 0, 0, 0, k, 0], drive_damping=[0, 0, 0, 0, c, 0],
                 drive_target_pos=[0, 0, 0, 0, math.radians(10), 0])
    up = None if upper is None else [np.inf] * 4 + [upper, np.inf]
    return pendulum_model(40.0, mass=mass, gravity=gravity, upper=up, **drive)


def test_worlds_with_their_own_mass_gravity_drive_and_limit_equal_single_world_runs():
    masses = [1.0, 2.5, 0.5, 4.0]
    gravities = [9.81, 3.7, 24.8, 9.81]
    ks = [2.0, 20.0, 0.5, 8.0]
    uppers = [math.radians(a) for a in (60.0, 45.0, 41.0, 80.0)]  # the 41 deg world hits its stop
    model = driven_pendulum(k=1.0, c=0.1, upper=math.radians(50.0)).replicate(4)
    model.set_parameter("body.mass", masses, index="/bob")
    model.set_parameter("gravity", np.array([[0.0, 0.0, -g] for g in gravities]))
    model.set_parameter("joint.drive_stiffness", ks, index=("/pivot", "rotY"))
    model.set_parameter("joint.upper", uppers, index=("/pivot", 4))
    pos, rot = run(model, threads=2)
    for w in range(4):
        one = driven_pendulum(mass=masses[w], gravity=gravities[w], k=ks[w], c=0.1, upper=uppers[w])
        p1, r1 = run(one)
        np.testing.assert_array_equal(pos[:, w], p1[:, 0])
        np.testing.assert_array_equal(rot[:, w], r1[:, 0])
    # the worlds really differ (the test could fail), and the 41 deg stop held its world
    assert np.ptp(pos[-1, :, 0, 0]) > 1e-2
    angle = swing_angle(pos[:, 2, 0])
    assert np.max(angle) <= math.radians(41.0) + 1e-9


def test_pendulum_periods_follow_each_worlds_gravity_and_mass():
    """Compound pendulum (point mass m at L = 1 m, own inertia ic): T = 4 sqrt(Ip / (m g L)) K(k),
    Ip = ic + m L^2. Per world g and m: each world's period must match its own theory."""
    gs = np.array([9.81, 1.62, 3.71, 24.79])
    ms = np.array([1.0, 0.1, 3.0, 1.0])
    ic, theta0 = 0.05, 20.0
    model = pendulum_model(theta0, ic=ic).replicate(4)
    model.set_parameter("gravity", np.stack([np.zeros(4), np.zeros(4), -gs], axis=1))
    model.set_parameter("body.mass", ms[:, None])
    res = simulate(model, worlds=4, duration=8.0, dt=1e-3, fps=1000)
    k2 = math.sin(math.radians(theta0) / 2) ** 2
    for w in range(4):
        angle = swing_angle(res.positions[:, w, 0])
        idx = np.flatnonzero((angle[:-1] > 0) & (angle[1:] <= 0))
        t = (idx + angle[idx] / (angle[idx] - angle[idx + 1])) / 1000.0
        period = (t[-1] - t[0]) / (len(t) - 1)
        expected = 4.0 * math.sqrt((ic + ms[w]) / (ms[w] * gs[w])) * ellipk(k2)
        # Stormer-Verlet phase error (w h)^2 / 24 ~ 1e-6 relative at h = 1 ms, w <= 5 rad/s; the
        # crossing interpolation adds ~1e-7 s: 1e-5 relative is 10x above both
        assert abs(period / expected - 1) <= 1e-5, (w, period, expected)


def test_threads_and_layouts_give_bit_identical_worlds(fourbar_model):
    model = fourbar_model.replicate(7)
    rng = np.random.default_rng(3)
    model.body_ang_vel = model.body_ang_vel + rng.normal(0, 0.5, model.body_ang_vel.shape) * [1, 1, 0]
    model.set_parameter("body.mass", rng.uniform(0.5, 2.0, (7, model.body_count)))
    ref = run(model, threads=1, layout="world_major", device="cpu")  # threads: a CPU matter
    for threads, layout in ((2, "world_major"), (3, "world_minor"), (1, "world_minor")):
        got = run(model, threads=threads, layout=layout, device="cpu")
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])
    assert np.ptp(ref[0][-1, :, 0, 0]) > 1e-3  # the worlds differ
    # world_minor really lays the worlds side by side: [w, b] and [w + 1, b] one element apart
    minor = Solver(model, "cpu", threads=1, layout="world_minor")
    assert minor.st.pos.strides == (24, 24 * 7) and minor.m.inv_mass.strides == (8, 8 * 7)
    assert minor.sc.lam.strides == (8, 8 * 7) and minor.sc.A.strides == (8, 8 * 7)  # the step's scratch
    assert minor.cs.c.depth.strides == (8, 8 * 7)  # the narrow phase's contact records
    out = io.make_output(minor.dm, 7, 3, "cpu")  # frames: [f, w, b] and [f, w + 1, b] side by side
    B = minor.dm.body_count
    assert out.pos.strides == (24 * 7 * B, 24, 24 * 7) and out.pos.shape == (4, 7, B)
    assert Solver(model, "cpu", threads=1).st.pos.strides[1] == 24  # CPU default: world-major


def test_a_run_in_several_calls_is_the_run_in_one_call(fourbar_model):
    """Solver.run projects the input pose onto the joints on its first call only; a later call
    goes on from where the last one ended, with its Newton warm start and factor. So a run in
    three calls is, bit for bit, the run in one call (poses, Newton counters, recorded residuals),
    each call's frame 0 is the frame the last call ended on, and two CPU threads change nothing."""
    model = fourbar_model.replicate(3)
    rng = np.random.default_rng(5)
    model.body_ang_vel = model.body_ang_vel + rng.normal(0, 0.5, model.body_ang_vel.shape) * [1, 1, 0]
    whole = Solver(model, "cpu", threads=1)
    one = whole.run(60, 10, 1e-3, record="all")
    parts = Solver(model, "cpu", threads=2)
    # the later calls reuse the first one's output buffers and recording plan (_output_buffers)
    calls = [parts.run(20, 10, 1e-3, record="all") for _ in range(3)]
    joined = np.concatenate([calls[0].pos] + [c.pos[1:] for c in calls[1:]])
    np.testing.assert_array_equal(joined, one.pos)
    np.testing.assert_array_equal(np.concatenate([calls[0].rot] + [c.rot[1:] for c in calls[1:]]), one.rot)
    assert {"vel", "value", "force", "joint_force", "kinetic"} <= set(one.outputs)
    for key, value in one.outputs.items():  # velocities, joint values and reactions, energies
        joined = np.concatenate([calls[0].outputs[key]] + [c.outputs[key][1:] for c in calls[1:]])
        np.testing.assert_array_equal(joined, value, err_msg=key)
    for name in ("updates", "factorisations"):
        np.testing.assert_array_equal(parts.newton_stats()[name], whole.newton_stats()[name])
    for a, b in zip(calls, calls[1:]):
        np.testing.assert_array_equal(b.pos[0], a.pos[-1])
        for key in one.outputs:
            np.testing.assert_array_equal(b.outputs[key][0], a.outputs[key][-1], err_msg=key)
    empty = parts.run(0, 10, 1e-3, record="world")  # no frame: frame 0 alone, still where the run is
    np.testing.assert_array_equal(empty.pos[0], calls[-1].pos[-1])
    np.testing.assert_array_equal(empty.outputs["residual"][0], calls[-1].outputs["residual"][-1])
    residual = one.outputs["residual"]
    # the steps' own residuals, not a blank column: a step is committed within 1e3 x the Newton
    # tolerance (step.ACCEPT_FACTOR; dropped dependent rows count in the recorded error)
    assert 0 < residual[1:].max() <= 1e-9


def test_a_replayed_frame_launch_reads_what_a_new_launch_would(fourbar_model):
    """On the CPU the driver records its frame launch once and replays it with each call's
    numbers (packing ~250 array descriptors at every wp.launch was most of a short call's host
    time). The replay must read the structs as they are at the call: an array replaced in a
    struct after the first call (here gravity), another step size, one or two threads. Checked
    bit for bit against the same calls through wp.launch; the new gravity must change the run."""
    from usdphys.solver import step as K

    model = fourbar_model.replicate(3)

    def calls(solver, swap=True):
        res = [solver.run(5, 4, 1e-3)]
        if swap:
            g = np.tile([[0.0, -3.0, -9.0]], (3, 1)) * [[1.0], [1.5], [0.5]]
            solver.m.gravity = wp.array(g, dtype=wp.vec3d, device=solver.device)
        res += [solver.run(5, 4, 1e-3), solver.run(3, 2, 5e-4), solver.run(1, 1, 1e-3)]
        return np.concatenate([r.pos for r in res]), np.concatenate([r.max_constraint_error for r in res])

    for threads in (1, 2):
        replayed = Solver(model, "cpu", threads=threads)
        launched = Solver(model, "cpu", threads=threads)
        launched._launch_frames = lambda args: launched._launch(K.advance_frames, args)
        pos, err = calls(replayed)
        np.testing.assert_array_equal(pos, calls(launched)[0])
        assert replayed._frames_cmds is not None and launched._frames_cmds is None
        assert err.max() <= 1e-9
        assert np.abs(pos - calls(Solver(model, "cpu", threads=threads), swap=False)[0]).max() > 1e-4


@pytest.fixture
def fourbar_model():
    from pathlib import Path

    from usdphys.usd.reader import read_stage

    model, _ = read_stage(str(Path(__file__).resolve().parents[2] / "assets" / "usd" / "fourbar.usda"))
    return model


# ------------------------------------------------------------------ elements and stage overrides
def spring_stage(k=100.0, c=1.0, friction=0.0, mass=1.0, drive_k=0.0):
    """A slider on a prismatic joint pulled by a TSDA, with NewtonJointAPI friction; a wheel on a
    revolute joint with a drive (angular gain authored per degree)."""
    extra = (f'uniform token[] newton:dofs = ["distance"]\n    uniform float[] newton:dynamicFrictionEffort = '
             f'[{friction!r}]\n    uniform float[] newton:staticFrictionEffort = [{friction!r}]')
    drive = (f'float drive:angular:physics:stiffness = {drive_k!r}\n    float drive:angular:physics:damping = 0.01\n'
             '    float drive:angular:physics:targetPosition = 30')
    txt = (body("s", pos=(0.1, 0, 0), mass=mass, inertia=(1, 1, 1))
           + joint("PhysicsPrismaticJoint", "slide", "s", axis="X", extra=extra, schemas='"NewtonJointAPI"')
           + f'def MbdSpringDamper "spring" {{\n    rel mbd:body1 = </s>\n    point3d mbd:localPos0 = (-1, 0, 0)\n'
             f'    double mbd:stiffness = {k!r}\n    double mbd:damping = {c!r}\n    double mbd:restLength = 1\n}}\n'
           + body("w", pos=(0, 2, 0), mass=1.0, inertia=(0.1, 0.1, 0.1))
           + joint("PhysicsRevoluteJoint", "axle", "w", pos0=(0, 2, 0), axis="Z",
                   extra=drive, schemas='"PhysicsDriveAPI:angular"'))
    return stage(txt)


def test_element_parameters_and_stage_overrides_equal_authored_stages():
    # friction and drive gain stay positive: a zero would remove their rows in that world (refused)
    ks, fr, mass, dk = [100.0, 400.0, 25.0], [0.25, 0.5, 2.0], [1.0, 2.0, 0.5], [0.5, 0.0625, 0.25]
    res = simulate(spring_stage(drive_k=0.1, friction=0.125), worlds=3, duration=0.3, dt=1e-3, fps=100,
                   parameters={"spring.stiffness": np.array(ks)[:, None],
                               "joint_dof.dynamic_friction": np.array(fr)[:, None],
                               "joint_dof.static_friction": np.array(fr)[:, None]},
                   overrides={"/s.physics:mass": mass, "/axle.drive:angular:physics:stiffness": dk,
                              "/spring.mbd:damping": [2.0, 0.5, 4.0]})
    for w in range(3):
        one = simulate(spring_stage(k=ks[w], c=[2.0, 0.5, 4.0][w], friction=fr[w], mass=mass[w], drive_k=dk[w]),
                       duration=0.3, dt=1e-3, fps=100)
        # the authored stage values are float32; the values here are binary-exact in float32, so
        # both paths see the same numbers; 1e-12 m allows the last-bit difference of the per-degree
        # conversion (x / (pi/180) in the reader, x * (180/pi) in the provenance scale)
        np.testing.assert_allclose(res.positions[:, w], one.positions[:, 0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.orientations[:, w], one.orientations[:, 0], rtol=0, atol=1e-12)
    assert np.ptp(res.positions[-1, :, 0, 0]) > 1e-3


def test_provenance_maps_stage_attributes_to_parameter_entries():
    from usdphys.types.params import source_for
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(spring_stage(drive_k=0.1, mass=2.0))
    src = source_for(model, "/s", "physics:mass")
    assert src.targets[0][:2] == ("body.mass", ("/s",)) and src.targets[0][2] == 1.0
    drv = source_for(model, "/axle", "drive:angular:physics:stiffness")
    name, index, scale = drv.targets[0]
    assert (name, index) == ("joint.drive_stiffness", ("/axle", 5))
    assert scale == pytest.approx(180.0 / math.pi)  # per degree -> per radian
    grav = source_for(model, "/Scene", "physics:gravityMagnitude")
    assert grav.targets[0][0] == "gravity"
    with pytest.raises(UsdphysError, match="not a per-world parameter"):
        source_for(model, "/s", "physics:velocity")


# ------------------------------------------------------------------ validation
def test_bad_parameters_are_one_line_errors():
    model = driven_pendulum(k=1.0, upper=1.0).replicate(2)
    cases = [
        (lambda: model.set_parameter("body.weight", 1.0), "unknown parameter 'body.weight'"),
        (lambda: model.set_parameter("body.mass", [[1.0, 2.0, 3.0]]), r"shape \(1, 3\)"),
        (lambda: model.set_parameter("body.mass", [1.0, -2.0], index=0), "not positive"),
        (lambda: model.set_parameter("body.mass", [[1.0], [np.inf]]), "value inf is not positive"),  # every value
        (lambda: model.set_parameter("body.mass", [[np.nan], [1.0]]), "value nan is not positive"),
        (lambda: model.set_parameter("joint.drive_max_force", np.full((2, 1, 6), -1.0)), "not positive"),
        (lambda: model.set_parameter("body.mass", 1.0, index="/nope"), "no body '/nope'"),
        (lambda: model.set_parameter("joint.upper", np.nan, index=(0, 4)), "not bound"),
        (lambda: model.set_parameter("spring.stiffness", 1.0), "has no spring dampers"),
        (lambda: simulate(model, worlds=2, duration=0.01, overrides={"/bob": 1.0}), "expected a prim path"),
    ]
    for call, match in cases:
        with pytest.raises(UsdphysError, match=match) as err:
            call()
        assert "\n" not in str(err.value)
    assert "body.mass" not in model.world_parameters  # a refused change leaves the model as it was
    masses = np.array([[2.0], [3.0]])
    model.set_parameter("body.mass", masses)  # every value given: the model keeps its own copy
    masses[:] = -1.0
    np.testing.assert_array_equal(model.parameter("body.mass"), [[2.0], [3.0]])
    model.set_parameter("joint.drive_max_force", np.full((2, 1, 6), np.inf))  # unbounded: allowed
    # a limit that exists in one world only changes the rows: refused, naming the joint
    model.set_parameter("joint.upper", [1.0, np.inf], index=(0, 4))
    with pytest.raises(UsdphysError, match="/pivot: the per-world parameters of world 1"):
        Solver(model)


def test_unset_parameters_are_broadcast_not_copied():
    model = Model()
    model.add_body("/a", 1.0, [1, 1, 1], pos=[0, 0, 0])
    model = model.replicate(5)
    solver = Solver(model, threads=1)
    assert solver.m.inv_mass.shape == (5, 1) and solver.m.inv_mass.strides[0] == 0
    model.set_parameter("body.mass", [1, 2, 3, 4, 5.0], index=0)
    solver = Solver(model, threads=1)
    assert solver.m.inv_mass.strides[0] != 0
    np.testing.assert_array_equal(solver.m.inv_mass.numpy()[:, 0], 1.0 / np.arange(1, 6))
    np.testing.assert_array_equal(model.parameter("body.mass")[:, 0], np.arange(1, 6))
    assert model.world(3).body_mass[0] == 4.0 and model.world(3).world_count == 1


def test_contact_materials_per_world_equal_single_world_runs_in_both_layouts():
    """A ball dropped on a plane, sliding sideways: restitution and friction per world. Each
    world equals the single-world model whose shape table carries its values, in both layouts."""
    from test_contact import ball_model

    es, mus = [0.0, 0.5, 0.8], [0.1, 0.5, 1.0]

    def ball(e, mu, worlds=1):
        m = ball_model(0.05, e=e, mu=mu, worlds=worlds)
        m.body_lin_vel = m.body_lin_vel + np.array([1.0, 0.0, 0.0])
        return m

    model = ball(0.2, 0.3, worlds=3)
    model.set_parameter("shape.restitution", np.array([[e, e] for e in es]))
    model.set_parameter("shape.static_friction", np.array([[mu, mu] for mu in mus]))
    model.set_parameter("shape.dynamic_friction", np.array([[mu, mu] for mu in mus]))
    major = run(model, frames=30, substeps=5, threads=2, layout="world_major")
    minor = run(model, frames=30, substeps=5, threads=1, layout="world_minor")
    for w in range(3):
        p1, r1 = run(ball(es[w], mus[w]), frames=30, substeps=5)
        np.testing.assert_array_equal(major[0][:, w], p1[:, 0])
        np.testing.assert_array_equal(minor[0][:, w], p1[:, 0])
        np.testing.assert_array_equal(minor[1][:, w], r1[:, 0])
    assert np.ptp(major[0][-1, :, 0, 0]) > 1e-3  # friction made the worlds slide differently


def test_element_state_in_both_layouts_is_bit_identical():
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(spring_stage(drive_k=0.1, friction=0.125))
    model = model.replicate(3)
    model.set_parameter("spring.stiffness", [[100.0], [400.0], [25.0]])
    a = Solver(model, threads=1, layout="world_major").run(20, 5, 1e-3, record="all")
    b = Solver(model, threads=3, layout="world_minor").run(20, 5, 1e-3, record="all")
    np.testing.assert_array_equal(a.pos, b.pos)
    np.testing.assert_array_equal(a.rot, b.rot)
    np.testing.assert_array_equal(a.motor_effort, b.motor_effort)
    # every recorded group too: the frame output is laid out like the state
    assert {"vel", "value", "force", "joint_force", "kinetic"} <= set(a.outputs)
    for name, values in a.outputs.items():
        np.testing.assert_array_equal(values, b.outputs[name], err_msg=name)
    assert np.ptp(a.outputs["value"][-1], axis=0).max() > 1e-3  # the worlds' springs differ


def material_stage(rest=0.5, dyn=0.25):
    """A sphere over a ground box, both bound to one physics material (only dynamic friction
    authored, so it is the static friction too)."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics, UsdShade

    st = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(st, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(st, 1.0)
    UsdPhysics.Scene.Define(st, "/World/Scene")
    mat = UsdShade.Material.Define(st, "/Mat/M")
    api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
    api.CreateDynamicFrictionAttr(dyn)
    api.CreateRestitutionAttr(rest)
    ball = UsdGeom.Xform.Define(st, "/Ball")
    ball.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.3))
    UsdPhysics.RigidBodyAPI.Apply(ball.GetPrim()).CreateVelocityAttr(Gf.Vec3f(1.0, 0.0, 0.0))
    UsdPhysics.MassAPI.Apply(ball.GetPrim()).CreateMassAttr(1.0)
    sphere = UsdGeom.Sphere.Define(st, "/Ball/S")
    sphere.GetRadiusAttr().Set(0.1)
    ground = UsdGeom.Cube.Define(st, "/Ground")
    ground.AddTranslateOp().Set(Gf.Vec3d(0, 0, -1))
    for prim in (sphere, ground):
        UsdPhysics.CollisionAPI.Apply(prim.GetPrim())
        UsdShade.MaterialBindingAPI.Apply(prim.GetPrim()).Bind(mat, UsdShade.Tokens.weakerThanDescendants, "physics")
    return st


def test_material_overrides_follow_the_bound_shapes():
    from usdphys.types.params import source_for
    from usdphys.usd.reader import read_stage

    model, _ = read_stage(material_stage())
    src = source_for(model, "/Mat/M", "physics:dynamicFriction")
    assert sorted(t[0] for t in src.targets) == ["shape.dynamic_friction"] * 2 + ["shape.static_friction"] * 2
    rests, dyns = [0.0, 0.75], [0.125, 0.5]  # float32-exact, as the authored attributes are
    res = simulate(material_stage(), worlds=2, duration=0.4, dt=1e-3, fps=50,
                   overrides={"/Mat/M.physics:restitution": rests, "/Mat/M.physics:dynamicFriction": dyns})
    for w in range(2):
        one = simulate(material_stage(rests[w], dyns[w]), duration=0.4, dt=1e-3, fps=50)
        np.testing.assert_array_equal(res.positions[:, w], one.positions[:, 0])
    assert np.max(np.abs(res.positions[:, 0, 0, 2] - res.positions[:, 1, 0, 2])) > 1e-2  # the bounce differs
    with pytest.raises(UsdphysError, match=r"in \[0, 1\]"):
        simulate(material_stage(), worlds=2, duration=0.01, overrides={"/Mat/M.physics:restitution": 1.5})


def test_simulate_parameters_by_name_and_by_entry_leave_the_callers_model_alone():
    model = driven_pendulum(k=1.0, c=0.1, upper=1.0).replicate(2)
    res = simulate(model, worlds=2, duration=0.05, dt=1e-3, fps=100, threads=1,
                   parameters={("body.mass", "/bob"): [1.0, 3.0], ("joint.drive_stiffness", 0, "rotY"): 5.0,
                               "gravity": [0.0, 0.0, -1.62]})
    assert model.world_parameters == {}  # the caller's model is not changed
    np.testing.assert_array_equal(res.model.parameter("body.mass")[:, 0], [1.0, 3.0])
    np.testing.assert_array_equal(res.model.parameter("joint.drive_stiffness")[:, 0, 4], [5.0, 5.0])
    for w, mass in enumerate((1.0, 3.0)):
        one = simulate(driven_pendulum(mass=mass, gravity=1.62, k=5.0, c=0.1, upper=1.0), duration=0.05, dt=1e-3,
                       fps=100)
        np.testing.assert_array_equal(res.positions[:, w], one.positions[:, 0])


def test_default_device_is_the_cpu_unless_many_worlds_meet_a_gpu(monkeypatch):
    """A run that names no device takes the GPU only from GPU_WORLDS_PER_CORE worlds per CPU
    core: one GPU thread runs a world 12-18x slower than a CPU core (measured on an H200)."""
    from usdphys.solver import driver

    monkeypatch.delenv(driver.DEVICE_ENV, raising=False)
    monkeypatch.setattr(driver, "cpu_cores", lambda: 2)
    monkeypatch.setattr(driver.wp, "get_cuda_device_count", lambda: 0)
    assert driver.default_device(10**6) == "cpu"  # no GPU: always the CPU
    monkeypatch.setattr(driver.wp, "get_cuda_device_count", lambda: 1)
    monkeypatch.setattr(driver.wp, "get_preferred_device", lambda: "cuda:0")
    edge = 2 * driver.GPU_WORLDS_PER_CORE
    assert driver.default_device(1) == "cpu" and driver.default_device(edge - 1) == "cpu"
    assert driver.default_device(edge) == "cuda:0"


def test_usdphys_device_names_the_device_of_runs_that_name_none(monkeypatch):
    """USDPHYS_DEVICE sends every run that names no device to one device, in this process and the
    processes it starts (the suite on a GPU machine); a value Warp cannot use is one error."""
    from usdphys.solver import driver

    monkeypatch.setattr(driver.wp, "get_cuda_device_count", lambda: 1)
    monkeypatch.setenv(driver.DEVICE_ENV, "cuda:0")
    assert driver.default_device(1) == "cuda:0"
    monkeypatch.setenv(driver.DEVICE_ENV, " cpu ")
    assert driver.default_device(10**6) == "cpu"
    for bad in ("gpu", "cuda:x", "cuda:"):
        monkeypatch.setenv(driver.DEVICE_ENV, bad)
        with pytest.raises(UsdphysError, match=f"USDPHYS_DEVICE={bad}: expected cpu, cuda or cuda:N"):
            driver.default_device(1)
    monkeypatch.setattr(driver.wp, "get_cuda_device_count", lambda: 0)
    monkeypatch.setenv(driver.DEVICE_ENV, "cuda")
    with pytest.raises(UsdphysError, match="no CUDA device on this machine"):
        driver.default_device(1)
    monkeypatch.setenv(driver.DEVICE_ENV, "")  # empty: as if unset
    assert driver.default_device(1) == "cpu"


def test_a_solver_naming_no_device_asks_default_device_with_its_worlds(fourbar_model, monkeypatch):
    from usdphys.solver import driver

    asked = []
    monkeypatch.setattr(driver, "default_device", lambda worlds: asked.append(worlds) or "cpu")
    assert Solver(fourbar_model.replicate(3)).device.is_cpu and asked == [3]
    assert Solver(fourbar_model, "cpu") and asked == [3]  # a named device is taken as named


def test_a_slow_kernel_load_is_announced_as_compiling(monkeypatch, caplog):
    """A cold build of the step kernels takes about two minutes on the CPU and 10-25 on CUDA: a load
    still running after the announce delay says it is compiling; a quick one (cached) says nothing."""
    import time as _time

    from usdphys.solver import driver

    monkeypatch.setattr(driver.wp, "load_module", lambda *a, **k: _time.sleep(0.3))
    with caplog.at_level("WARNING", logger="usdphys"):
        driver.load_step_module("cpu", None, announce_after=0.05)
    assert any("compiling the solver's kernels" in r.getMessage() for r in caplog.records)
    caplog.clear()
    monkeypatch.setattr(driver.wp, "load_module", lambda *a, **k: None)
    with caplog.at_level("WARNING", logger="usdphys"):
        driver.load_step_module("cpu", None, announce_after=0.2)
        _time.sleep(0.3)  # past the delay: the cancelled notice never fires
    assert not caplog.records


def test_runs_load_the_step_kernels_once_and_again_after_the_laws_change(fourbar_model, monkeypatch):
    """Every device announces a slow (compiling) load; a Solver's later runs skip the load, and
    so does another Solver with the same laws, until other laws are installed."""
    from usdphys.solver import driver

    loads = []
    real = driver.load_step_module
    monkeypatch.setattr(driver, "_LOADED", set())
    monkeypatch.setattr(driver, "load_step_module", lambda dev, block, after: loads.append(after) or real(dev, block))
    solver = Solver(fourbar_model, "cpu")
    solver.run(2, 2, 1e-3)
    solver.run(2, 2, 1e-3)
    Solver(fourbar_model, "cpu").run(1, 1, 1e-3)
    assert loads == [driver.COMPILE_NOTICE_AFTER]  # the CPU announces a cold build too
    # another set of laws installed (by the model set-up of another Solver): loaded again
    monkeypatch.setattr(driver.forces, "user_law", object())
    monkeypatch.setattr(driver.forces, "install_user_laws", lambda laws: False)
    solver.run(1, 1, 1e-3)
    assert len(loads) == 2


def test_precompile_cuda_builds_the_variant_the_driver_launches(monkeypatch):
    """precompile_cuda hands Warp the step module with the driver's CUDA block size, as cubin
    for the asked architecture (the 20-minute compile itself is not run here)."""
    import warp as wp

    from usdphys.solver import driver, step

    module = wp.get_module(step.__name__)
    launched = module.get_module_identifier(block_dim=driver.CUDA_BLOCK_DIM)  # what a CUDA run loads
    default_block = module.options["block_dim"]
    calls = []

    def compile_aot(mod, **kw):  # what Warp would compile: the module as it is at the call
        calls.append((mod, kw, module.get_module_identifier(), module.options["cuda_output"]))
        return ["x.cubin"]

    monkeypatch.setattr(driver.wp, "compile_aot_module", compile_aot)
    assert driver.precompile_cuda(90) == ["x.cubin"]
    assert calls == [(step, {"arch": 90, "use_ptx": False}, launched, "cubin")]  # the variant a CUDA run loads
    assert module.options["block_dim"] == default_block  # and the module is left as it was
