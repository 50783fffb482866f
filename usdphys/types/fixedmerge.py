"""Bodies welded by fixed joints, simulated as one rigid body.

A fixed joint between two dynamic bodies holds them as one rigid body; simulating them as one
(the composite mass, centre of mass and inertia) is the same motion, with six rows fewer per
joint, and it keeps a very light body (a 0.3 g "anchor" that MJCF models hang a joint on, a
11 g hip block fixed to a 6 kg pelvis) out of the row system, where its tiny inertia answers
any impulse error with a large turn and the step's Newton iteration stalls. MuJoCo does the same:
a body without joints moves with its parent.

merge_fixed_joints(model) -> (merged model, FixedMerge) or (model, None) when nothing merges.
FixedMerge.expand turns the merged model's COM-frame poses back into every original body's.

What merges: a joint of type "fixed" (all six DOFs locked, no limits or drives to carry)
between two dynamic bodies, that no element names (bushings, motors, NewtonJointAPI rows,
couplings) and whose bodies no element names except through joints. A group whose joint frames
disagree with each other (a loop of welds that cannot close) stays as it is. The caller keeps the
original model for everything it reports: body paths, poses written back, messages.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np

from usdphys.errors import warn
from usdphys.math3d import matrix_to_quat, quat_conj, quat_mul, quat_rotate, quat_to_matrix
from usdphys.types.model import PER_JOINT_ARRAYS

# joint frames of a group of welds must agree this well (m or rad) for the group to merge
CONSISTENT_TOL = 1.0e-6
# an input pose whose welded bodies sit further apart than this (m or rad) from what the joint
# frames say is named, as the assembly names joints it moves bodies onto
POSE_WARN = 1.0e-6



@dataclass
class FixedMerge:
    """How the original bodies sit in the merged ones: rep[b] is body b's merged index, and
    (com_pos[b], com_rot[b]) its COM frame in that merged body's COM frame (xyzw)."""

    rep: np.ndarray  # (B,) int
    com_pos: np.ndarray  # (B, 3)
    com_rot: np.ndarray  # (B, 4)
    merged_joints: list  # paths of the fixed joints folded away

    def expand(self, pos: np.ndarray, rot: np.ndarray):
        """(..., B_merged, 3/4) COM-frame poses -> (..., B, 3/4) of every original body."""
        p = np.take(pos, self.rep, axis=-2)
        q = np.take(rot, self.rep, axis=-2)
        return p + quat_rotate(q, self.com_pos), quat_mul(q, self.com_rot)


def _frame_mul(a, b):
    """(p, q) of frame b given in frame a, composed: a * b."""
    return a[0] + quat_rotate(a[1], b[0]), quat_mul(a[1], b[1])


def _frame_inv(a):
    qi = quat_conj(a[1])
    return -quat_rotate(qi, a[0]), qi


def _element_tables(el):
    """(name, table) of every element table (usdphys.types.elements.Elements); none for None."""
    if el is None:
        return
    for f in dataclasses.fields(el):
        table = getattr(el, f.name)
        if dataclasses.is_dataclass(table):
            yield f.name, table


def _weld_candidates(model) -> list[int]:
    named_joints, named_bodies = set(), set()
    for name, table in _element_tables(model.elements):
        for attr in ("joint_paths", "leader_paths"):
            named_joints.update(getattr(table, attr, None) or [])
        if name == "couplings":  # a coupling's own paths are its follower joints
            named_joints.update(table.paths)
        for attr in ("body0", "body1"):
            b = getattr(table, attr, None)
            if b is not None:
                named_bodies.update(int(x) for x in np.asarray(b).ravel() if int(x) >= 0)
    kin = np.asarray(model.body_kinematic, bool)
    out = []
    for j in range(model.joint_count):
        b0, b1 = int(model.joint_body0[j]), int(model.joint_body1[j])
        if model.joint_type[j] != "fixed" or b0 < 0 or b1 < 0 or b0 == b1 or kin[b0] or kin[b1]:
            continue
        if not np.all(model.joint_locked[j]) or model.joint_is_distance[j] or int(model.joint_composite[j]) != 0:
            continue
        if model.joint_paths[j] in named_joints or b0 in named_bodies or b1 in named_bodies:
            continue
        out.append(j)
    return out


def merge_fixed_joints(model):
    """(merged model, FixedMerge), or (model, None) when no fixed joint merges. The model is not
    changed. Per-world parameters and their provenance index bodies and joints: a model that
    has any is returned as it is."""
    if model.body_count == 0 or model.joint_count == 0 or model.world_parameters:
        return model, None
    cand = _weld_candidates(model)
    if not cand:
        return model, None
    B = model.body_count
    adj: dict[int, list] = {}
    for j in cand:
        b0, b1 = int(model.joint_body0[j]), int(model.joint_body1[j])
        f01 = _frame_mul((model.joint_pos0[j], model.joint_rot0[j]),
                         _frame_inv((model.joint_pos1[j], model.joint_rot1[j])))  # body1's frame in body0's
        adj.setdefault(b0, []).append((b1, f01, j))
        adj.setdefault(b1, []).append((b0, _frame_inv(f01), j))
    rep = np.arange(B)
    rel_p = np.zeros((B, 3))
    rel_q = np.tile([0.0, 0.0, 0.0, 1.0], (B, 1))
    seen = np.zeros(B, bool)
    merged_joints: list[int] = []
    moved = []
    for start in sorted(adj):
        if seen[start]:
            continue
        # the group, by breadth-first search; its heaviest body keeps its frame
        group, frontier = [start], [start]
        seen[start] = True
        while frontier:
            nxt = []
            for a in frontier:
                for b, _, _ in adj[a]:
                    if not seen[b]:
                        seen[b] = True
                        group.append(b)
                        nxt.append(b)
            frontier = nxt
        root = max(group, key=lambda b: (float(model.body_mass[b]), -b))
        frames = {root: (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))}
        order, used, ok = [root], set(), True
        for a in order:
            for b, f, j in adj[a]:
                fb = _frame_mul(frames[a], f)
                if b not in frames:
                    frames[b] = fb
                    order.append(b)
                    used.add(j)
                elif j not in used:  # a loop of welds: it must close
                    dq = quat_mul(quat_conj(frames[b][1]), fb[1])
                    ang = 2.0 * np.arctan2(np.linalg.norm(dq[:3]), abs(dq[3]))
                    if np.linalg.norm(frames[b][0] - fb[0]) > CONSISTENT_TOL or ang > CONSISTENT_TOL:
                        ok = False
                    used.add(j)
        if not ok:
            continue
        merged_joints.extend(sorted(used))
        for b in group:
            rep[b] = root
            rel_p[b], rel_q[b] = frames[b]
            if b != root:  # the input pose against the joint frames, world 0
                x, q = _frame_mul((model.body_pos[0, root], model.body_rot[0, root]), frames[b])
                dq = quat_mul(quat_conj(np.asarray(model.body_rot[0, b], float)), q)
                off = max(np.linalg.norm(x - model.body_pos[0, b]), 2.0 * np.arctan2(np.linalg.norm(dq[:3]), abs(dq[3])))
                if off > POSE_WARN:
                    moved.append((b, off))
    if not merged_joints:
        return model, None
    if moved:
        b, off = max(moved, key=lambda t: t[1])
        warn(f"{len(moved)} body(ies) welded by fixed joints do not sit where the joint frames put them in the input "
             f"(up to {off:.3g} m or rad, {model.body_paths[b]}); they are moved onto the joints before t = 0")
    return _build(model, rep, rel_p, rel_q, merged_joints)


def _composite(model, members, root, rel_p, rel_q):
    """Mass, COM (root prim frame), principal moments and axes (xyzw) of the welded group."""
    masses = np.array([float(model.body_mass[b]) for b in members])
    coms = np.array([rel_p[b] + quat_rotate(rel_q[b], model.body_com_pos[b]) for b in members])
    M = float(masses.sum())
    C = (masses[:, None] * coms).sum(0) / M if M > 0 else coms[0]
    inertia = np.zeros((3, 3))
    for k, b in enumerate(members):
        R = quat_to_matrix(quat_mul(rel_q[b], model.body_com_rot[b]))
        inertia += R @ np.diag(model.body_inertia[b]) @ R.T
        d = coms[k] - C
        inertia += masses[k] * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return M, C, moments, matrix_to_quat(axes)


def _build(model, rep, rel_p, rel_q, merged_joints):
    B = model.body_count
    keep_bodies = [b for b in range(B) if rep[b] == b]
    new_index = {b: i for i, b in enumerate(keep_bodies)}
    out = copy.deepcopy(model)
    com_pos = np.zeros((B, 3))
    com_rot = np.tile([0.0, 0.0, 0.0, 1.0], (B, 1))
    mass, inert = model.body_mass.astype(float).copy(), np.asarray(model.body_inertia, float).copy()
    cpos, crot = np.asarray(model.body_com_pos, float).copy(), np.asarray(model.body_com_rot, float).copy()
    lin = np.asarray(model.body_lin_vel, float).copy()
    ang = np.asarray(model.body_ang_vel, float).copy()
    for root in keep_bodies:
        members = [b for b in range(B) if rep[b] == root]
        if len(members) == 1:
            continue
        M, C, moments, axes = _composite(model, members, root, rel_p, rel_q)
        # the group's velocity keeps the members' momentum (the welds are perfectly inelastic,
        # as the joints would make them in the first step when the input's velocities disagree)
        for w in range(model.world_count):
            q_root = np.asarray(model.body_rot[w, root], float)
            Cw = model.body_pos[w, root] + quat_rotate(q_root, C)
            R = quat_to_matrix(quat_mul(q_root, axes))
            I_world = R @ np.diag(moments) @ R.T
            P, L = np.zeros(3), np.zeros(3)
            for b in members:
                qb = np.asarray(model.body_rot[w, b], float)
                cb = model.body_pos[w, b] + quat_rotate(qb, model.body_com_pos[b])
                Rb = quat_to_matrix(quat_mul(qb, model.body_com_rot[b]))
                vb, wb = np.asarray(model.body_lin_vel[w, b], float), np.asarray(model.body_ang_vel[w, b], float)
                P += model.body_mass[b] * vb
                L += Rb @ np.diag(model.body_inertia[b]) @ Rb.T @ wb + model.body_mass[b] * np.cross(cb - Cw, vb)
            lin[w, root] = P / M if M > 0 else lin[w, root]
            ang[w, root] = np.linalg.solve(I_world, L) if np.all(moments > 0) else ang[w, root]
        mass[root], inert[root], cpos[root], crot[root] = M, moments, C, axes
    # every original body's COM frame in its merged body's COM frame
    for b in range(B):
        r = rep[b]
        root_com = (cpos[r], crot[r])
        b_com = _frame_mul((rel_p[b], rel_q[b]), (model.body_com_pos[b], model.body_com_rot[b]))
        com_pos[b], com_rot[b] = _frame_mul(_frame_inv(root_com), b_com)
    kb = np.asarray(keep_bodies)
    out.body_paths = [model.body_paths[b] for b in keep_bodies]
    out.body_mass, out.body_inertia = mass[kb], inert[kb]
    out.body_com_pos, out.body_com_rot = cpos[kb], crot[kb]
    out.body_kinematic = np.asarray(model.body_kinematic)[kb]
    out.body_pos = np.asarray(model.body_pos)[:, kb]
    out.body_rot = np.asarray(model.body_rot)[:, kb]
    out.body_lin_vel = lin[:, kb]
    out.body_ang_vel = ang[:, kb]
    # joints: the welds go; the others name merged bodies, their frames in the merged body's
    drop = set(merged_joints)
    keep_joints = [j for j in range(model.joint_count) if j not in drop]
    for name in PER_JOINT_ARRAYS:
        setattr(out, name, np.asarray(getattr(model, name))[keep_joints].copy())
    out.joint_paths = [model.joint_paths[j] for j in keep_joints]
    out.joint_type = [model.joint_type[j] for j in keep_joints]
    for k in range(len(keep_joints)):
        for side in (0, 1):
            bname, pname, rname = f"joint_body{side}", f"joint_pos{side}", f"joint_rot{side}"
            b = int(getattr(out, bname)[k])
            if b < 0:
                continue
            p, q = _frame_mul((rel_p[b], rel_q[b]), (getattr(out, pname)[k], getattr(out, rname)[k]))
            getattr(out, pname)[k], getattr(out, rname)[k] = p, q
            getattr(out, bname)[k] = new_index[int(rep[b])]
    # colliders ride on their merged body
    if out.shapes is not None and len(out.shapes):
        t = out.shapes
        body = np.asarray(t.body, int)
        for s in range(len(body)):
            b = int(body[s])
            if b < 0:
                continue
            t.local_pos[s], t.local_rot[s] = _frame_mul((rel_p[b], rel_q[b]), (t.local_pos[s], t.local_rot[s]))
            body[s] = new_index[int(rep[b])]
        t.body = body.astype(np.asarray(t.body).dtype)
    if out.contact_exclude is not None:
        pairs = {(min(new_index[rep[a]], new_index[rep[b]]), max(new_index[rep[a]], new_index[rep[b]]))
                 for a, b in out.contact_exclude if a >= 0 and b >= 0 and rep[a] != rep[b]}
        out.contact_exclude = sorted(pairs)
    # element joint indices (NewtonJointAPI rows, motors, bushings, couplings) follow the renumbering
    renumber = {old: i for i, old in enumerate(keep_joints)}
    for _, table in _element_tables(out.elements):
        for name in ("joint", "leader"):
            idx = getattr(table, name, None)
            if isinstance(idx, np.ndarray) and idx.size:
                setattr(table, name, np.array([renumber.get(int(j), -1) if j >= 0 else int(j) for j in idx], idx.dtype))
    out.param_sources = {}
    mapping = FixedMerge(rep=np.array([new_index[int(rep[b])] for b in range(B)]), com_pos=com_pos,
                         com_rot=com_rot, merged_joints=[model.joint_paths[j] for j in sorted(drop)])
    return out, mapping


__all__ = ["FixedMerge", "merge_fixed_joints"]
