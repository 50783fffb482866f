"""Articulation markup that Newton's USD importer needs, authored over our stages.

Newton (`ModelBuilder.add_usd`) builds every joint into a tree and refuses a stage whose joints
belong to no articulation. Its trees are directed: a joint's body0 is the parent and body1 the
child, except that a joint with the world on either side always hangs its body from the world
(the importer swaps the sides); each body has at most one parent joint, and a kinematic body
can only be a root. usd-core groups every body reachable through joints from an
`PhysicsArticulationRootAPI` prim into that articulation (excluded joints included, static
bodies and kinematic non-roots not expanded), and Newton consumes each body once, so two roots
in one connected set make the second articulation fail ("both bodies unresolved"). Loops are
closed by joints marked `physics:excludeFromArticulation = true`, which it keeps as
maximal-coordinate constraints.

Our stages are general graphs (Chrono models name body0/body1 in any order), so this module
picks, for each connected set of bodies, ONE root and a spanning tree that respects Newton's
direction rule, without changing any joint: the root is a kinematic body if the set has one,
else the body whose directed tree reaches the most bodies (a body jointed to the world first on
a tie; a root reached through no joint floats); every joint that is not a tree edge is
excluded. Static bodies (`rigidBodyEnabled =
false`) are the world here, as they are to both importers. Both markups are bookkeeping for
tree-based importers; usdphys's reader and solver ignore them (every joint is a constraint).
"""
from __future__ import annotations

from collections import defaultdict

from pxr import Gf, Sdf, Usd, UsdPhysics

EXCLUDE_ATTR = "physics:excludeFromArticulation"


def _simulated(prim: Usd.Prim) -> bool:
    attr = UsdPhysics.RigidBodyAPI(prim).GetRigidBodyEnabledAttr()
    return attr.Get() is not False if attr else True


def _bodies_and_joints(stage: Usd.Stage, simulated_only: bool = True):
    bodies, joints = [], []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)):
        if prim.HasAPI(UsdPhysics.RigidBodyAPI) and (not simulated_only or _simulated(prim)):
            bodies.append(prim)
        if prim.IsA(UsdPhysics.Joint):
            joints.append(prim)
    return bodies, joints


def _target(joint: Usd.Prim, rel_name: str, body_paths: set) -> str | None:
    rel = joint.GetRelationship(rel_name)
    targets = rel.GetTargets() if rel else []
    path = str(targets[0]) if targets else None
    return path if path in body_paths else None  # anything that is not a simulated body is the world


def _kinematic(prim: Usd.Prim) -> bool:
    attr = UsdPhysics.RigidBodyAPI(prim).GetKinematicEnabledAttr()
    return bool(attr and attr.Get())


def _enabled(joint: Usd.Prim) -> bool:
    attr = UsdPhysics.Joint(joint).GetJointEnabledAttr()
    return attr.Get() is not False if attr else True


# A joint whose two sides may be swapped without changing what it does: its type is symmetric
# in them and nothing signed (limits, drives, initial state, per-DOF extras) or referring to
# it (motors name their joint) is authored.
_TURNABLE_TYPES = {"PhysicsRevoluteJoint", "PhysicsPrismaticJoint", "PhysicsSphericalJoint", "PhysicsFixedJoint",
                   "PhysicsDistanceJoint"}
_TURNABLE_PROPS = {"physics:body0", "physics:body1", "physics:localPos0", "physics:localPos1", "physics:localRot0",
                   "physics:localRot1", "physics:axis", "physics:jointEnabled", "physics:collisionEnabled",
                   "physics:breakForce", "physics:breakTorque", "physics:minDistance", "physics:maxDistance",
                   EXCLUDE_ATTR}


def _turnable(joint: Usd.Prim, referred: set) -> bool:
    if str(joint.GetTypeName()) not in _TURNABLE_TYPES or joint.GetAppliedSchemas():
        return False
    if str(joint.GetPath()) in referred:
        return False
    return all(p.GetName() in _TURNABLE_PROPS for p in joint.GetAuthoredProperties())


def _referred(stage: Usd.Stage) -> set:
    out = set()
    for prim in stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)):
        for rel in prim.GetRelationships():
            if rel.GetName() not in ("physics:body0", "physics:body1"):
                out.update(str(t) for t in rel.GetTargets())
    return out


def plan(stage: Usd.Stage, turn: bool = False) -> tuple[list[str], list[str], list[str]]:
    """(root prim paths, joint paths to exclude, joint paths to turn round) of a spanning
    forest Newton accepts.

    With ``turn``, a plain joint (`_turnable`) may be a tree edge from its body1 to its body0:
    turned round, it is the same constraint, and the set then hangs from the world instead of
    floating. Each tree's root markup goes on the root body's joint to the world where it has
    one (usd-core accepts a joint as a root only there), else on the root body. Newton reads
    the world side of an excluded joint in the frame of the prim carrying
    PhysicsArticulationRootAPI: a joint has no transform of its own, so that frame is the world,
    as the joint means it; a floating root body displaces it by the body's pose, which is why
    a tree hanging from the world is preferred."""
    bodies, joints = _bodies_and_joints(stage)
    body_paths = {str(b.GetPath()) for b in bodies}
    order = [str(b.GetPath()) for b in bodies]
    kinematic = {str(b.GetPath()) for b in bodies if _kinematic(b)}
    referred = _referred(stage) if turn else set()
    children = defaultdict(list)  # parent body path (None: world) -> [(joint path, child, turned)]
    neighbours = defaultdict(set)
    edges = []
    for j in joints:
        if not _enabled(j):
            continue
        jpath = str(j.GetPath())
        b0, b1 = _target(j, "physics:body0", body_paths), _target(j, "physics:body1", body_paths)
        edges.append(jpath)
        if b0 is not None and b1 is not None:
            if b0 != b1:  # a body joined to itself is no tree edge
                children[b0].append((jpath, b1, False))
                if turn and _turnable(j, referred):
                    children[b1].append((jpath, b0, True))
                neighbours[b0].add(b1)
                neighbours[b1].add(b0)
        elif b0 is not None or b1 is not None:  # the world on either side is the parent
            children[None].append((jpath, b0 if b1 is None else b1, False))

    def tree(root: str, via: str | None, left: set) -> tuple[dict, set]:
        reached, turned = {root: via}, set()
        frontier = [root]
        while frontier:  # breadth first: joints as authored before turned ones at each level
            nxt = []
            for body in frontier:
                for jpath, child, rev in sorted(children.get(body, ()), key=lambda e: e[2]):
                    if child in left and child not in reached and child not in kinematic:
                        reached[child] = jpath
                        if rev:
                            turned.add(jpath)
                        nxt.append(child)
            frontier = nxt
        return reached, turned

    world_joint: dict[str, str] = {}
    for jpath, child, _ in children.get(None, ()):
        world_joint.setdefault(child, jpath)
    parent_joint: dict[str, str | None] = {}
    turned_all: set[str] = set()
    roots: list[str] = []
    seen: set[str] = set()
    for start in order:
        if start in seen:
            continue
        component, stack = [start], [start]
        seen.add(start)
        while stack:
            for nxt in neighbours[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    component.append(nxt)
                    stack.append(nxt)
        component.sort(key=order.index)
        left = set(component)
        while left:  # one tree per set; what a tree cannot reach starts another
            kin = [b for b in component if b in left and b in kinematic]
            candidates = kin[:1] or [b for b in component if b in left]
            best, best_key = None, None
            for cand in candidates:
                reached, turned = tree(cand, None if cand in kinematic else world_joint.get(cand), left)
                # widest tree first, then one hanging from the world, then the fewest turned
                key = (len(reached), cand in world_joint or cand in kinematic, -len(turned))
                if best_key is None or key > best_key:
                    best, best_key = (cand, reached, turned), key
            root, reached, turned = best
            roots.append(reached[root] or root)
            parent_joint.update(reached)
            turned_all |= turned
            left -= set(reached)
    tree_joints = {v for v in parent_joint.values() if v is not None}
    excluded = [j for j in edges if j not in tree_joints]
    return roots, excluded, sorted(turned_all)


def _turn_round(joint: Usd.Prim) -> None:
    """Swap body0/body1 and their frames: the same constraint, written from the other side."""
    rels = [joint.GetRelationship(f"physics:body{i}") for i in (0, 1)]
    targets = [r.GetTargets() if r else [] for r in rels]
    j = UsdPhysics.Joint(joint)
    pos = [j.GetLocalPos0Attr().Get(), j.GetLocalPos1Attr().Get()]
    rot = [j.GetLocalRot0Attr().Get(), j.GetLocalRot1Attr().Get()]
    j.CreateBody0Rel().SetTargets(targets[1])
    j.CreateBody1Rel().SetTargets(targets[0])
    j.CreateLocalPos0Attr().Set(pos[1] if pos[1] is not None else Gf.Vec3f(0.0))
    j.CreateLocalPos1Attr().Set(pos[0] if pos[0] is not None else Gf.Vec3f(0.0))
    j.CreateLocalRot0Attr().Set(rot[1] if rot[1] is not None else Gf.Quatf(1.0))
    j.CreateLocalRot1Attr().Set(rot[0] if rot[0] is not None else Gf.Quatf(1.0))


def author(stage: Usd.Stage, turn: bool = False) -> tuple[list[str], list[str]]:
    """Apply PhysicsArticulationRootAPI on each root and exclude the loop-closing joints, in
    the stage's edit target. Markup authored before is cleared first, so this is idempotent.
    ``turn`` also turns round the plain joints the plan names (for stages this process
    wrote, as `convert` does; never over someone else's joints)."""
    roots, excluded, turned = plan(stage, turn)
    for path in turned:
        _turn_round(stage.GetPrimAtPath(path))
    bodies, joints = _bodies_and_joints(stage, simulated_only=False)
    for prim in bodies + joints:
        if prim.HasAPI(UsdPhysics.ArticulationRootAPI):
            prim.RemoveAPI(UsdPhysics.ArticulationRootAPI)
    excluded_set = set(excluded)
    for j in joints:
        attr = j.GetAttribute(EXCLUDE_ATTR)
        if str(j.GetPath()) in excluded_set:
            UsdPhysics.Joint(j).CreateExcludeFromArticulationAttr().Set(True)
        elif attr and attr.HasAuthoredValue():
            attr.Set(False)
    for path in roots:
        UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(path))
    return roots, excluded


def orphan_joints(stage: Usd.Stage) -> list[str]:
    """Joints Newton's importer would refuse as "not belonging to any articulation": enabled,
    not excluded, and not reachable from any PhysicsArticulationRootAPI prim (a root on a
    body or joint covers its connected bodies; on any other prim, everything under it)."""
    bodies, joints = _bodies_and_joints(stage)
    body_paths = {str(b.GetPath()) for b in bodies}
    live = [j for j in joints if _enabled(j) and not j.GetAttribute(EXCLUDE_ATTR).Get()]
    adjacency = defaultdict(set)
    ends = {}
    for j in live:
        b0, b1 = _target(j, "physics:body0", body_paths), _target(j, "physics:body1", body_paths)
        ends[str(j.GetPath())] = (b0, b1)
        if b0 and b1:
            adjacency[b0].add(b1)
            adjacency[b1].add(b0)
    covered: set[str] = set()
    prefixes: list[Sdf.Path] = []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)):
        if not prim.HasAPI(UsdPhysics.ArticulationRootAPI):
            continue
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            seeds = [str(prim.GetPath())]
        elif prim.IsA(UsdPhysics.Joint):
            seeds = [b for b in ends.get(str(prim.GetPath()), ()) if b]
        else:
            prefixes.append(prim.GetPath())
            continue
        stack = [s for s in seeds if s not in covered]
        covered.update(stack)
        while stack:
            for nxt in adjacency[stack.pop()]:
                if nxt not in covered:
                    covered.add(nxt)
                    stack.append(nxt)
    out = []
    for jpath, (b0, b1) in ends.items():
        if any(b in covered for b in (b0, b1) if b):
            continue
        if any(Sdf.Path(jpath).HasPrefix(p) for p in prefixes):
            continue
        out.append(jpath)
    return out


__all__ = ["EXCLUDE_ATTR", "author", "orphan_joints", "plan"]
