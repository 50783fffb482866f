"""Validate our schemas on a stage (`usdphys check`), plus usd-core's own validators.

One finding per problem: severity, prim path, rule id, message. Errors make the command
exit 1. Rule ids are stable strings so scripts and tests can match them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pxr import Usd, UsdPhysics, UsdValidation

from usdphys.usd.plugin import ensure_registered
from usdphys.usd.tokens import Tokens

NEWTON_API = Tokens.NewtonJointAPI
NEWTON_DOFS = Tokens.newtonDofs
NEWTON_ARRAYS = (
    Tokens.newtonArmature,
    Tokens.newtonStaticFrictionEffort,
    Tokens.newtonDynamicFrictionEffort,
    Tokens.newtonViscousDamping,
)
# newton-usd-schemas' scalar joint attributes: not in our schema, read for compatibility
NEWTON_FRICTION = "newton:friction"
NEWTON_DAMPING = "newton:damping"
NEWTON_VELOCITY_LIMIT = "newton:velocityLimit"
NEWTON_LIMIT_STIFFNESS = "newton:limitStiffness"
NEWTON_LIMIT_DAMPING = "newton:limitDamping"
# the scalar form's attributes that have no per-DOF namesake in our schema
NEWTON_SCALAR_ONLY = (NEWTON_FRICTION, NEWTON_DAMPING, NEWTON_VELOCITY_LIMIT, NEWTON_LIMIT_STIFFNESS, NEWTON_LIMIT_DAMPING)
# newton-usd-schemas' NewtonMimicAPI: follower = coef0 + coef1 * leader
NEWTON_MIMIC_API = "NewtonMimicAPI"
NEWTON_MIMIC_JOINT = "newton:mimicJoint"
NEWTON_MIMIC_ENABLED = "newton:mimicEnabled"
NEWTON_MIMIC_COEF0 = "newton:mimicCoef0"
NEWTON_MIMIC_COEF1 = "newton:mimicCoef1"
LIMIT_DOFS = (Tokens.transX, Tokens.transY, Tokens.transZ, Tokens.rotX, Tokens.rotY, Tokens.rotZ)
# Attribute namespaces and type-name prefix of our schemas: the rules below apply to these only.
_OUR_NAMESPACES = ("mbd:", "newton:")
_OUR_API_PREFIX = "Mbd"


def _type_name(schema) -> str:
    return Usd.SchemaRegistry.GetSchemaTypeName(schema)


# Which DOF tokens each joint type accepts (NewtonJointAPI proposal; MbdMotor uses the same).
_DOFS_BY_JOINT_TYPE = {
    _type_name(UsdPhysics.RevoluteJoint): (Tokens.angle,),
    _type_name(UsdPhysics.PrismaticJoint): (Tokens.distance,),
    _type_name(UsdPhysics.SphericalJoint): (Tokens.rotX, Tokens.rotY, Tokens.rotZ),
    _type_name(UsdPhysics.FixedJoint): (),
    _type_name(UsdPhysics.DistanceJoint): (),
}
# Relationships of our schemas: name -> (what the target must be, predicate on the prim)
_BODY_RELS = (Tokens.mbdBody0, Tokens.mbdBody1)


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    path: str  # prim or property path ("/" for the stage)
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message} [{self.rule}]"


def valid_dofs_for_joint(prim: Usd.Prim) -> tuple[str, ...]:
    """DOF tokens allowed on a joint prim (generic joints: the LimitAPI names)."""
    return _DOFS_BY_JOINT_TYPE.get(prim.GetTypeName(), LIMIT_DOFS)


def has_api(prim: Usd.Prim, name: str) -> bool:
    """The API schema `name` is applied, registered in this process or not: the authored
    apiSchemas list counts too."""
    if name in prim.GetAppliedSchemas():
        return True
    listop = prim.GetMetadata("apiSchemas")
    return bool(listop) and name in listop.ApplyOperations([])


def has_newton_joint_api(prim: Usd.Prim) -> bool:
    """NewtonJointAPI is applied, whichever definition (ours, newton-usd-schemas', none) this
    process registered."""
    return has_api(prim, NEWTON_API)


def newton_joint_form(prim: Usd.Prim) -> str | None:
    """The NewtonJointAPI form a joint's authored data uses: "per-DOF" (newton:dofs and
    float[] values), "scalar" (float values, newton:friction / newton:damping), or None."""
    def authored(name):
        attr = prim.GetAttribute(name)
        return attr.Get() if attr and attr.HasAuthoredValue() else None
    if any(authored(n) is not None for n in NEWTON_SCALAR_ONLY):
        return "scalar"
    values = [authored(n) for n in NEWTON_ARRAYS]
    if any(isinstance(v, (int, float)) for v in values):
        return "scalar"
    if authored(NEWTON_DOFS) is not None or any(v is not None for v in values):
        return "per-DOF"
    return None


def _is_body(prim: Usd.Prim) -> bool:
    return prim.HasAPI(UsdPhysics.RigidBodyAPI)


def _is_joint(prim: Usd.Prim) -> bool:
    return prim.IsA(UsdPhysics.Joint)


def _is_connector(prim: Usd.Prim) -> bool:
    return prim.GetTypeName() == Tokens.MbdMateConnector


_REL_TARGET_KINDS = {
    Tokens.mbdBody0: ("a rigid body (RigidBodyAPI)", _is_body),
    Tokens.mbdBody1: ("a rigid body (RigidBodyAPI)", _is_body),
    Tokens.mbdJoint: ("a PhysicsJoint", _is_joint),
    Tokens.mbdConnector0: ("an MbdMateConnector", _is_connector),
    Tokens.mbdConnector1: ("an MbdMateConnector", _is_connector),
}


class _Checker:
    def __init__(self, stage: Usd.Stage):
        self.stage = stage
        self.findings: list[Finding] = []

    def error(self, path, rule: str, message: str) -> None:
        self.findings.append(Finding("error", str(path), rule, message))

    def warning(self, path, rule: str, message: str) -> None:
        self.findings.append(Finding("warning", str(path), rule, message))

    # -- NewtonJointAPI ------------------------------------------------------------------
    def newton_joint(self, prim: Usd.Prim) -> None:
        path = prim.GetPath()
        if not _is_joint(prim):
            self.error(path, "newton-apply-target", f"{NEWTON_API} is applied to a {prim.GetTypeName() or 'typeless'} prim; it applies only to PhysicsJoint prims")
            return
        # The newton-usd-schemas form authors plain floats (and friction/damping names).
        def authored(name):
            attr = prim.GetAttribute(name)
            return attr.Get() if attr and attr.HasAuthoredValue() else None
        scalar = [a for a in NEWTON_SCALAR_ONLY if authored(a) is not None]
        scalar += [a for a in NEWTON_ARRAYS if isinstance(authored(a), (int, float))]
        if scalar:
            self.warning(path, "newton-scalar-form", f"scalar NewtonJointAPI attributes {', '.join(scalar)} (newton-usd-schemas form): Newton reads them; usdphys reads them as broadcast to every DOF; the per-DOF form is newton:dofs + arrays")
        elif newton_joint_form(prim) == "per-DOF":
            self.warning(path, "newton-per-dof-form", "per-DOF NewtonJointAPI data (newton:dofs + float[] arrays): usdphys reads it; Newton's importer (the scalar NewtonJointAPI of newton-usd-schemas) does not, so these values are lost in Newton")
        dofs_attr = prim.GetAttribute(NEWTON_DOFS)
        dofs = list(dofs_attr.Get() or []) if dofs_attr else []
        allowed = valid_dofs_for_joint(prim)
        seen = set()
        for token in dofs:
            if token in seen:
                self.error(path, "newton-duplicate-dof", f"{NEWTON_DOFS} names '{token}' more than once")
            seen.add(token)
            if token not in allowed:
                expected = ", ".join(allowed) if allowed else "none (this joint type has no DOF)"
                self.error(path, "newton-invalid-dof", f"{NEWTON_DOFS} token '{token}' is not a DOF of a {prim.GetTypeName()}; expected one of: {expected}")
        values = {}
        for name in NEWTON_ARRAYS:
            value = authored(name)
            if value is None or isinstance(value, (int, float)):  # unauthored, or scalar form
                continue
            vals = list(value)
            if not vals:
                continue
            values[name] = vals
            if len(vals) != len(dofs):
                self.error(path, "newton-array-length", f"{name} has {len(vals)} values but {NEWTON_DOFS} has {len(dofs)}")
            for i, v in enumerate(vals):
                if not math.isfinite(v) or v < 0:
                    dof = dofs[i] if i < len(dofs) else f"#{i}"
                    self.error(path, "newton-negative-value", f"{name}[{i}] ({dof}) = {v:.6g}: must be a finite value >= 0")
        static = values.get(Tokens.newtonStaticFrictionEffort)
        dynamic = values.get(Tokens.newtonDynamicFrictionEffort)
        if static and dynamic:  # compared only where both are authored (see docs/schemas.md)
            for i, (s, d) in enumerate(zip(static, dynamic)):
                if d > s:
                    dof = dofs[i] if i < len(dofs) else f"#{i}"
                    self.error(path, "newton-friction-order", f"newton:dynamicFrictionEffort[{i}] ({dof}) = {d:.6g} exceeds newton:staticFrictionEffort[{i}] = {s:.6g}; dynamic friction must be <= static")

    # -- generic rules over our schemas ----------------------------------------------------
    def allowed_tokens(self, prim: Usd.Prim) -> None:
        definition = prim.GetPrimDefinition()
        for attr in prim.GetAuthoredAttributes():
            name = attr.GetName()
            if not name.startswith(_OUR_NAMESPACES):
                continue
            prop = definition.GetPropertyDefinition(name)
            allowed = prop.GetMetadata("allowedTokens") if prop else None
            if not allowed:
                continue
            value = attr.Get()
            tokens = [value] if isinstance(value, str) else list(value or [])
            for tok in tokens:
                if tok not in allowed:
                    self.error(attr.GetPath(), "unknown-token", f"'{tok}' is not an allowed value of {name}; expected one of: {', '.join(allowed)}")

    def relationships(self, prim: Usd.Prim) -> None:
        for rel in prim.GetRelationships():
            name = rel.GetName()
            if name not in _REL_TARGET_KINDS:
                continue
            what, predicate = _REL_TARGET_KINDS[name]
            targets = rel.GetTargets()
            if len(targets) > 1:
                self.error(rel.GetPath(), "relationship-arity", f"{name} has {len(targets)} targets; expected at most one")
            for target in targets:
                tprim = self.stage.GetPrimAtPath(target)
                if not tprim:
                    self.error(rel.GetPath(), "relationship-missing-target", f"{name} points at {target}, which does not exist; expected {what}")
                elif not predicate(tprim):
                    self.error(rel.GetPath(), "relationship-wrong-target", f"{name} points at {target} ({tprim.GetTypeName() or 'typeless'}), which is not {what}")

    def element(self, prim: Usd.Prim) -> None:
        type_name = prim.GetTypeName()
        path = prim.GetPath()
        if type_name in (Tokens.MbdSpringDamper, Tokens.MbdAxialSpringDamper, Tokens.MbdRotationalSpringDamper, Tokens.MbdForce, Tokens.MbdTorque):
            bodies = [t for r in _BODY_RELS if prim.GetRelationship(r) for t in prim.GetRelationship(r).GetTargets()]
            if type_name in (Tokens.MbdForce, Tokens.MbdTorque):
                rel = prim.GetRelationship(Tokens.mbdBody1)
                if not rel or not rel.GetTargets():
                    self.error(path, "element-missing-body", f"{type_name} needs mbd:body1 (the body it acts on)")
            elif not bodies:
                self.error(path, "element-missing-body", f"{type_name} connects no body: set mbd:body0 and/or mbd:body1")
        if type_name == Tokens.MbdSpringDamper:
            self._spring_damper(prim)
        if type_name == Tokens.MbdAxialSpringDamper:
            axis = prim.GetAttribute(Tokens.mbdAxis).Get()
            if axis is not None and axis.GetLength() == 0:
                self.error(path, "axis-zero", "mbd:axis is the zero vector")
        if type_name == Tokens.MbdMotor:
            self._motor(prim)
        if prim.HasAPI(Tokens.MbdTimeFunctionAPI):
            self._time_function(prim)
        if type_name == Tokens.MbdMateConnector:
            main = prim.GetAttribute(Tokens.mbdMainAxis).Get()
            normal = prim.GetAttribute(Tokens.mbdNormal).Get()
            if main is not None and normal is not None:
                if main.GetLength() == 0 or normal.GetLength() == 0:
                    self.error(path, "connector-axis", "mbd:mainAxis and mbd:normal must be non-zero")
                elif (main.GetNormalized() ^ normal.GetNormalized()).GetLength() < 1e-9:
                    self.error(path, "connector-axis", f"mbd:normal {tuple(normal)} is parallel to mbd:mainAxis {tuple(main)}; it must not be")

    def _spring_damper(self, prim: Usd.Prim) -> None:
        path = prim.GetPath()
        for name in (Tokens.mbdSpringForceCurve, Tokens.mbdDampingForceCurve):
            pts = list(prim.GetAttribute(name).Get() or [])
            if any(b[0] <= a[0] for a, b in zip(pts, pts[1:])):
                self.error(path, "curve-order", f"{name} abscissae must be strictly ascending")
        defo = list(prim.GetAttribute(Tokens.mbdForceMapDeformation).Get() or [])
        vel = list(prim.GetAttribute(Tokens.mbdForceMapVelocity).Get() or [])
        vals = list(prim.GetAttribute(Tokens.mbdForceMapValues).Get() or [])
        if defo or vel or vals:
            if len(vals) != len(defo) * len(vel):
                self.error(path, "map-shape", f"mbd:forceMapValues has {len(vals)} values; expected len(forceMapVelocity) x len(forceMapDeformation) = {len(vel)} x {len(defo)}")
            for name, arr in ((Tokens.mbdForceMapDeformation, defo), (Tokens.mbdForceMapVelocity, vel)):
                if any(b <= a for a, b in zip(arr, arr[1:])):
                    self.error(path, "curve-order", f"{name} must be strictly ascending")
        lo = prim.GetAttribute(Tokens.mbdMinLength)
        hi = prim.GetAttribute(Tokens.mbdMaxLength)
        if lo.HasAuthoredValue() and hi.HasAuthoredValue() and lo.Get() > hi.Get():
            self.error(path, "length-stops", f"mbd:minLength {lo.Get()} exceeds mbd:maxLength {hi.Get()}")

    def _motor(self, prim: Usd.Prim) -> None:
        path = prim.GetPath()
        rel = prim.GetRelationship(Tokens.mbdJoint)
        targets = rel.GetTargets() if rel else []
        if not targets:
            self.error(path, "motor-joint", "MbdMotor needs mbd:joint (the joint whose DOF it drives)")
            return
        joint = self.stage.GetPrimAtPath(targets[0])
        if joint and _is_joint(joint):
            dof = prim.GetAttribute(Tokens.mbdDof).Get()
            allowed = valid_dofs_for_joint(joint)
            if dof not in allowed:
                self.error(path, "motor-dof", f"mbd:dof '{dof}' is not a DOF of {joint.GetPath()} ({joint.GetTypeName()}); expected one of: {', '.join(allowed) or 'none'}")

    def _time_function(self, prim: Usd.Prim) -> None:
        path = prim.GetPath()
        kind = prim.GetAttribute(Tokens.mbdFunctionType).Get()
        if kind == "data":
            pts = list(prim.GetAttribute(Tokens.mbdFunctionData).Get() or [])
            if not pts:
                self.error(path, "function-data", "mbd:function:type is 'data' but mbd:function:data is empty")
            if any(b[0] <= a[0] for a, b in zip(pts, pts[1:])):
                self.error(path, "curve-order", "mbd:function:data times must be strictly ascending")
        if kind == "polynomial" and not list(prim.GetAttribute(Tokens.mbdFunctionCoefficients).Get() or []):
            self.error(path, "function-data", "mbd:function:type is 'polynomial' but mbd:function:coefficients is empty")
        if prim.GetAttribute(Tokens.mbdFunctionRepeat).Get():
            width = prim.GetAttribute(Tokens.mbdFunctionRepeatWidth).Get()
            if not width or width <= 0:
                self.error(path, "function-repeat", f"mbd:function:repeatWidth = {width}: must be > 0")

    def api_targets(self, prim: Usd.Prim) -> None:
        """An applied API schema whose apiSchemaCanOnlyApplyTo excludes this prim."""
        for api in prim.GetAppliedSchemas():
            if api == NEWTON_API or not api.startswith(_OUR_API_PREFIX):
                continue
            ok = prim.CanApplyAPI(api)
            if isinstance(ok, tuple):
                ok, why = ok
            else:
                why = ""
            if not ok:
                self.error(prim.GetPath(), "api-apply-target", f"{api} cannot be applied here: {why}")

    def run(self) -> list[Finding]:
        for prim in self.stage.Traverse(Usd.TraverseInstanceProxies(Usd.PrimAllPrimsPredicate)):
            if has_newton_joint_api(prim):
                self.newton_joint(prim)
            self.api_targets(prim)
            self.allowed_tokens(prim)
            self.relationships(prim)
            self.element(prim)
        self.articulations()
        return self.findings

    def articulations(self) -> None:
        """Newton's importer refuses joints outside every articulation; say so here."""
        from usdphys.usd.articulation import orphan_joints

        orphans = orphan_joints(self.stage)
        if orphans:
            shown = ", ".join(orphans[:5]) + (f" and {len(orphans) - 5} more" if len(orphans) > 5 else "")
            self.warning("/", "newton-orphan-joints", f"{len(orphans)} joint(s) belong to no articulation ({shown}): Newton's importer refuses this stage; add PhysicsArticulationRootAPI on each tree's root body and physics:excludeFromArticulation = true on loop-closing joints (`usdphys convert` and `assemble` author both)")


def _scalar_newton_armature(err) -> bool:
    """usd-core's type-mismatch error for a scalar `float newton:armature`: our NewtonJointAPI
    declares the per-DOF float[], newton-usd-schemas (what mujoco-usd-converter writes) a float.
    usdphys reads both, so it is not an error; our own rule says which form the stage uses."""
    if "AttributeTypeMismatch" not in err.GetIdentifier():
        return False
    sites = err.GetSites()
    for site in sites:
        spec = site.GetPropertySpec() if site.IsValidSpecInLayer() else None  # the authored spec
        if not spec or spec.name != Tokens.newtonArmature or str(spec.typeName) != "float":
            return False
    return bool(sites)


def _usd_core_findings(stage: Usd.Stage) -> list[Finding]:
    """usd-core's own validators (UsdValidation), usdz-only ones left out."""
    validators = [
        v for v in UsdValidation.ValidationRegistry().GetOrLoadAllValidators()
        if "UsdzValidators" not in v.GetMetadata().GetKeywords()
    ]
    findings = []
    for err in UsdValidation.ValidationContext(validators).Validate(stage):
        if _scalar_newton_armature(err):
            continue  # newton-usd-schemas' scalar form, which the newton-scalar-form rule reports
        kind = err.GetType()
        if kind == UsdValidation.ValidationErrorType.Error:
            severity = "error"
        elif kind == UsdValidation.ValidationErrorType.Warn:
            severity = "warning"
        else:
            continue
        paths = []
        for site in err.GetSites():
            if site.IsPrim():
                paths.append(str(site.GetPrim().GetPath()))
            elif site.IsProperty():
                paths.append(str(site.GetProperty().GetPath()))
        findings.append(Finding(severity, ", ".join(paths) or "/", f"usd:{err.GetIdentifier()}", err.GetMessage()))
    return findings


def check_stage(stage: Usd.Stage, usd_core: bool = True) -> list[Finding]:
    """All findings for a stage: our rules, then usd-core's validators."""
    ensure_registered()
    from usdphys.usd.stage import composition_problems

    # Files the stage names but that are missing: what USD left out is not checked at all.
    findings = [Finding("error", "/", "missing-file", problem) for problem in composition_problems(stage)]
    findings.extend(_Checker(stage).run())
    if usd_core:
        findings.extend(_usd_core_findings(stage))
    return findings
