"""Articulation markup that Newton's USD importer needs, authored over our stages.

Newton (`ModelBuilder.add_usd`) builds every joint into a tree and refuses a stage whose joints
belong to no articulation. Its trees are directed: a joint's body0 is the parent and body1 the
child, each body has at most one parent joint, and a kinematic body can only be a root. Loops
are closed by joints marked `physics:excludeFromArticulation = true`, which it keeps as
maximal-coordinate constraints.

Our stages are general graphs (Chrono models name body0/body1 in any order), so this module
picks a spanning forest that respects Newton's direction rule, without changing any joint:
roots are the kinematic bodies, then bodies hanging from the world, then any body still
unreached; every joint that is not a tree edge is excluded. It then applies
`PhysicsArticulationRootAPI` on each root body. Both markups are bookkeeping for tree-based
importers; usdphys's reader and solver ignore them (every joint is a constraint either way).
"""
from __future__ import annotations

from collections import defaultdict

from pxr import Sdf, Usd, UsdPhysics

EXCLUDE_ATTR = "physics:excludeFromArticulation"


def _bodies_and_joints(stage: Usd.Stage):
    bodies, joints = [], []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)):
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            bodies.append(prim)
        if prim.IsA(UsdPhysics.Joint):
            joints.append(prim)
    return bodies, joints


def _target(joint: Usd.Prim, rel_name: str, body_paths: set) -> str | None:
    rel = joint.GetRelationship(rel_name)
    targets = rel.GetTargets() if rel else []
    path = str(targets[0]) if targets else None
    return path if path in body_paths else None  # anything that is not a body is the world


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
    edges = []
    for j in joints:
        if not _enabled(j):
            continue
        b0, b1 = _target(j, "physics:body0", body_paths), _target(j, "physics:body1", body_paths)
        edges.append(str(j.GetPath()))
        if b1 is not None and b1 != b0:  # world as child, or a body joined to itself: no tree edge
            children[b0].append((str(j.GetPath()), b1))
    parent_joint: dict[str, str | None] = {}
    tree_joints: set[str] = set()
    roots: list[str] = []

    def grow(root: str, via: str | None) -> None:
        parent_joint[root] = via
        if via is not None:
            tree_joints.add(via)
        stack = [root]
        while stack:
            body = stack.pop()
            for jpath, child in children.get(body, ()):
                if child in parent_joint or child in kinematic:
                    continue
                parent_joint[child] = jpath
                tree_joints.add(jpath)
                stack.append(child)

    for path in order:  # kinematic bodies first: Newton only lets them be roots
        if path in kinematic and path not in parent_joint:
            roots.append(path)
            grow(path, None)
    for jpath, child in children.get(None, ()):  # then bodies jointed to the world
        if child not in parent_joint and child not in kinematic:
            roots.append(child)
            grow(child, jpath)
    for path in order:  # then whatever is left, each unreached body starting a floating tree
        if path not in parent_joint:
            roots.append(path)
            grow(path, None)
    excluded = [j for j in edges if j not in tree_joints]
    return roots, excluded


def author(stage: Usd.Stage) -> tuple[list[str], list[str]]:
    """Apply PhysicsArticulationRootAPI on each root and exclude the loop-closing joints, in
    the stage's edit target. Markup authored before is cleared first, so this is idempotent."""
    roots, excluded = plan(stage)
    bodies, joints = _bodies_and_joints(stage)
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
