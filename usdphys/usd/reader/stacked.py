"""Stacked joints: several 1-DOF joints on one body pair read as ONE multi-DOF joint.

MJCF gives a body several joints (hinges / slides) at once; mujoco-usd-converter writes each
as its own 1-DOF PhysicsJoint on the same body pair and authors
``newton:jointsAddMobility = 1`` on the articulation root (the joints' DOFs ADD, as in MuJoCo).
Plain UsdPhysics makes every joint a constraint of its own, so such a stack welds the pair.

With the flag (on the joints' articulation root, any ancestor of a joint or of its bodies, or the
joint itself), or where every joint of the stack carries MjcJointAPI (MuJoCo's joints always add;
the converter authors the flag only on articulation roots, so bodies jointed to the world outside
one come without it), the joints of one body pair become one generic joint whose free DOFs are the
union, each keeping its limits and drive; NewtonJointAPI rows (armature, damping, friction) and
motors of the stacked joints are moved onto the merged DOF by ``remap_elements``.

Frame: MuJoCo composes a body's joints in their order (the first hinge's axis stays fixed in the
parent, the last one's in the child). The merged joint's frame 0 takes the hinge axes in that
order as its x, y, z: two hinges a, b -> x = a, y = b, z = a x b, the generic joint's Cardan row
(rotZ locked) keeps x on body 0 perpendicular to y on body 1, exactly MuJoCo's universal joint,
and its two coordinates (limits, drives, springs, couplings) are MuJoCo's two hinge angles;
a third hinge must lie along +-z (with -z its coordinate, limits and drive change sign). Three
hinges leave the rotation free (a ball); their limits and drives act on the angles of the x-y-z
sequence, which are MuJoCo's three hinge coordinates (model.dof_row). Slides must come before every hinge (MuJoCo moves a slide's axis with
the rotations applied before it) and lie along the frame's axes.

Two hinges at different points of the body (MJCF joint positions: dm_control's humanoid ankles)
rotate as MuJoCo's: frame 0 sits on the first hinge, frame 1 on the second, and the second's
point keeps its place in the frame that turns with the first (`Model.joint_anchor_offset`: the
translation rows hold its components along x0, y1 and x0 x y1, the last a CROSS row).

A stack that does not fit (axes not orthogonal, three hinges at different anchors, a slide after a
hinge, two joints on one axis, other joint types) is left as UsdPhysics reads it, with one
warning naming the joints and why: the pair stays welded where the joints' DOFs cannot add. A
stack that welds its pair and whose joints agree on one pose is held as one fixed joint at the
first joint's frames (which `types.fixedmerge` may fold into one body): its joints' rows,
fifteen for three hinges, are dependent, and their float32 frames disagreed by ~1e-8 m, the
largest residual the dog and the rodent reported; joints that disagree stay as authored.
Without the flag UsdPhysics semantics stay, with one warning naming the welded body pairs.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from pxr import Usd

from usdphys.errors import UsdphysError, warn
from usdphys.math3d import matrix_to_quat, quat_conj, quat_mul, quat_rotate
from usdphys.usd.check import has_api
from usdphys.usd.tokens import Tokens
from usdphys.types.model import PER_JOINT_ARRAYS, Model

ADD_MOBILITY = "newton:jointsAddMobility"
MJC_JOINT_API = "MjcJointAPI"
_ROT_TOKENS = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")
_ANCHOR_TOL = 1e-5  # m: the converter writes anchors as float32 (point3f)
_AXIS_TOL = 1e-4  # |cos| between axes; float32 quaternions give ~1e-7
_WELD_TOL = 1e-6  # m or rad: a welding stack's joints agree on one pose this well to become one weld


def _flagged(stage: Usd.Stage, paths) -> bool:
    for path in paths:
        prim = stage.GetPrimAtPath(path) if path else None
        while prim and prim.IsValid() and not prim.IsPseudoRoot():
            attr = prim.GetAttribute(ADD_MOBILITY)
            if attr and attr.HasAuthoredValue() and bool(attr.Get()):
                return True
            prim = prim.GetParent()
    return False


def _mujoco_joints(stage: Usd.Stage, joint_paths) -> bool:
    """Every joint of the stack carries MjcJointAPI: they are MuJoCo's joints, whose DOFs always
    add. mujoco-usd-converter authors the flag only on articulation roots, so a body slid or
    hinged to the world outside one (gymnasium pusher's object and goal) comes without it."""
    for path in joint_paths:
        prim = stage.GetPrimAtPath(path)
        if not prim or not prim.IsValid() or not has_api(prim, MJC_JOINT_API):
            return False
    return True


def _prim_order(stage: Usd.Stage) -> dict[str, int]:
    """Joint prim paths in stage traversal order (siblings keep their authored order)."""
    return {str(p.GetPath()): i for i, p in enumerate(Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()))}


def _single_dof(model: Model, j: int):
    """The one free DOF of a plain revolute / prismatic-like joint, else None."""
    if model.joint_is_distance[j] or model.joint_composite[j]:
        return None
    free = np.flatnonzero(~model.joint_locked[j])
    return int(free[0]) if len(free) == 1 else None


def _fit(model: Model, js: list[int]):
    """(rot0, rot1, [(joint, target dof, sign)]) for the merged frame, or a reason string."""
    e = np.eye(3)
    info = []
    for j in js:
        d = _single_dof(model, j)
        if d is None:
            return f"{model.joint_paths[j]} is not a 1-DOF joint"
        a0 = quat_rotate(model.joint_rot0[j], e[d % 3])
        a1 = quat_rotate(model.joint_rot1[j], e[d % 3])
        info.append((j, d >= 3, a0, a1))
    hinges = [it for it in info if it[1]]
    if hinges:
        first_hinge = next(i for i, it in enumerate(info) if it[1])
        if any(not it[1] for it in info[first_hinge:]):
            return "a slide follows a hinge (its axis turns with the hinge)"
        h0 = hinges[0][0]
        for j, *_ in hinges[1:]:
            if (np.linalg.norm(model.joint_pos0[j] - model.joint_pos0[h0]) > _ANCHOR_TOL
                    or np.linalg.norm(model.joint_pos1[j] - model.joint_pos1[h0]) > _ANCHOR_TOL):
                if len(hinges) != 2 or len(info) != 2:
                    return "the hinges have different anchors (supported for exactly two hinges and no slide)"
    if len(hinges) > 3:
        return "more than three hinges"
    # frame axes: hinges in composition order, then slides' directions
    dirs0, dirs1 = [], []
    for _, _, a0, a1 in hinges + [it for it in info if not it[1]]:
        if all(abs(abs(np.dot(a0, v)) - 1.0) > _AXIS_TOL for v in dirs0):
            dirs0.append(a0)
            dirs1.append(a1)
    if len(dirs0) > 3:
        return "more than three joint axes"
    for i in range(len(dirs0)):
        for k in range(i):
            if abs(np.dot(dirs0[i], dirs0[k])) > _AXIS_TOL:
                return "the joint axes are not orthogonal"

    def frame(dirs):
        x = dirs[0]
        y = dirs[1] if len(dirs) > 1 else np.cross(x, e[int(np.argmin(np.abs(x)))])
        y = y / np.linalg.norm(y)
        return np.stack([x, y, np.cross(x, y)], axis=1)

    R0, R1 = frame(dirs0), frame(dirs1)
    out, used = [], set()
    for j, is_rot, a0, a1 in info:
        c0, c1 = R0.T @ a0, R1.T @ a1
        ax = int(np.argmax(np.abs(c0)))
        if int(np.argmax(np.abs(c1))) != ax or np.sign(c0[ax]) != np.sign(c1[ax]):
            return f"{model.joint_paths[j]}'s two frames disagree"
        dof = ax + (3 if is_rot else 0)
        if dof in used:
            return "two joints move along one axis"
        used.add(dof)
        out.append((j, dof, float(np.sign(c0[ax]))))
    if len(hinges) == 2 and [d for _, d, _ in out if d >= 3] != [3, 4]:
        return "internal: hinge order lost"
    return matrix_to_quat(R0), matrix_to_quat(R1), out


def _anchor_offset(model: Model, b0: int, b1: int, pos0, rot0, pos1, rot1) -> np.ndarray:
    """Frame 1's origin seen from frame 0's in the input pose, along frame 0's x, frame 1's y and
    their cross product (Model.joint_anchor_offset of a Cardan joint with rotZ locked)."""
    def world(b, p, q):
        if b < 0:
            return np.asarray(p, float), np.asarray(q, float)
        bp, bq = model.body_pos[0, b], model.body_rot[0, b]
        return bp + quat_rotate(bq, p), quat_mul(bq, q)

    p0, q0 = world(b0, pos0, rot0)
    p1, q1 = world(b1, pos1, rot1)
    x0 = quat_rotate(q0, np.array([1.0, 0.0, 0.0]))
    y1 = quat_rotate(q1, np.array([0.0, 1.0, 0.0]))
    d = p1 - p0
    return np.array([x0 @ d, y1 @ d, np.cross(x0, y1) @ d])


def locks_everything(model: Model, js: list[int]) -> bool:
    """True when the joints' locked DOFs together leave the body pair no relative motion in the
    input pose: the rank of their constraint rows on the relative twist (w, v at the origin) is 6.
    A locked translation along t at anchor p reads (p x t, t), a locked rotation about a reads
    (a, 0). Two different hinges, or a hinge and a slide, already weld the pair."""
    rows = []
    for j in js:
        b0 = int(model.joint_body0[j])
        x, q = (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])) if b0 < 0 else \
            (np.asarray(model.body_pos[0, b0], float), np.asarray(model.body_rot[0, b0], float))
        qj = quat_mul(q, np.asarray(model.joint_rot0[j], float))
        p = x + quat_rotate(q, np.asarray(model.joint_pos0[j], float))
        for d in range(6):
            if not model.joint_locked[j, d]:
                continue
            a = quat_rotate(qj, np.eye(3)[d % 3])
            rows.append(np.concatenate([np.cross(p, a), a]) if d < 3 else np.concatenate([a, np.zeros(3)]))
    if len(rows) < 6:
        return False
    sv = np.linalg.svd(np.asarray(rows), compute_uv=False)
    return bool(sv[5] > 1e-9 * max(sv[0], 1.0))


def _bushed(stage: Usd.Stage, joint_paths) -> bool:
    """A joint of the stack carries MbdBushingAPI."""
    for path in joint_paths:
        prim = stage.GetPrimAtPath(path)
        if prim and prim.IsValid() and has_api(prim, Tokens.MbdBushingAPI):
            return True
    return False


def _held_as_one(model: Model, js: list[int]) -> bool:
    """The stack's joints (all with js[0]'s body0) agree on one pose of the pair: where js[0]'s
    frames coincide, every other joint's frames coincide up to its free DOF (a hinge's turn about
    its axis, a slide along it). Then one weld at js[0]'s frames is the stack, without the
    dependent rows (fifteen for three hinges) whose float32 frames disagree by ~1e-8."""
    j0 = js[0]
    if any(model.joint_is_distance[j] or model.joint_composite[j] for j in js):
        return False  # their frames do not coincide at rest
    q01 = quat_mul(model.joint_rot0[j0], quat_conj(model.joint_rot1[j0]))  # body 1 in body 0
    p01 = model.joint_pos0[j0] - quat_rotate(q01, model.joint_pos1[j0])
    e = np.eye(3)
    for j in js[1:]:
        if int(model.joint_body0[j]) != int(model.joint_body0[j0]):
            return False
        free = np.flatnonzero(~model.joint_locked[j])
        if len(free) > 1:
            return False
        p1 = p01 + quat_rotate(q01, model.joint_pos1[j])  # joint j's frame 1, seen from body 0
        q1 = quat_mul(q01, model.joint_rot1[j])
        dp = p1 - model.joint_pos0[j]
        dq = quat_mul(quat_conj(model.joint_rot0[j]), q1)  # frame 1 in frame 0
        if len(free) == 1 and free[0] >= 3:  # a hinge: its axis kept, its origin shared
            a = e[free[0] - 3]
            ok = np.linalg.norm(quat_rotate(dq, a) - a) < _WELD_TOL and np.linalg.norm(dp) < _WELD_TOL
        else:  # a slide (along its axis) or a lock: frames parallel
            a = quat_rotate(model.joint_rot0[j], e[free[0]]) if len(free) == 1 else np.zeros(3)
            ok = (2 * np.linalg.norm(dq[:3]) < _WELD_TOL
                  and np.linalg.norm(dp - (dp @ a) * a) < _WELD_TOL)
        if not ok:
            return False
    return True


def merge_stacked_joints(stage: Usd.Stage, model: Model) -> tuple[dict[str, tuple[int, str, float]], set[str],
                                                                  set[str]]:
    """Merge flagged stacks in place; returns ({stacked joint path: (merged joint index, DOF
    token, sign)} for every joint that was merged (its elements are remapped with it), the paths
    of the joints left in a stack that welds its pair (locks_everything): their springs, damping,
    armature, friction and drives act on no free DOF, and the paths of those whose drives were
    left out here (for drop_welded_dof_elements' one warning)."""
    groups: dict[tuple[int, int], list[int]] = {}
    for j in range(model.joint_count):
        b0, b1 = int(model.joint_body0[j]), int(model.joint_body1[j])
        groups.setdefault((min(b0, b1), max(b0, b1)), []).append(j)
    stacks = {k: v for k, v in groups.items() if len(v) > 1}
    if not stacks:
        return {}, set(), set()
    order = _prim_order(stage)

    def body_path(b):
        return model.body_paths[b] if b >= 0 else ""

    welded, merged, drop = [], {}, set()
    welded_joints: set[str] = set()
    left_drives: set[str] = set()

    def weld(js):
        if not locks_everything(model, js):
            return
        welded_joints.update(model.joint_paths[j] for j in js)
        for j in js:  # a drive on a DOF that cannot move: left out, named after the read
            if np.any(model.joint_drive_stiffness[j] != 0) or np.any(model.joint_drive_damping[j] != 0):
                left_drives.add(model.joint_paths[j])
            model.joint_drive_stiffness[j] = 0.0
            model.joint_drive_damping[j] = 0.0
        # one fixed joint instead (which fixedmerge may fold away); not where a joint carries a
        # bushing, which makes that joint's rows compliant while the others stay hard
        if not _bushed(stage, [model.joint_paths[j] for j in js]) and _held_as_one(model, js):
            j0 = js[0]
            model.joint_type[j0] = "fixed"
            model.joint_locked[j0] = True
            model.joint_lower[j0], model.joint_upper[j0] = -np.inf, np.inf
            model.joint_drive_target_pos[j0] = 0.0
            model.joint_drive_target_vel[j0] = 0.0
            model.joint_drive_max_force[j0] = np.inf
            model.joint_drive_accel[j0] = False
            drop.update(js[1:])

    for (ba, bb), js in sorted(stacks.items()):
        js = sorted(js, key=lambda j: order.get(model.joint_paths[j], 1 << 30))
        names = ", ".join(model.joint_paths[j] for j in js)
        paths = [model.joint_paths[j] for j in js]
        if not (_flagged(stage, paths + [body_path(ba), body_path(bb)]) or _mujoco_joints(stage, paths)):
            welded.append(f"{body_path(ba) or 'world'} / {body_path(bb) or 'world'}")
            weld(js)
            continue
        # all joints of the stack see the pair the same way round (body0 = parent)
        j0 = js[0]
        if any(int(model.joint_body0[j]) != int(model.joint_body0[j0]) for j in js):
            warn(f"stacked joints {names}: body0 / body1 swapped between them; each constrains on its own")
            weld(js)
            continue
        fit = _fit(model, js)
        if isinstance(fit, str):
            warn(f"stacked joints {names} (their DOFs add) cannot form one joint: {fit}; "
                 "each constrains on its own (UsdPhysics semantics)")
            weld(js)
            continue
        rot0, rot1, dofs = fit
        h = next((j for j, d, _ in dofs if d >= 3), j0)  # the anchor: the hinges' common point
        pos0, pos1, offset = model.joint_pos0[h], model.joint_pos1[h], np.zeros(3)
        hinge = [j for j, d, _ in dofs if d >= 3]
        if len(hinge) == 2 and np.linalg.norm(model.joint_pos1[hinge[1]] - model.joint_pos1[hinge[0]]) > _ANCHOR_TOL:
            # two hinges apart (MJCF: two joint positions in one body): frame 0 on the first
            # hinge, frame 1 on the second, and where the second lies in the first's turning frame
            pos0, pos1 = model.joint_pos0[hinge[0]], model.joint_pos1[hinge[1]]
            offset = _anchor_offset(model, int(model.joint_body0[j0]), int(model.joint_body1[j0]),
                                    pos0, rot0, pos1, rot1)
        locked = np.ones(6, bool)
        lower, upper = np.full(6, -np.inf), np.full(6, np.inf)
        k, c, tp, tv = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
        fmax, accel = np.full(6, np.inf), np.zeros(6, bool)
        for j, d, s in dofs:
            src = _single_dof(model, j)
            locked[d] = False
            lo, hi = model.joint_lower[j, src], model.joint_upper[j, src]
            lower[d], upper[d] = (lo, hi) if s > 0 else (-hi, -lo)
            k[d], c[d] = model.joint_drive_stiffness[j, src], model.joint_drive_damping[j, src]
            tp[d], tv[d] = s * model.joint_drive_target_pos[j, src], s * model.joint_drive_target_vel[j, src]
            fmax[d], accel[d] = model.joint_drive_max_force[j, src], model.joint_drive_accel[j, src]
        new = model.add_joint(model.joint_paths[j0], model.joint_body0[j0], model.joint_body1[j0],
                              pos0, rot0, pos1, rot1, locked=locked, anchor_offset=offset,
                              lower=lower, upper=upper, kind="generic", drive_stiffness=k, drive_damping=c,
                              drive_target_pos=tp, drive_target_vel=tv, drive_max_force=fmax, drive_accel=accel)
        for j, d, s in dofs:
            merged[model.joint_paths[j]] = (new, _ROT_TOKENS[d], s)
            drop.add(j)
    if welded:
        warn(f"joints stacked on one body pair weld it ({len(welded)} pair(s): {'; '.join(welded)}): each joint "
             f"constrains on its own (UsdPhysics); author {ADD_MOBILITY} = 1 on the articulation root to add "
             "their DOFs as MuJoCo does")
    if drop:
        keep = [j for j in range(model.joint_count) if j not in drop]
        renumber = {old: i for i, old in enumerate(keep)}
        for name in PER_JOINT_ARRAYS:
            setattr(model, name, np.asarray(getattr(model, name))[keep])
        model.joint_paths = [model.joint_paths[j] for j in keep]
        model.joint_type = [model.joint_type[j] for j in keep]
        merged = {p: (renumber[j], tok, s) for p, (j, tok, s) in merged.items()}
    return merged, welded_joints, left_drives


def _keep_rows(table, keep: np.ndarray) -> None:
    """Keep the rows of an element table (a dataclass of per-element lists and arrays) where keep."""
    n = len(keep)
    for f in dataclasses.fields(table):
        v = getattr(table, f.name)
        if isinstance(v, list) and len(v) == n:
            setattr(table, f.name, [x for x, k in zip(v, keep) if k])
        elif isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n:
            setattr(table, f.name, v[keep])


def drop_welded_dof_elements(elements, welded: set[str], left_drives: set[str]) -> None:
    """Joint springs, damping, armature, friction (NewtonJointAPI, MuJoCo joint springs), drives,
    motors and couplings of joints whose stack welds their body pair act on a DOF that cannot
    move: a force on it does nothing for the motion, and as compliant rows beside the hard rows
    that lock the same direction they make the row system singular (dm_control's dog: the
    scapula's three hinges); a motion a motor or a coupling prescribes there cannot happen. Left
    out, one warning naming the joints (with those whose drives merge_stacked_joints left out)
    and the motors and couplings."""
    left = set(left_drives)
    others: list[str] = []  # motors and couplings left out, by their own prim
    if welded and elements is not None:
        table = elements.joint_dofs
        keep = np.array([p not in welded for p in table.joint_paths], bool)
        if not keep.all():
            left.update(p for p, k in zip(table.joint_paths, keep) if not k)
            _keep_rows(table, keep)
        mo = elements.motors
        keep = np.array([p not in welded for p in mo.joint_paths], bool)
        if not keep.all():
            others += [f"motor {m} on welded stacked joint {p}" for m, p, k in zip(mo.paths, mo.joint_paths, keep) if not k]
            _keep_rows(mo, keep)
        cp = elements.couplings
        for f, lp in zip(cp.paths, cp.leader_paths):
            if (f in welded) != (lp in welded):  # it would hold the other, free joint still: not what was meant
                w = f if f in welded else lp
                raise UsdphysError(f"{f}: its coupling to {lp} involves {w}, a joint of a stack that welds its body "
                                   "pair (each joint constrains on its own), so it cannot move; author "
                                   f"{ADD_MOBILITY} = 1 on the articulation root to add the stack's DOFs")
        keep = np.array([f not in welded for f in cp.paths], bool)
        if not keep.all():
            others += [f"coupling of welded stacked joints {f} to {lp}" for f, lp, k in zip(cp.paths, cp.leader_paths, keep) if not k]
            _keep_rows(cp, keep)
    if left or others:
        names = sorted(left)
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        parts = [f"{len(names)} welded stacked joint(s) ({', '.join(names[:3])}{more}): their springs, damping, "
                 "armature, friction and drives"] if names else []
        warn("; ".join(parts + others) + ": left out (no free DOF to act on)")


def remap_elements(elements, merged: dict) -> None:
    """Move motors, NewtonJointAPI rows and joint couplings of stacked joints onto their
    merged joint's DOF (a reversed DOF flips what is measured along it)."""
    if elements is None or not merged:
        return
    cp = elements.couplings
    for e in range(len(cp)):
        sf = sl = 1.0
        if cp.paths[e] in merged and cp.dof[e] in ("angle", "distance"):
            _, cp.dof[e], sf = merged[cp.paths[e]]
        if cp.leader_paths[e] in merged and cp.leader_dof[e] in ("angle", "distance"):
            _, cp.leader_dof[e], sl = merged[cp.leader_paths[e]]
        cp.coef0[e] *= sf  # s_f q_f' = c0 + c1 s_l q_l'
        cp.coef1[e] *= sf * sl
    for table in (elements.motors, elements.joint_dofs):
        for e, path in enumerate(table.joint_paths):
            if path in merged and table.dof[e] in ("angle", "distance"):
                j, tok, s = merged[path]
                if s < 0 and table is elements.motors:
                    warn(f"{table.paths[e]}: its DOF is reversed in the merged joint of {path}; "
                         "the motor acts on the reversed coordinate")
                table.dof[e] = tok
                if s < 0 and table is elements.joint_dofs:  # the spring's reference is a coordinate
                    table.spring_reference[e] = -table.spring_reference[e]
