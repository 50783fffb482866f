"""Articulation markup that Newton's USD importer needs, authored over our stages.

Newton (`ModelBuilder.add_usd`) builds every joint into a tree and refuses a stage whose joints
belong to no articulation. Its trees are directed: a joint's body0 is the parent and body1 the
child, except that a joint with the world on either side always hangs its body from the world
(the importer swaps the sides); each body has at most one parent joint, and a kinematic body
can only be a root. usd-core groups every body reachable through joints from an
`PhysicsArticulationRootAPI` body into that articulation (excluded joints included, static
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

from pxr import Sdf, Usd, UsdPhysics

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


def plan(stage: Usd.Stage) -> tuple[list[str], list[str]]:
    """(root body paths, joint paths to exclude) of a spanning forest Newton accepts."""
    bodies, joints = _bodies_and_joints(stage)
    body_paths = {str(b.GetPath()) for b in bodies}
    order = [str(b.GetPath()) for b in bodies]
    kinematic = {str(b.GetPath()) for b in bodies if _kinematic(b)}
    children = defaultdict(list)  # parent body path (None: world) -> [(joint path, child)]
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
                children[b0].append((jpath, b1))
                neighbours[b0].add(b1)
                neighbours[b1].add(b0)
        elif b0 is not None or b1 is not None:  # the world on either side is the parent
            children[None].append((jpath, b0 if b1 is None else b1))

    def tree(root: str, via: str | None) -> dict[str, str | None]:
        reached = {root: via}
        stack = [root]
        while stack:
            for jpath, child in children.get(stack.pop(), ()):
                if child not in reached and child not in kinematic:
                    reached[child] = jpath
                    stack.append(child)
        return reached

    world_joint: dict[str, str] = {}
    for jpath, child in children.get(None, ()):
        world_joint.setdefault(child, jpath)
    parent_joint: dict[str, str | None] = {}
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
            # the widest tree wins; on a tie a body hanging from the world beats a floating one
            candidates = kin[:1] or sorted((b for b in component if b in left), key=lambda b: b not in world_joint)
            best = None
            for cand in candidates:
                t = tree(cand, None if cand in kinematic else world_joint.get(cand))
                t = {b: v for b, v in t.items() if b in left}
                if best is None or len(t) > len(best[1]):
                    best = (cand, t)
            roots.append(best[0])
            parent_joint.update(best[1])
            left -= set(best[1])
    tree_joints = {v for v in parent_joint.values() if v is not None}
    excluded = [j for j in edges if j not in tree_joints]
    return roots, excluded


def author(stage: Usd.Stage) -> tuple[list[str], list[str]]:
    """Apply PhysicsArticulationRootAPI on each root and exclude the loop-closing joints, in
    the stage's edit target. Markup authored before is cleared first, so this is idempotent."""
    roots, excluded = plan(stage)
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
