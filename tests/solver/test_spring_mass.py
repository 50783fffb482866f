"""Spring with mass, exact (Multibody.jl Spring(c, m, lengthfraction), Modelica LineForceWithMass):
the point mass rides on the line at the fraction, moving with it. Checked against a
reduced-coordinate reference of our own on a case the lumped approximation gets wrong."""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from sim_helpers import body, stage, v3
from usdphys.simulate import simulate

MA, MB, MS, LAM = 1.0, 0.5, 0.6, 0.3  # body masses, spring mass, where it sits (kg, -)
K1, K2, L1, L2, G = 50.0, 80.0, 1.0, 1.0, 9.81  # stiffnesses, rest lengths, gravity along -x
VA, VB = 0.1, -0.2  # initial velocities (m/s)
DURATION, DT, FPS = 1.0, 1e-4, 100


def tsda(name, b1, b0=None, stiffness=0.0, rest=1.0, mass=0.0, frac=0.5):
    rel0 = f"rel mbd:body0 = </{b0}>" if b0 else ""
    return f'''def MbdSpringDamper "{name}" {{
    {rel0}
    rel mbd:body1 = </{b1}>
    double mbd:stiffness = {stiffness!r}
    double mbd:restLength = {rest!r}
    double mbd:springMass = {mass!r}
    double mbd:springMassFraction = {frac!r}
}}
'''


def equilibrium():
    """Static positions along x: the particle's weight splits (1 - lam) to A, lam to B."""
    e2 = -(MB + LAM * MS) * G / K2
    e1 = -(MA + MB + MS) * G / K1
    xa = L1 + e1
    return xa, xa + L2 + e2


def reference(times, lumped: bool):
    """A and B on the x axis (reduced coordinates xA, xB). The particle at
    r = (1 - lam) xA + lam xB adds MS (dr/dq)(dr/dq)^T to the mass matrix (exact), or MS (1 - lam)
    to A and MS lam to B (the lumped approximation); its weight acts at r either way."""
    if lumped:
        M = np.diag([MA + (1 - LAM) * MS, MB + LAM * MS])
    else:
        J = np.array([1 - LAM, LAM])
        M = np.diag([MA, MB]) + MS * np.outer(J, J)
    Minv = np.linalg.inv(M)

    def rhs(t, y):
        xa, xb, va, vb = y
        f1 = -K1 * (xa - L1)
        f2 = -K2 * (xb - xa - L2)  # pushes B +x and A -x
        F = np.array([f1 - f2 - MA * G - (1 - LAM) * MS * G, f2 - MB * G - LAM * MS * G])
        return [va, vb, *(Minv @ F)]

    xa, xb = equilibrium()
    sol = solve_ivp(rhs, (0.0, times[-1]), [xa, xb, VA, VB], t_eval=times, method="DOP853", rtol=1e-12,
                    atol=1e-14)
    return sol.y[0], sol.y[1]


def test_spring_mass_is_a_particle_on_the_line():
    xa, xb = equilibrium()
    txt = body("A", pos=(xa, 0, 0), mass=MA, vel=(VA, 0, 0)) + body("B", pos=(xb, 0, 0), mass=MB, vel=(VB, 0, 0))
    txt += tsda("S1", "A", stiffness=K1, rest=L1)
    txt += tsda("S2", "B", b0="A", stiffness=K2, rest=L2, mass=MS, frac=LAM)
    r = simulate(stage(txt, gravity=G, direction=(-1, 0, 0)), duration=DURATION, dt=DT, fps=FPS)
    ra, rb = reference(r.times, lumped=False)
    la, lb = reference(r.times, lumped=True)
    err = max(np.max(np.abs(r.positions[:, 0, 0, 0] - ra)), np.max(np.abs(r.positions[:, 0, 1, 0] - rb)))
    lumped_off = max(np.max(np.abs(la - ra)), np.max(np.abs(lb - rb)))
    # the case matters: the lumped approximation is off by more than 1e-3 m here (measured
    # 2.2e-2 m; the exact particle 6.6e-8 m, printed with pytest -s)
    assert lumped_off > 1e-3, lumped_off
    # second order at h = 1e-4 with omega < 20 rad/s over 1 s: phase error ~ (h w)^2 / 12 * w t
    # ~ 1e-6 rad on a 2 cm amplitude, so 1e-6 m leaves a margin of ~50
    assert err <= 1e-6, (err, lumped_off)
    print(f"exact particle: {err:.2e} m from the reference; lumped: {lumped_off:.2e} m")
    # nothing leaves the x axis
    assert np.max(np.abs(r.positions[:, 0, :, 1:])) <= 1e-12


def test_spring_mass_between_two_swinging_pendulums():
    """Two pendulums about world Y, their tips joined by a massive spring: the particle's
    inertia couples them through a configuration-dependent mass matrix (with its centripetal
    terms), which is what the POINT rows must reproduce in 3-D."""
    from sim_helpers import angle_about, joint

    m, ell, k, L0, ms, lam, g = 1.0, 1.0, 30.0, 0.8, 0.5, 0.3, 9.81
    O = [np.zeros(3), np.array([1.5, 0.0, 0.0])]
    th0 = np.array([1.3, np.pi - 1.3])  # tip = O + ell (cos th, 0, -sin th)
    iyy = m * ell ** 2 / 12.0
    ipiv = iyy + m * (ell / 2) ** 2
    gvec = np.array([0.0, 0.0, -g])

    def u(th):
        return np.array([np.cos(th), 0.0, -np.sin(th)])

    def du(th):
        return np.array([-np.sin(th), 0.0, -np.cos(th)])

    def reference(times, lumped):
        def rhs(t, y):
            th, om = y[:2], y[2:]
            P = [O[i] + ell * u(th[i]) for i in range(2)]
            dP = [ell * du(th[i]) for i in range(2)]
            d = P[0] - P[1]
            L = np.linalg.norm(d)
            f = -k * (L - L0)  # pushes the tips apart
            tau = np.array([f * (d / L) @ dP[0], -f * (d / L) @ dP[1]])
            tau += np.array([m * gvec @ (0.5 * dP[i]) for i in range(2)])  # the rods' weight
            Jr = np.stack([(1 - lam) * dP[0], lam * dP[1]], 1)  # dr/dtheta, r the particle
            tau += ms * gvec @ Jr  # its weight at r
            if lumped:
                M = np.diag([ipiv + (1 - lam) * ms * ell ** 2, ipiv + lam * ms * ell ** 2])
            else:
                # d2r/dt2 = Jr th'' + c, c = sum of the tips' centripetal accelerations
                c = -(1 - lam) * ell * u(th[0]) * om[0] ** 2 - lam * ell * u(th[1]) * om[1] ** 2
                M = np.diag([ipiv, ipiv]) + ms * Jr.T @ Jr
                tau = tau - ms * Jr.T @ c
            return [*om, *np.linalg.solve(M, tau)]

        sol = solve_ivp(rhs, (0.0, times[-1]), [*th0, 0.0, 0.0], t_eval=times, method="DOP853", rtol=1e-12,
                        atol=1e-14)
        return sol.y[:2].T

    txt = ""
    for i, name in enumerate(("A", "B")):
        c = O[i] + 0.5 * ell * u(th0[i])
        txt += body(name, pos=c, mass=m, inertia=(1e-3, iyy, iyy),
                    orient=(np.cos(th0[i] / 2), 0.0, np.sin(th0[i] / 2), 0.0))
        txt += joint("PhysicsRevoluteJoint", f"pivot{name}", name, pos0=O[i], pos1=(-ell / 2, 0, 0), axis="Y")
    txt += f'''def MbdSpringDamper "S" {{
    rel mbd:body0 = </A>
    rel mbd:body1 = </B>
    point3d mbd:localPos0 = {v3((ell / 2, 0, 0))}
    point3d mbd:localPos1 = {v3((ell / 2, 0, 0))}
    double mbd:stiffness = {k}
    double mbd:restLength = {L0}
    double mbd:springMass = {ms}
    double mbd:springMassFraction = {lam}
}}
'''
    r = simulate(stage(txt, gravity=g), duration=DURATION, dt=DT, fps=FPS)
    th = np.stack([angle_about(r.orientations[:, 0, b], 1) for b in range(2)], 1)
    ref = reference(r.times, lumped=False)
    off = np.max(np.abs(reference(r.times, lumped=True) - ref))
    err = np.max(np.abs(th - ref))
    # measured: lumped 9.5e-2 rad off, the exact particle 2.6e-7 rad (second order at h = 1e-4,
    # w < 10 rad/s over 1 s; 1e-6 rad leaves a margin of 4)
    assert off > 1e-3, off
    assert err <= 1e-6, (err, off)
    print(f"pendulums: exact particle {err:.2e} rad from the reference; lumped {off:.2e} rad")
