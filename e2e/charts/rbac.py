"""What must be in the rendered chart, part 3: the zone-manager's ClusterRole (exactly what a
Kubernetes provider managing ramen-<group>-<zone> namespaces needs), its binding and
ServiceAccount, and the admission policy that holds those writes to the ramen-* namespaces."""

import json

from harness import NAMESPACE, RELEASE, Suite, expect

ALL = {"get", "list", "watch", "create", "update", "patch", "delete"}
WRITE = {"create", "update", "patch", "delete"}
READ = {"get", "list", "watch"}
# What the Kubernetes provider managing ramen-<group>-<zone> namespaces needs, and nothing more.
RULES = {
    ("", "namespaces"): ALL,
    ("", "services"): ALL,
    ("", "serviceaccounts"): ALL,
    # The zone's config Secrets are read back (what a track runs, the config last written) and
    # listed to prune old content-addressed ones; no watch.
    ("", "secrets"): WRITE | {"get", "list"},
    # Read to explain a stuck rollout; created and deleted for the environment builder pod.
    ("", "pods"): READ | {"create", "delete"},
    ("", "pods/log"): {"get"},
    ("", "events"): READ,
    ("apps", "deployments"): ALL,
    ("apps", "deployments/status"): {"get"},
    ("autoscaling", "horizontalpodautoscalers"): ALL,
    ("policy", "poddisruptionbudgets"): ALL,
    ("networking.k8s.io", "networkpolicies"): ALL,
}
ZM = f"{RELEASE}-zone-manager"
ROLE = f"{NAMESPACE}-{RELEASE}-zone-manager"


def run(suite: Suite, ctx) -> None:
    suite.check("zone-manager ClusterRole: exactly the provider's rules", rbac_rules, ctx)
    suite.check("zone-manager ClusterRoleBinding and ServiceAccount", rbac_binding, ctx)
    suite.check("admission policy holds every write to ramen-* (1.30+ only)", admission, ctx)
    suite.check(
        "zone-manager.rbac.extraRules reach the ClusterRole and the policy", rbac_extra, ctx
    )


def _rules(role: dict) -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        expect(not rule.get("resourceNames") and not rule.get("nonResourceURLs"), f"rule {rule}")
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                found.setdefault((group, resource), set()).update(rule["verbs"])
    return found


def rbac_rules(ctx) -> None:
    render = ctx.prod()
    expect(
        render.names("ClusterRole") == [ROLE],
        f"ClusterRoles {render.names('ClusterRole')}, want [{ROLE}]",
    )
    expect(
        not render.kinds("Role") and not render.kinds("RoleBinding"),
        f"Roles {render.names('Role')}",
    )
    found = _rules(render.get("ClusterRole", ROLE))
    diff = {
        k: sorted(found.get(k, set()) ^ RULES.get(k, set()))
        for k in set(found) | set(RULES)
        if found.get(k) != RULES.get(k)
    }
    expect(not diff, f"rules differ (resource: verbs granted xor wanted): {diff}")


def rbac_binding(ctx) -> None:
    render = ctx.prod()
    binding = render.get("ClusterRoleBinding", ROLE)
    expect(
        binding["roleRef"]
        == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
        f"roleRef {binding['roleRef']}",
    )
    expect(
        binding["subjects"] == [{"kind": "ServiceAccount", "name": ZM, "namespace": NAMESPACE}],
        f"subjects {binding['subjects']}",
    )
    expect(
        render.get("ServiceAccount", ZM).get("automountServiceAccountToken") is True,
        "zone-manager SA does not mount a token",
    )
    for deployment in render.kinds("Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        name = deployment["metadata"]["name"]
        expect(
            pod["serviceAccountName"] == name,
            f"{name}: serviceAccountName {pod['serviceAccountName']}",
        )
        expect(
            pod["automountServiceAccountToken"] is (name == ZM),
            f"{name}: automountServiceAccountToken {pod['automountServiceAccountToken']}",
        )


def _policy_resources(render) -> set[tuple[str, str]]:
    policy = render.get("ValidatingAdmissionPolicy", f"{ROLE}-namespaces")
    user = f"system:serviceaccount:{NAMESPACE}:{ZM}"
    expect(
        user in policy["spec"]["matchConditions"][0]["expression"],
        f"matchConditions {policy['spec']['matchConditions']}",
    )
    expect(
        "startsWith('ramen-')" in policy["spec"]["validations"][0]["expression"],
        f"validations {policy['spec']['validations']}",
    )
    binding = render.get("ValidatingAdmissionPolicyBinding", f"{ROLE}-namespaces")
    expect(
        binding["spec"] == {"policyName": f"{ROLE}-namespaces", "validationActions": ["Deny"]},
        f"binding {binding['spec']}",
    )
    return {
        (g, r)
        for rule in policy["spec"]["matchConstraints"]["resourceRules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }


def _written(render) -> set[tuple[str, str]]:
    return {
        k
        for k, verbs in _rules(render.get("ClusterRole", ROLE)).items()
        if verbs & WRITE or "*" in verbs
    }


def admission(ctx) -> None:
    expect(
        not ctx.prod(ctx.low).kinds("ValidatingAdmissionPolicy"), f"policy rendered on {ctx.low}"
    )
    render = ctx.prod(ctx.high)
    missing = _written(render) - _policy_resources(render)
    expect(not missing, f"writes the policy does not hold: {sorted(missing)}")


def rbac_extra(ctx) -> None:
    rule = json.dumps(
        [
            {
                "apiGroups": ["gateway.networking.k8s.io"],
                "resources": ["httproutes"],
                "verbs": ["get", "create", "update", "delete"],
            }
        ]
    )
    render = ctx.render(
        "rbac-extra",
        ("values-prod.yaml",),
        (("--set-json", f"zone-manager.rbac.extraRules={rule}"),),
    )
    key = ("gateway.networking.k8s.io", "httproutes")
    expect(key in _rules(render.get("ClusterRole", ROLE)), "extra rule not in the ClusterRole")
    expect(key in _policy_resources(render), "extra rule's writes not held by the policy")
